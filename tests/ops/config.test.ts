/**
 * Start-up configuration (docs/operations.md §1): a bad value stops start-up with exit code 2 and one line
 * naming the variable; defaults create the SQLite file and its folder; a taken port is an error,
 * not a hang.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { freePort, runToExit, startServer, tempDir } from '../helpers/server.ts';

interface BadCase {
  /** The settings that are wrong (merged over a sane base). */
  env: Record<string, string>;
  /** The variable the message must name. */
  names: string;
  /** Text the message must also contain (the offending value), when there is one. */
  value?: string;
  /** A secret the message must never show. */
  secret?: string;
}

const BAD: readonly BadCase[] = [
  { env: { AUTH_SERVER_PORT: 'abc' }, names: 'AUTH_SERVER_PORT', value: 'abc' },
  { env: { AUTH_SERVER_PORT: '70000' }, names: 'AUTH_SERVER_PORT', value: '70000' },
  { env: { AUTH_DATABASE_TYPE: 'mysql' }, names: 'AUTH_DATABASE_TYPE', value: 'mysql' },
  { env: { AUTH_CACHE_MAX_MB: '0' }, names: 'AUTH_CACHE_MAX_MB', value: '0' },
  { env: { AUTH_CACHE_MAX_MB: '-5' }, names: 'AUTH_CACHE_MAX_MB', value: '-5' },
  { env: { AUTH_MAX_BODY_BYTES: 'abc' }, names: 'AUTH_MAX_BODY_BYTES', value: 'abc' },
  { env: { AUTH_LOG_LEVEL: 'loud' }, names: 'AUTH_LOG_LEVEL', value: 'loud' },
  { env: { AUTH_ENABLE_ENCRYPTION: 'true' }, names: 'AUTH_ENCRYPTION_KEY' },
  { env: { AUTH_DATABASE_TYPE: 'postgresql' }, names: 'AUTH_POSTGRESQL_URL' },
  { env: { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: 'mysql://h/db' }, names: 'AUTH_POSTGRESQL_URL', value: 'mysql://h/db' },
  { env: { AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS: 'soon' }, names: 'AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS', value: 'soon' },
  { env: { AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS: '0' }, names: 'AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS', value: '0' },
  { env: { AUTH_WORKERS: '0' }, names: 'AUTH_WORKERS', value: '0' },
  { env: { AUTH_ALLOW_CORS: 'maybe' }, names: 'AUTH_ALLOW_CORS', value: 'maybe' },
  { env: { AUTH_HTTP_ENGINE: 'express' }, names: 'AUTH_HTTP_ENGINE', value: 'express' },
  { env: { AUTH_JWT_SECRET_KEY: 'short-secret-xyz' }, names: 'AUTH_JWT_SECRET_KEY', secret: 'short-secret-xyz' },
  // 31 bytes: one short of HS256's minimum.
  { env: { AUTH_JWT_SECRET_KEY: 'x'.repeat(31) }, names: 'AUTH_JWT_SECRET_KEY', secret: 'x'.repeat(31) },
  { env: { AUTH_AUDIT_RETENTION_DAYS: '-1' }, names: 'AUTH_AUDIT_RETENTION_DAYS', value: '-1' },
  { env: { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: 'mysql://u:pw-in-url-123@h/db' }, names: 'AUTH_POSTGRESQL_URL', secret: 'pw-in-url-123' },
  // A malformed allow-list would refuse every webhook in silence: it stops start-up instead.
  { env: { AUTH_WEBHOOK_ALLOWED_HOSTS: 'https://hooks.example.com' }, names: 'AUTH_WEBHOOK_ALLOWED_HOSTS', value: 'https://hooks.example.com' },
  { env: { AUTH_WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com:99999' }, names: 'AUTH_WEBHOOK_ALLOWED_HOSTS', value: 'hooks.example.com:99999' },
  { env: { AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '0' }, names: 'AUTH_WORKFLOW_MIN_INTERVAL_SECONDS', value: '0' },
];

/** Output lines that are the service's own (Node's own warnings aside). */
function ownLines(output: string): string[] {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !/^\(node:\d+\) /.test(l) && !l.startsWith('(Use `node --trace-'));
}

/** Runs `items` through `fn`, at most `width` at a time. */
async function limited<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        try {
          await fn(item);
        } catch (err) {
          errors.push(err);
        }
      }
    }),
  );
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) {
    throw new Error(`${errors.length} cases failed:\n\n${errors.map((e) => (e instanceof Error ? e.message : String(e))).join('\n\n')}`);
  }
}

