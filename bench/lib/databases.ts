import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { TenantId } from '../../src/authz/tenant.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';

/** The PostgreSQL server benchmarks create their databases on (the tests' one). */
export const ADMIN_URL = process.env.AUTH_TEST_POSTGRESQL_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** Runs `fn` with a connection to `url`, closed after. */
async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database for one run; `drop` removes it. */
export async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `rbac_bench_${randomBytes(6).toString('hex')}`;
  await withClient(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => withClient(ADMIN_URL, async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))) };
}

/** The tenant's rows of a SQLite database, inserted into a migrated, empty PostgreSQL one in one transaction. */
export async function copyTenant(sqlitePath: string, url: string, tenant: TenantId): Promise<void> {
  const db = new Database(sqlitePath, { readonly: true });
  const client = prepared(db, 'SELECT id, revision FROM clients WHERE hash = ?').get(tenant) as { id: number; revision: number };
  const columns = (sql: string): [string[], string[]] => {
    const rows = prepared(db, sql).raw().all(client.id) as Array<[string, string]>;
    return [rows.map((r) => r[0]), rows.map((r) => r[1])];
  };
  const roles = columns('SELECT role, description FROM roles WHERE client_id = ?');
  const grants = columns('SELECT role, permission FROM grants WHERE client_id = ?');
  const members = columns('SELECT role, user FROM memberships WHERE client_id = ?');
  db.close();
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    const id = (await c.query<{ id: string }>('INSERT INTO clients (hash, revision) VALUES ($1, $2) RETURNING id', [tenant, client.revision])).rows[0]?.id;
    await c.query(`INSERT INTO roles (client_id, role, description) SELECT $1, r, convert_to(d, 'UTF8') FROM unnest($2::text[], $3::text[]) AS x(r, d)`, [
      id,
      ...roles,
    ]);
    await c.query('INSERT INTO grants (client_id, role, permission) SELECT $1, r, p FROM unnest($2::text[], $3::text[]) AS x(r, p)', [id, ...grants]);
    await c.query('INSERT INTO memberships (client_id, role, "user") SELECT $1, r, u FROM unnest($2::text[], $3::text[]) AS x(r, u)', [id, ...members]);
    await c.query('COMMIT');
    // The run's join plans on these statistics: without them a copy looks empty to the planner.
    for (const t of ['clients', 'roles', 'grants', 'memberships']) await c.query(`ANALYZE ${t}`);
  });
}
