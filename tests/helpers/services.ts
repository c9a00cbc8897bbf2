/**
 * External services of the tests (Redis, PostgreSQL, the redis-server binary). Missing ones skip
 * the test with a printed reason, unless AUTH_TEST_REQUIRE_SERVICES=1 (CI), where they fail it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { freshPostgresDatabase, requirePostgres } from './postgres.ts';

interface TestLike {
  skip(message?: string): void;
  diagnostic(message: string): void;
  after(fn: () => Promise<void>): void;
}

function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('connect', () => done(true));
    socket.on('error', () => done(false));
  });
}

/**
 * Whether `target` (a URL to connect to, or the name of a program on PATH) is there. When it is
 * not: fails under AUTH_TEST_REQUIRE_SERVICES=1, else skips the test saying why.
 */
export async function requireService(t: TestLike, name: string, target: string): Promise<boolean> {
  const ok = target.includes('://') ? await reachable(target) : spawnSync('sh', ['-c', `command -v ${target}`], { stdio: 'ignore' }).status === 0;
  if (ok) return true;
  const reason = `${name} is not available at ${target}`;
  if (process.env.AUTH_TEST_REQUIRE_SERVICES === '1') assert.fail(`${reason} (AUTH_TEST_REQUIRE_SERVICES=1)`);
  console.log(`skipped: ${reason}`);
  t.skip(reason);
  return false;
}

/** Settings that point several instances at one database, removed after the test. */
export interface SharedDatabase {
  readonly env: Record<string, string>;
}

/**
 * One fresh PostgreSQL database that every instance of the test opens (dropped afterwards), or
 * undefined when PostgreSQL is missing and the test was skipped.
 */
export async function sharedDatabase(t: TestLike): Promise<SharedDatabase | undefined> {
  if (!(await requirePostgres(t))) return undefined;
  const db = await freshPostgresDatabase(t);
  return { env: { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url } };
}
