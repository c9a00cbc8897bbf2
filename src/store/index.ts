import type { Store } from './port.ts';
import { SqliteStore } from './sqlite/index.ts';

/** Which database a process opens; plain data, so it can be handed to a pool thread. */
export interface StoreSettings {
  readonly type: 'sqlite' | 'postgresql';
  readonly sqlitePath: string;
}

/** Opens the adapter the settings name. */
export function openStore(settings: StoreSettings): Store {
  if (settings.type === 'sqlite') return new SqliteStore(settings.sqlitePath);
  throw new Error(`no store adapter for AUTH_DATABASE_TYPE=${settings.type}`);
}
