/**
 * Operations (docs/operations.md §1, docs/api.md §13): a graceful shutdown that keeps serving for
 * AUTH_SHUTDOWN_DELAY_MS while `/ready` says `draining`, whether the signal reaches the primary
 * alone or the whole process group; logs that are one JSON object a line, with a start-up line
 * holding the effective configuration (secrets redacted), the engine and the version; and the
 * sampled access log, which names routes by their id, never by a path with names in it.
 * (The database outage's `/ready` answers are in outage.test.ts, where the outage is caused.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.ts';
import { AccessLog, type AccessSeries } from '../../src/log/access.ts';
import type { Logger } from '../../src/log/index.ts';
import { entryArgs } from '../../support/launcher.ts';
import { answeredBy, rawRequest, RawError, type RawResult } from '../helpers/raw-http.ts';
import { outputSink, rememberEnvSecrets, rememberSecret } from '../helpers/leak-record.ts';
import { engineEnv, freePort, ROOT, runToExit, START_TIMEOUT_MS, tempDir } from '../helpers/server.ts';
import { sleep } from '../helpers/wait.ts';

interface Service {
  readonly port: number;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the primary is gone. */
  readonly exited: Promise<number | null>;
}

/**
 * The service (`src/main.ts`) on a free port with its own SQLite file, in a process group of its
 * own (so that a test can signal the whole group), stdout and stderr kept apart. Resolves once it
 * logged `listening`; killed with its group after the test.
 */
async function startService(t: { after(fn: () => unknown): void }, env: Record<string, string>): Promise<Service> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(t, env);
    } catch (err) {
      // freePort's pick may be taken by a test file running beside this one before the bind.
      if (attempt >= 3 || !(err instanceof Error) || !/EADDRINUSE/.test(err.message)) throw err;
    }
  }
}

async function startOnce(t: { after(fn: () => unknown): void }, extra: Record<string, string>): Promise<Service> {
  const port = await freePort();
  const tmp = tempDir('rbac-ops-');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_SQLITE_PATH: join(tmp.dir, 'rbac.sqlite3'),
    AUTH_WORKERS: '2',
    AUTH_METRICS_PORT: '0',
    AUTH_LOG_LEVEL: 'info',
    ...engineEnv(),
    ...extra,
  };
  rememberEnvSecrets(env);
  const proc = spawn(process.execPath, entryArgs(), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pid = proc.pid as number;
  const sink = outputSink('operations', port);
  let out = '';
  let err = '';
  proc.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    sink.write(c);
  });
  proc.stderr.on('data', (c: Buffer) => {
    err += c.toString();
    sink.write(c);
  });
  proc.on('close', () => sink.close());
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  t.after(async () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
    await exited;
    tmp.cleanup();
  });
  const started = Date.now();
  while (!/"event":"primary.listening"/.test(out)) {
    if (proc.exitCode !== null) throw new Error(`exited before listening (code ${proc.exitCode}):\n${out}${err}`);
    if (Date.now() - started > START_TIMEOUT_MS) throw new Error(`did not listen within ${START_TIMEOUT_MS} ms:\n${out}${err}`);
    await sleep(25);
  }
  return { port, pid, stdout: () => out, stderr: () => err, exited };
}

