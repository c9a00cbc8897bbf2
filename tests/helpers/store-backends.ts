/**
 * The databases the store conformance suite runs against: each hands out fresh, empty databases
 * as StoreSettings (so stores are opened exactly as the service opens them) and can read what the
 * port does not show (the recorded migrations).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Change, WriteOutcome } from '../../src/authz/changes.ts';
import type { TenantId } from '../../src/authz/tenant.ts';
import { fromWire } from '../../src/errors/index.ts';
import type { StoreSettings } from '../../src/store/index.ts';
import type { Store } from '../../src/store/port.ts';
import { createTestDatabase, postgresSkipReason, type TestDatabase } from './postgres.ts';
import { tempDir } from './server.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';

export interface StoreBackend {
  readonly name: 'sqlite' | 'postgresql';
  /** Why the backend cannot run here; false when it can. */
  skip(): Promise<string | false>;
  /** Settings of a new, empty database. */
  fresh(): Promise<StoreSettings>;
  /** Versions recorded in `schema_migrations`, ascending. */
  versions(settings: StoreSettings): Promise<number[]>;
  /** Removes every database this backend handed out. */
  cleanup(): Promise<void>;
}

export function sqliteBackend(): StoreBackend {
  const dir = tempDir('rbac-conformance-');
  let n = 0;
  return {
    name: 'sqlite',
    skip: async () => false,
    fresh: async () => ({ type: 'sqlite', sqlitePath: join(dir.dir, `db${++n}`, 'rbac.sqlite3') }),
    async versions(settings) {
      const db = new Database(sqlitePathOf(settings), { readonly: true });
      try {
        return (prepared(db, 'SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[]).map(Number);
      } finally {
        db.close();
      }
    },
    cleanup: async () => dir.cleanup(),
  };
}

export function postgresBackend(): StoreBackend {
  const made: TestDatabase[] = [];
  return {
    name: 'postgresql',
    skip: postgresSkipReason,
    async fresh() {
      const db = await createTestDatabase();
      made.push(db);
      return {
        type: 'postgresql',
        postgresql: { url: db.url, poolMax: 4, connectTimeoutMs: 3000, statementTimeoutMs: 10_000 },
      };
    },
    async versions(settings) {
      const c = new pg.Client({ connectionString: postgresUrlOf(settings) });
      await c.connect();
      try {
        return (await c.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => Number(r.version));
      } finally {
        await c.end();
      }
    },
    cleanup: async () => void (await Promise.all(made.map((db) => db.drop()))),
  };
}

/** The file of SQLite settings ('' for PostgreSQL's). */
export const sqlitePathOf = (s: StoreSettings): string => (s.type === 'sqlite' ? s.sqlitePath : '');
/** The URL of PostgreSQL settings ('' for SQLite's). */
export const postgresUrlOf = (s: StoreSettings): string => (s.type === 'postgresql' ? s.postgresql.url : '');

/** One write through the port (a batch of one); its failure is thrown as the error it crossed as. */
export async function writeOne(store: Store, tenant: TenantId, change: Change): Promise<WriteOutcome> {
  const [settled] = await store.writeMany([{ tenant, changes: [change] }]);
  if (settled === undefined) throw new Error('writeMany settled no write');
  if (!settled.ok) throw fromWire(settled.error);
  return settled.value;
}

/** Every cell of every table (but the migrations' own names) as text: bytea read as UTF-8. */
export async function rawCells(backend: StoreBackend, settings: StoreSettings): Promise<Map<string, string[]>> {
  const cells = new Map<string, string[]>();
  const text = (v: unknown): string => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));
  if (backend.name === 'sqlite') {
    const db = new Database(sqlitePathOf(settings), { readonly: true });
    try {
      const tables = prepared(db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('schema_migrations', 'sqlite_sequence')`)
        .pluck()
        .all() as string[];
      for (const name of tables) cells.set(name, (prepared(db, `SELECT * FROM "${name}"`).raw().all() as unknown[][]).flat().map(text));
    } finally {
      db.close();
    }
    return cells;
  }
  const c = new pg.Client({ connectionString: postgresUrlOf(settings) });
  await c.connect();
  try {
    const { rows } = await c.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`,
    );
    for (const { name } of rows) {
      const res = await c.query({ text: `SELECT * FROM "${name}"`, rowMode: 'array' });
      cells.set(name, (res.rows as unknown[][]).flat().map(text));
    }
  } finally {
    await c.end();
  }
  return cells;
}
