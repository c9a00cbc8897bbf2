/**
 * External services of the tests (Redis, PostgreSQL, the redis-server binary). Missing ones skip
 * the test with a printed reason, unless AUTH_TEST_REQUIRE_SERVICES=1 (CI), where they fail it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';

interface TestLike {
  skip(message?: string): void;
}

const printed = new Set<string>();

/**
 * The one rule for a missing service: `reason` undefined means it is there (false). Otherwise
 * throws under AUTH_TEST_REQUIRE_SERVICES=1, else prints the reason once and returns it.
 */
export function serviceMissing(reason: string | undefined): string | false {
  if (reason === undefined) return false;
  if (process.env.AUTH_TEST_REQUIRE_SERVICES === '1') assert.fail(`${reason} (AUTH_TEST_REQUIRE_SERVICES=1)`);
  if (!printed.has(reason)) console.log(`skipped: ${reason}`);
  printed.add(reason);
  return reason;
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
  const missing = serviceMissing(ok ? undefined : `${name} is not available at ${target}`);
  if (missing === false) return true;
  t.skip(missing);
  return false;
}