/** The service's stdout as parsed lines. */
function logLines(s: Service): Array<Record<string, unknown>> {
  return s
    .stdout()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

for (const target of ['primary', 'process group'] as const) {
  test(
    `SIGTERM to the ${target} with AUTH_SHUTDOWN_DELAY_MS=1500: /ready says draining at once on every worker, new connections are served through the delay, then refused; exit 0`,
    { timeout: 60_000 },
    async (t) => {
      const DELAY = 1500;
      const s = await startService(t, { AUTH_SHUTDOWN_DELAY_MS: String(DELAY) });
      const key = randomUUID();
      rememberSecret(key);
      const check = (): Promise<RawResult<{ has_permission: boolean }>> =>
        rawRequest({ port: s.port, key, path: '/api/has_permission/alice/read', timeoutMs: 3000 });
      // Both workers answer before the signal (each request on a new connection; the kernel spreads them).
      const workers = new Set<string>();
      for (let i = 0; i < 200 && workers.size < 2; i++) {
        const res = await rawRequest({ port: s.port, path: '/ready', timeoutMs: 3000 });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { status: 'ready' });
        workers.add(answeredBy(res));
      }
      assert.equal(workers.size, 2, 'both workers answered before the signal');

      const t0 = performance.now();
      process.kill(target === 'primary' ? s.pid : -s.pid, 'SIGTERM');
      const drainingSince = new Map<string, number>();
      let readyAfterDraining = 0;
      /** When the last `ready` answer came after the signal, if one did. */
      let lastReady: number | undefined;
      let served = 0;
      let lastServed = 0;
      // Through the delay (less a margin): every new connection is answered.
      while (performance.now() - t0 < DELAY - 250) {
        const ready = await rawRequest({ port: s.port, path: '/ready', timeoutMs: 3000 });
        const at = performance.now() - t0;
        const who = answeredBy(ready);
        if (ready.status === 503) {
          assert.deepEqual(ready.body, { status: 'draining' });
          if (!drainingSince.has(who)) drainingSince.set(who, at);
        } else {
          assert.equal(ready.status, 200, ready.text);
          lastReady = at;
          if (drainingSince.has(who)) readyAfterDraining++;
        }
        const res = await check();
        assert.equal(res.status, 200, `an /api request ${(performance.now() - t0).toFixed(0)} ms after the signal: HTTP ${res.status} ${res.text}`);
        assert.equal(res.data?.has_permission, false);
        served++;
        lastServed = performance.now() - t0;
      }
      t.diagnostic(
        `first draining answer of each worker after ${[...drainingSince.values()].map((ms) => ms.toFixed(0)).join(', ')} ms, the last ready one ${lastReady === undefined ? 'never' : `after ${lastReady.toFixed(0)} ms`}; ${served} requests served during the delay, the last ${lastServed.toFixed(0)} ms after the signal`,
      );
      assert.equal(readyAfterDraining, 0, 'once draining, a worker never answers ready again');
      assert.equal(drainingSince.size, 2, 'both workers answered draining');
      assert.ok(served >= 10, `served during the delay: ${served}`);

      // After the delay: new connections are refused, and the process exits 0.
      let refusedAt: number | undefined;
      while (refusedAt === undefined && performance.now() - t0 < DELAY + 5000) {
        try {
          await rawRequest({ port: s.port, path: '/ready', timeoutMs: 2000 });
        } catch (err) {
          // A connection the kernel queued just as its worker stopped accepting is reset, not served.
          if (!(err instanceof RawError) || (err.code !== 'ECONNREFUSED' && err.code !== 'ECONNRESET')) throw err;
          if (err.code === 'ECONNREFUSED') refusedAt = performance.now() - t0;
        }
        await sleep(10);
      }
      assert.ok(refusedAt !== undefined, 'new connections are refused after the delay');
      assert.ok(refusedAt >= DELAY, `refused only after the delay (at ${refusedAt.toFixed(0)} ms)`);
      const code = await s.exited;
      const exitedAt = performance.now() - t0;
      t.diagnostic(`refused ${refusedAt.toFixed(0)} ms after the signal; exited ${exitedAt.toFixed(0)} ms after it`);
      assert.equal(code, 0, s.stdout() + s.stderr());
      assert.ok(exitedAt >= DELAY && exitedAt < DELAY + 5000, `exited ${exitedAt.toFixed(0)} ms after the signal`);
      await assert.rejects(
        rawRequest({ port: s.port, path: '/ready', timeoutMs: 2000 }),
        (err: unknown) => err instanceof RawError && err.code === 'ECONNREFUSED',
      );
    },
  );
}

