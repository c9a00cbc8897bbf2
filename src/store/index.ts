import type { Store } from './port.ts';
import { PostgresStore } from './postgres/index.ts';
import type { StoreSettings } from './settings.ts';
import { SqliteStore } from './sqlite/index.ts';

export {
  planThreads,
  storeSettings,
  type PostgresSettings,
  type PostgresStoreSettings,
  type SqliteStoreSettings,
  type StoreSettings,
  type ThreadPlan,
} from './settings.ts';

/**
 * The store factory: opens the adapter the settings name. It loads both drivers, so it is for a
 * process that opens a store itself (the tests, tools). The service opens its store in the pool's
 * threads instead, where the factory is the task file the pool picks from the same settings
 * (pool/tasks/sqlite-task.ts, postgres-task.ts: one adapter each, so a thread loads one driver);
 * the worker (the composition root) chooses by handing the settings to the pool.
 */
export function openStore(settings: StoreSettings): Store {
  if (settings.type === 'sqlite') return new SqliteStore(settings.sqlitePath);
  return new PostgresStore(settings.postgresql);
}
