import type { Maintenance } from './maintenance.ts';
import type { Store } from './port.ts';
import { PostgresStore } from './postgres/index.ts';
import { PostgresMaintenance } from './postgres/maintenance.ts';
import type { StoreSettings } from './settings.ts';
export { MaintenanceError, NO_PROGRESS, type BackupReport, type Maintenance, type Progress, type RekeyReport, type RestoreReport } from './maintenance.ts';
import { SqliteStore } from './sqlite/index.ts';
import { SqliteMaintenance } from './sqlite/maintenance.ts';

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

/**
 * The factory of whole-database maintenance (backup, restore, re-keying) for the command line:
 * the adapter of the database the settings name, opened on demand by each operation.
 */
export function openMaintenance(settings: StoreSettings): Maintenance {
  if (settings.type === 'sqlite') return new SqliteMaintenance(settings.sqlitePath);
  return new PostgresMaintenance(settings.postgresql.url);
}
