import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL server benchmarks create their databases on (the tests' one). */
export const ADMIN_URL = process.env.AUTH_TEST_POSTGRESQL_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** Runs `fn` with a connection to `url`, closed after. */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
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
