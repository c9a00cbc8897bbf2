// The pool thread's task on PostgreSQL: pg only.
import { PostgresStore } from '../../store/postgres/index.ts';
import type { PostgresStoreSettings } from '../../store/settings.ts';
import { storeTask } from './store-task.ts';

export const runStoreTask = storeTask<PostgresStoreSettings>((settings) => new PostgresStore(settings.postgresql));