test('each bad setting stops start-up with exit code 2 and one line naming the variable', async () => {
  const tmp = tempDir('rbac-config-');
  try {
    await limited(BAD, 3, async (bad) => {
      const shown = Object.entries(bad.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      const folder = join(tmp.dir, shown.replace(/[^A-Za-z0-9]+/g, '_'));
      const env: Record<string, string> = {
        AUTH_SERVER_HOST: '127.0.0.1',
        AUTH_SERVER_PORT: String(await freePort()),
        AUTH_SQLITE_PATH: join(folder, 'nested', 'rbac.sqlite3'),
        AUTH_WORKERS: '1',
        AUTH_LOG_LEVEL: 'info',
        ...bad.env,
      };
      const { code, output } = await runToExit(env, 12_000);
      const lines = ownLines(output);
      const context = `${shown}: exit code ${code}, output:\n${output.slice(0, 1500)}`;
      assert.equal(code, 2, context);
      assert.ok(output.includes(bad.names), `${context}\n(should name ${bad.names})`);
      if (bad.value !== undefined) assert.ok(output.includes(bad.value), `${context}\n(should show the value ${bad.value})`);
      if (bad.secret !== undefined) assert.ok(!output.includes(bad.secret), `${context}\n(shows a secret)`);
      assert.equal(lines.length, 1, `${context}\n(should be exactly one line)`);
      assert.ok(!/^\s*at .+:\d+:\d+\)?$/m.test(output), `${context}\n(no stack trace)`);
      // Nothing starts half-configured: no database file or folder was created.
      assert.ok(!existsSync(folder), `${context}\n(the SQLite folder was created although start-up failed)`);
    });
  } finally {
    tmp.cleanup();
  }
});

test('defaults: the SQLite file and its missing folders are created on first start', async () => {
  const tmp = tempDir('rbac-config-');
  const sqlitePath = join(tmp.dir, 'does', 'not', 'exist', 'yet', 'rbac.sqlite3');
  assert.ok(!existsSync(join(tmp.dir, 'does')));
  const server = await startServer({ sqlitePath });
  try {
    assert.ok(existsSync(sqlitePath), 'the SQLite file exists once the service listens');
    assert.ok(statSync(join(tmp.dir, 'does', 'not', 'exist', 'yet')).isDirectory());
    const ping = await server.client().ping();
    assert.equal(ping.status, 200);
    // It is the file in use: a write survives a restart on it.
    const c = server.client();
    const created = await c.createRole('config-check', { description: 'kept' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(await server.stop(), 0);
    const again = await startServer({ sqlitePath });
    try {
      const roles = await again.client(c.key).listRoles();
      assert.deepEqual(roles.data, [{ role: 'config-check', description: 'kept' }]);
    } finally {
      await again.stop();
    }
  } finally {
    await server.kill();
    tmp.cleanup();
  }
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer((sock) => sock.destroy());
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

test('a port taken by another listener: the service exits non-zero naming the port, it does not hang', async () => {
  const tmp = tempDir('rbac-config-');
  const port = await freePort();
  const blocker = await listen(port);
  try {
    const started = Date.now();
    const { code, output } = await runToExit(
      {
        AUTH_SERVER_HOST: '127.0.0.1',
        AUTH_SERVER_PORT: String(port),
        AUTH_SQLITE_PATH: join(tmp.dir, 'rbac.sqlite3'),
        AUTH_WORKERS: '1',
      },
      12_000,
    );
    const context = `exit code ${code} after ${Date.now() - started} ms, output:\n${output.slice(0, 2000)}`;
    assert.notEqual(code, null, `the service hung (killed after 12 s); ${context}`);
    assert.notEqual(code, 0, context);
    assert.ok(output.includes(String(port)), `${context}\n(should name port ${port})`);
  } finally {
    await new Promise((r) => blocker.close(r));
    tmp.cleanup();
  }
});

test('a port taken by another instance of the service: the second one exits non-zero, it does not share the port', async () => {
  const tmp = tempDir('rbac-config-');
  const first = await startServer({ sqlitePath: join(tmp.dir, 'first.sqlite3') });
  try {
    const { code, output } = await runToExit(
      {
        AUTH_SERVER_HOST: '127.0.0.1',
        AUTH_SERVER_PORT: String(first.port),
        AUTH_SQLITE_PATH: join(tmp.dir, 'second.sqlite3'),
        AUTH_WORKERS: '1',
      },
      8_000,
    );
    const context = `exit code ${code}, output:\n${output.slice(0, 2000)}`;
    assert.notEqual(code, null, `the second instance kept running on a taken port (killed after 8 s); ${context}`);
    assert.notEqual(code, 0, context);
    assert.ok(output.includes(String(first.port)), `${context}\n(should name port ${first.port})`);
    // The first instance still serves.
    assert.equal((await first.client().ping()).status, 200);
  } finally {
    await first.stop();
    tmp.cleanup();
  }
});