test(
  'every line the service writes is a JSON object with level, time and msg as pino writes them; the start-up line holds the configuration with secrets redacted, the engine and the version',
  { timeout: 60_000 },
  async (t) => {
    const jwtSecret = `jwt-${randomUUID()}-${randomUUID()}`;
    const encryptionKey = `enc-${randomUUID()}`;
    const s = await startService(t, {
      AUTH_LOG_LEVEL: 'debug',
      AUTH_JWT_SECRET_KEY: jwtSecret,
      AUTH_ENABLE_ENCRYPTION: 'true',
      AUTH_ENCRYPTION_KEY: encryptionKey,
    });
    const key = randomUUID();
    rememberSecret(key);
    const statuses: number[] = [];
    const call = async (method: string, path: string, k: string | undefined = key, body?: unknown): Promise<RawResult> => {
      const res = await rawRequest({ port: s.port, method, path, key: k, body, timeoutMs: 5000 });
      statuses.push(res.status);
      return res;
    };
    await call('POST', '/api/role/admins');
    await call('POST', '/api/membership/alice/admins');
    await call('GET', '/api/has_permission/alice/read');
    const token = await call('POST', '/api/token', key, { scope: 'read' });
    const minted = (token.data as { token?: string } | undefined)?.token;
    assert.ok(minted !== undefined, token.text);
    rememberSecret(minted, 'token');
    await call('GET', '/api/user_roles/alice', minted);
    await call('GET', '/api/role_permissions/nobody'); // 404
    await call('GET', '/api/role_permissions/bad%20name'); // 400
    await call('GET', '/api/roles', 'not-a-key'); // 401
    await call('PUT', '/api/roles'); // 405
    await call('GET', '/api/nothing-here'); // 404
    assert.deepEqual(statuses, [201, 201, 200, 201, 200, 404, 400, 401, 405, 404]);

    process.kill(s.pid, 'SIGTERM');
    assert.equal(await s.exited, 0, s.stdout() + s.stderr());

    assert.equal(s.stderr(), '', 'nothing on stderr in a run without errors');
    const raw = s.stdout().split('\n');
    assert.equal(raw.pop(), '', 'the output ends with a complete line');
    for (const line of raw) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`not a JSON line: ${line}`);
      }
      assert.ok(typeof entry === 'object' && entry !== null && !Array.isArray(entry), line);
      assert.ok([20, 30, 40, 50].includes(entry.level as number), `level (pino's numbers): ${line}`);
      assert.ok(Number.isSafeInteger(entry.time) && Math.abs((entry.time as number) - Date.now()) < 600_000, `time (epoch ms): ${line}`);
      assert.ok(typeof entry.hostname === 'string' && Number.isSafeInteger(entry.pid), `hostname and pid: ${line}`);
      assert.ok(typeof entry.msg === 'string' && entry.msg !== '', `msg: ${line}`);
    }
    const lines = logLines(s);
    const starting = lines.filter((l) => l.event === 'primary.starting');
    assert.equal(starting.length, 1, 'one start-up line');
    const start = starting[0] as Record<string, unknown>;
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(start.role, 'primary');
    assert.equal(start.version, pkg.version);
    assert.ok(start.engine === 'uws' || start.engine === 'node', `engine: ${String(start.engine)}`);
    const config = start.config as Record<string, unknown>;
    assert.equal(config.AUTH_JWT_SECRET_KEY, '[redacted]');
    assert.equal(config.AUTH_ENCRYPTION_KEY, '[redacted]');
    assert.equal(config.AUTH_ENABLE_ENCRYPTION, true);
    assert.equal(config.AUTH_WORKERS, 2);
    assert.equal(config.AUTH_SERVER_PORT, s.port);
    assert.equal(config.AUTH_SHUTDOWN_DELAY_MS, 0);
    const all = s.stdout() + s.stderr();
    for (const secret of [jwtSecret, encryptionKey, key, minted]) assert.ok(!all.includes(secret), 'no secret, key or token in the output');
    assert.ok(
      lines.some((l) => l.event === 'primary.listening'),
      'the listening line',
    );
    assert.equal(lines.filter((l) => l.event === 'worker.stopping').length, 2, 'each worker says it stops');
  },
);

