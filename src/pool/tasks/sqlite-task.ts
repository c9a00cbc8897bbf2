// The pool thread's task on SQLite: better-sqlite3 only.
import { SqliteStore } from '../../store/sqlite/index.ts';
import { storeTask } from './store-task.ts';

export default storeTask((settings) => new SqliteStore(settings.sqlitePath));
