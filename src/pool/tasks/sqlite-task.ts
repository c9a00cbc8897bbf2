// The pool thread's task on SQLite: better-sqlite3 only.
import type { SqliteStoreSettings } from '../../store/settings.ts';
import { SqliteStore } from '../../store/sqlite/index.ts';
import { storeTask } from './store-task.ts';

export const runStoreTask = storeTask<SqliteStoreSettings>((settings) => new SqliteStore(settings.sqlitePath));