/** The requests of the access-log test: names in paths that must never reach a log line. */
async function namedRequests(port: number, key: string): Promise<RawResult[]> {
  const send = (method: string, path: string): Promise<RawResult> =>
    rawRequest({ port, method, path, key, headers: { 'x-request-id': `req-${randomBytes(8).toString('hex')}` }, timeoutMs: 5000 });
  return [
    await send('POST', '/api/role/secret-role-name'),
    await send('POST', '/api/membership/carol.secret@example.com/secret-role-name'),
    await send('GET', '/api/has_permission/carol.secret@example.com/launch.secret'),
    await send('GET', '/api/role_permissions/missing-secret-role'),
    await send('GET', '/api/unknown-secret-path'),
    await send('GET', '/ready'),
  ];
}

test(
  'access log: with AUTH_ACCESS_LOG_SAMPLE=1 one line per /api answer naming the route id, method, status, duration and request id, never a path or a name; with 0 none',
  { timeout: 60_000 },
  async (t) => {
    const [on, off] = await Promise.all([startService(t, { AUTH_ACCESS_LOG_SAMPLE: '1', AUTH_WORKERS: '1' }), startService(t, { AUTH_WORKERS: '1' })]);
    const key = randomUUID();
    rememberSecret(key);
    const sent = await namedRequests(on.port, key);
    await namedRequests(off.port, key);
    assert.deepEqual(
      sent.map((r) => r.status),
      [201, 201, 200, 404, 404, 200],
    );
    const api = sent.slice(0, 5);
    const accessLines = (s: Service): Array<Record<string, unknown>> => logLines(s).filter((l) => l.event === 'http.access');
    // Written before each answer is sent; read here through a pipe, so give them a moment.
    for (const t0 = Date.now(); accessLines(on).length < api.length && Date.now() - t0 < 3000;) await sleep(20);
    const lines = accessLines(on);
    assert.equal(lines.length, api.length, `one line per /api answer, none for /ready:\n${on.stdout()}`);
    const expected = [
      { route: 'role.create', method: 'POST', status: 201 },
      { route: 'membership.add', method: 'POST', status: 201 },
      { route: 'has_permission', method: 'GET', status: 200 },
      { route: 'role_permissions', method: 'GET', status: 404 },
      { route: 'unknown', method: 'GET', status: 404 },
    ];
    lines.forEach((line, i) => {
      const want = expected[i] as (typeof expected)[number];
      assert.equal(line.level, 30, 'info');
      assert.equal(line.method, want.method);
      assert.equal(line.status, want.status);
      assert.equal(line.route, want.route);
      assert.equal(line.request_id, api[i]?.headers['x-request-id']);
      assert.ok(typeof line.duration_ms === 'number' && line.duration_ms >= 0, `duration_ms: ${JSON.stringify(line)}`);
    });
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    assert.doesNotMatch(text, /secret|carol|\/api\//, 'no path and no name in an access line');
    assert.ok(!on.stdout().includes(key), 'no client key');

    // Off: not one access line.
    await sleep(200);
    assert.equal(accessLines(off).length, 0, off.stdout());
  },
);

test('AccessLog: off costs nothing and logs nothing; on, it logs the series it is given by index, sampled', () => {
  const calls: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
  const fake = (infoOn: boolean): Logger => ({
    debug: () => undefined,
    info: (msg, fields) => void calls.push({ msg, fields }),
    warn: () => undefined,
    error: () => undefined,
    enabled: (level) => level !== 'debug' && (infoOn || level !== 'info'),
  });
  const series: AccessSeries[] = [
    { route: 'has_permission', method: 'GET' },
    { route: 'unknown', method: 'POST' },
  ];
  let access = new AccessLog(0, series, fake(true));
  access.answered(0, 200, performance.now(), 'r0');
  assert.equal(calls.length, 0, 'sample 0: nothing');

  access = new AccessLog(1, series, fake(true));
  access.answered(0, 200, performance.now() - 5, 'r1');
  access.answered(1, 404, undefined, 'r2');
  access.answered(-1, 200, performance.now(), 'not-api');
  assert.equal(calls.length, 2, 'every /api answer, none outside /api');
  assert.equal(calls[0]?.msg, 'access');
  const first = calls[0]?.fields ?? {};
  assert.deepEqual({ ...first, duration_ms: undefined }, { route: 'has_permission', method: 'GET', status: 200, duration_ms: undefined, request_id: 'r1' });
  // In milliseconds: at least the 5 given, and far from the 5,000 that microseconds would be.
  assert.ok(typeof first.duration_ms === 'number' && first.duration_ms >= 5 && first.duration_ms < 5000, `duration_ms ${first.duration_ms}`);
  assert.deepEqual(calls[1]?.fields, { route: 'unknown', method: 'POST', status: 404, duration_ms: null, request_id: 'r2' });

  calls.length = 0;
  access = new AccessLog(1, series, fake(false));
  access.answered(0, 200, performance.now(), 'r3');
  assert.equal(calls.length, 0, 'a logger above info: nothing');

  access = new AccessLog(0.25, series, fake(true));
  for (let i = 0; i < 4000; i++) access.answered(0, 200, performance.now(), `s${i}`);
  assert.ok(calls.length > 800 && calls.length < 1200, `a quarter of 4000 sampled: ${calls.length}`);
});

test('AUTH_SHUTDOWN_DELAY_MS and AUTH_ACCESS_LOG_SAMPLE: defaults 0, bad values stop start-up with exit code 2 naming the variable', async () => {
  const tmp = tempDir('rbac-ops-config-');
  try {
    const defaults = loadConfig({}, tmp.dir);
    assert.equal(defaults.AUTH_SHUTDOWN_DELAY_MS, 0);
    assert.equal(defaults.AUTH_ACCESS_LOG_SAMPLE, 0);
    const given = loadConfig({ AUTH_SHUTDOWN_DELAY_MS: '600000', AUTH_ACCESS_LOG_SAMPLE: '0.25' }, tmp.dir);
    assert.equal(given.AUTH_SHUTDOWN_DELAY_MS, 600000);
    assert.equal(given.AUTH_ACCESS_LOG_SAMPLE, 0.25);
    assert.equal(loadConfig({ AUTH_ACCESS_LOG_SAMPLE: '1' }, tmp.dir).AUTH_ACCESS_LOG_SAMPLE, 1);
    const bad: Array<[string, string]> = [
      ['AUTH_SHUTDOWN_DELAY_MS', '-1'],
      ['AUTH_SHUTDOWN_DELAY_MS', '600001'],
      ['AUTH_SHUTDOWN_DELAY_MS', '1.5'],
      ['AUTH_SHUTDOWN_DELAY_MS', 'soon'],
      ['AUTH_ACCESS_LOG_SAMPLE', '1.5'],
      ['AUTH_ACCESS_LOG_SAMPLE', '-0.1'],
      ['AUTH_ACCESS_LOG_SAMPLE', 'often'],
    ];
    await Promise.all(
      bad.map(async ([name, value]) => {
        const run = await runToExit({ [name]: value, AUTH_SQLITE_PATH: join(tmp.dir, 'never', 'rbac.sqlite3') });
        assert.equal(run.code, 2, `${name}=${value}: ${run.output}`);
        assert.match(run.output, new RegExp(`${name}=\\S+ is invalid: allowed is an? (integer|number) from`), run.output);
      }),
    );
  } finally {
    tmp.cleanup();
  }
});
