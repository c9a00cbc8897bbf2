/**
 * Filling the databases of `npm run bench:workflows` before any gateway starts. Over HTTP the
 * ~140,000 writes would take minutes; through the store port (`openStore(...).writeMany`, the
 * adapter the pool threads run) in batches they take seconds on SQLite. PostgreSQL takes one
 * tenant's writes one transaction at a time (its row lock), far too slow for the run's budget, so
 * its database (migrated by the adapter) gets the rows of the seeded SQLite file, copied table by
 * table, as bench/encryption.ts does.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Change } from '../src/authz/changes.ts';
import type { TenantId } from '../src/authz/tenant.ts';
import { openStore } from '../src/store/index.ts';
import { ADMIN_URL, freshDatabase, withClient } from './databases.ts';

const BATCH = 2_000;

/** Writes `changes` to a new SQLite file through the store port; seconds taken. Every write must commit at the next revision. */
export async function seedSqlite(path: string, tenant: TenantId, changes: readonly Change[]): Promise<number> {
  const store = openStore({ type: 'sqlite', sqlitePath: path });
  const started = performance.now();
  try {
    for (let i = 0; i < changes.length; i += BATCH) {
      const settled = await store.writeMany(changes.slice(i, i + BATCH).map((change) => ({ tenant, change })));
      settled.forEach((s, j) => {
        if (!s.ok || !s.value.ok) throw new Error(`seed write ${i + j} did not commit: ${JSON.stringify(s)}`);
        if (s.value.revision !== i + j + 1) throw new Error(`seed write ${i + j} committed at revision ${s.value.revision}`);
      });
    }
  } finally {
    await store.close();
  }
  return (performance.now() - started) / 1000;
}

/** Why PostgreSQL is left out (PG=0, or it does not answer), or undefined when it answers. */
export async function postgresMissing(): Promise<string | undefined> {
  if (process.env.PG === '0') return 'PG=0';
  const c = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1');
    return undefined;
  } catch (err) {
    return `not reachable at ${new URL(ADMIN_URL).host} (${err instanceof Error ? err.message : String(err)})`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** A fresh PostgreSQL database holding the tenant of `sqlitePath`; seconds taken, and `drop`. */
export async function postgresCopy(sqlitePath: string, tenant: TenantId): Promise<{ url: string; seconds: number; drop(): Promise<void> }> {
  const started = performance.now();
  const db = await freshDatabase();
  try {
    const adapter = openStore({ type: 'postgresql', sqlitePath: '', postgresql: { url: db.url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs: 60_000 } });
    try {
      await adapter.cursorSecret(); // migrates
    } finally {
      await adapter.close();
    }
    await copyTenant(sqlitePath, db.url, tenant);
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
  return { url: db.url, seconds: (performance.now() - started) / 1000, drop: db.drop };
}

/** The tenant's rows of a SQLite database, inserted into a migrated, empty PostgreSQL one in one transaction. */
async function copyTenant(sqlitePath: string, url: string, tenant: TenantId): Promise<void> {
  const db = new Database(sqlitePath, { readonly: true });
  const client = db.prepare('SELECT id, revision FROM clients WHERE hash = ?').get(tenant) as { id: number; revision: number };
  const columns = (sql: string): [string[], string[]] => {
    const rows = db.prepare(sql).raw().all(client.id) as Array<[string, string]>;
    return [rows.map((r) => r[0]), rows.map((r) => r[1])];
  };
  const roles = columns('SELECT role, description FROM roles WHERE client_id = ?');
  const grants = columns('SELECT role, permission FROM grants WHERE client_id = ?');
  const members = columns('SELECT role, user FROM memberships WHERE client_id = ?');
  db.close();
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    const id = (await c.query<{ id: string }>('INSERT INTO clients (hash, revision) VALUES ($1, $2) RETURNING id', [tenant, client.revision])).rows[0]?.id;
    await c.query(`INSERT INTO roles (client_id, role, description) SELECT $1, r, convert_to(d, 'UTF8') FROM unnest($2::text[], $3::text[]) AS x(r, d)`, [id, ...roles]);
    await c.query('INSERT INTO grants (client_id, role, permission) SELECT $1, r, p FROM unnest($2::text[], $3::text[]) AS x(r, p)', [id, ...grants]);
    await c.query('INSERT INTO memberships (client_id, role, "user") SELECT $1, r, u FROM unnest($2::text[], $3::text[]) AS x(r, u)', [id, ...members]);
    await c.query('COMMIT');
    // The run's join plans on these statistics: without them a copy looks empty to the planner.
    for (const t of ['clients', 'roles', 'grants', 'memberships']) await c.query(`ANALYZE ${t}`);
  });
}
