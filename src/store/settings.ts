import type { Config } from '../config/index.ts';

/**
 * Which database a process opens and how; plain data, so it can be handed to a pool thread.
 * Kept apart from the adapters so that choosing settings loads no driver. A union by `type`:
 * PostgreSQL settings always carry their connection settings.
 */
export type StoreSettings = (SqliteStoreSettings | PostgresStoreSettings) & CommonStoreSettings;

export interface SqliteStoreSettings {
  readonly type: 'sqlite';
  readonly sqlitePath: string;
}

export interface PostgresStoreSettings {
  readonly type: 'postgresql';
  readonly postgresql: PostgresSettings;
}

/** What every store takes, whichever the database. */
export interface CommonStoreSettings {
  /** AUTH_ENCRYPTION_KEY when field encryption is on (docs/operations.md §7). */
  readonly encryptionKey?: string;
  /**
   * Background work (the workflow scheduler's runs): its threads run at a lower CPU priority, so
   * that on a busy machine the HTTP workers' checks get the CPU first.
   */
  readonly background?: boolean;
}

export interface PostgresSettings {
  /** `postgresql://user:pass@host:port/db`. */
  readonly url: string;
  /** Connections one store (one pool thread) may hold at once; see {@link planThreads}. */
  readonly poolMax: number;
  /** Opening a connection, or waiting for a free one, fails after this. */
  readonly connectTimeoutMs: number;
  /** Server-side statement_timeout (lock waits included); the driver gives up 1 s later. */
  readonly statementTimeoutMs: number;
}

/** The store settings of a process, from its configuration. */
export function storeSettings(config: Config): StoreSettings {
  const key = config.AUTH_ENABLE_ENCRYPTION ? config.AUTH_ENCRYPTION_KEY : undefined;
  const encryption = key === undefined ? {} : { encryptionKey: key };
  if (config.AUTH_DATABASE_TYPE === 'sqlite') return { type: 'sqlite', sqlitePath: config.AUTH_SQLITE_PATH, ...encryption };
  return {
    type: 'postgresql',
    ...encryption,
    postgresql: {
      url: config.AUTH_POSTGRESQL_URL,
      poolMax: config.AUTH_POSTGRESQL_POOL_MAX,
      connectTimeoutMs: config.AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS,
    },
  };
}

/** How a process's store is spread over its pool threads. */
export interface ThreadPlan {
  /** Settings each thread opens its store with. */
  readonly settings: StoreSettings;
  readonly threads: number;
  /** Tasks one thread runs at once. */
  readonly concurrency: number;
}

/**
 * Splits a process's store over at most `threads` pool threads. SQLite is synchronous: one task
 * per thread. PostgreSQL: AUTH_POSTGRESQL_POOL_MAX is the process's connection budget; each
 * thread gets an equal share (at least one connection, so never more threads than connections)
 * and runs as many tasks at once as it has connections, so the process never holds more than
 * the budget and every connection can be busy. Example: 10 connections over 2 threads are 2
 * pools of 5; 3 over 2 are 2 pools of 1 (the odd one is not used); 1 over 2 is 1 thread.
 */
export function planThreads(settings: StoreSettings, threads: number): ThreadPlan {
  if (settings.type !== 'postgresql') return { settings, threads, concurrency: 1 };
  const pg = settings.postgresql;
  const used = Math.max(1, Math.min(threads, pg.poolMax));
  const share = Math.max(1, Math.floor(pg.poolMax / used));
  return { settings: { ...settings, postgresql: { ...pg, poolMax: share } }, threads: used, concurrency: share };
}
