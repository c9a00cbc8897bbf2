import type { StoreAdapter } from './port.ts';
import { PostgresStore } from './postgres/index.ts';
import type { StoreSettings } from './settings.ts';
import { SqliteStore } from './sqlite/index.ts';

export { planThreads, storeSettings, type PostgresSettings, type StoreSettings, type ThreadPlan } from './settings.ts';

/** Opens the adapter the settings name. */
export function openStore(settings: StoreSettings): StoreAdapter {
  if (settings.type === 'sqlite') return new SqliteStore(settings.sqlitePath);
  if (settings.postgresql === undefined) throw new Error('AUTH_POSTGRESQL_URL is required when AUTH_DATABASE_TYPE=postgresql');
  return new PostgresStore(settings.postgresql);
}
