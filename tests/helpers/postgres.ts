/**
 * Throwaway PostgreSQL databases for tests: `CREATE DATABASE rbac_test_<time>_<random>` on the
 * server of AUTH_TEST_POSTGRESQL_URL (default postgresql://postgres@127.0.0.1:5432/test), dropped
 * afterwards. Databases left behind by a killed run are dropped by a later run once an hour old.
 * When the server cannot be reached, PostgreSQL tests skip with a printed reason, unless
 * AUTH_TEST_REQUIRE_SERVICES=1 (CI), where they fail.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { serviceMissing } from './services.ts';
import { sleep } from './wait.ts';

export const POSTGRES_ADMIN_URL = process.env.AUTH_TEST_POSTGRESQL_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

const PREFIX = 'rbac_test_';
const STALE_MS = 60 * 60 * 1000;

export interface TestDatabase {
  readonly name: string;
  /** Connection URL of the new database. */
  readonly url: string;
  /** Drops it (closing any connection still open to it). Safe to call twice. */
  drop(): Promise<void>;
}

/** Runs `fn` on a short-lived admin connection to the server's maintenance database. */
async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

let reachability: Promise<string | undefined> | undefined;

/** Undefined when the server answers, else why not (asked once per process). */
export function postgresUnavailable(): Promise<string | undefined> {
  reachability ??= withAdmin((c) => c.query('SELECT 1')).then(
    () => undefined,
    (err: unknown) => `PostgreSQL is not available at ${POSTGRES_ADMIN_URL} (${err instanceof Error ? err.message || err.name : String(err)})`,
  );
  return reachability;
}

interface TestLike {
  skip(message?: string): void;
}

/** Why PostgreSQL tests cannot run, printed once (false: they can). Throws under AUTH_TEST_REQUIRE_SERVICES=1. */
export async function postgresSkipReason(): Promise<string | false> {
  return serviceMissing(await postgresUnavailable());
}

/**
 * Whether PostgreSQL tests can run. When they cannot: fails under AUTH_TEST_REQUIRE_SERVICES=1,
 * else marks `t` skipped and prints the reason.
 */
export async function requirePostgres(t: TestLike): Promise<boolean> {
  const missing = await postgresSkipReason();
  if (missing === false) return true;
  t.skip(missing);
  return false;
}

let sweep: Promise<void> | undefined;

/** Drops test databases that a killed run left behind (older than an hour, by their name). */
function sweepStale(c: pg.Client): Promise<void> {
  sweep ??= (async () => {
    const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${PREFIX}%`]);
    for (const { datname } of rows) {
      const born = parseInt(datname.slice(PREFIX.length).split('_')[0] ?? '', 36);
      if (Number.isFinite(born) && Date.now() - born > STALE_MS) {
        await c.query(`DROP DATABASE IF EXISTS "${datname.replace(/"/g, '""')}" WITH (FORCE)`).catch(() => undefined);
      }
    }
  })();
  return sweep;
}

/** A new, empty database on the test server. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${PREFIX}${Date.now().toString(36)}_${randomBytes(6).toString('hex')}`;
  await withAdmin(async (c) => {
    await sweepStale(c);
    for (let attempt = 1; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE ${name}`);
        return;
      } catch (err) {
        // 55006: another session is using the template at the same moment (parallel test files).
        if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
        await sleep(50 * attempt);
      }
    }
  });
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: url.toString(),
    drop: () => (dropped ??= withAdmin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))),
  };
}

/** A new, empty database dropped after the test `t` (its `after` hooks). */
export async function freshPostgresDatabase(t: { after(fn: () => Promise<void>): void }): Promise<TestDatabase> {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  return db;
}

/** Settings that point several instances at one database, removed after the test. */
export interface SharedDatabase {
  readonly env: Record<string, string>;
}

/**
 * One fresh PostgreSQL database that every instance of the test opens (dropped afterwards), or
 * undefined when PostgreSQL is missing and the test was skipped.
 */
export async function sharedDatabase(t: TestLike & { after(fn: () => Promise<void>): void }): Promise<SharedDatabase | undefined> {
  if (!(await requirePostgres(t))) return undefined;
  const db = await freshPostgresDatabase(t);
  return { env: { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url } };
}
