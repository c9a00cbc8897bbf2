/**
 * Several instances on one database, kept coherent through Redis (docs/api.md §9, §13): separate
 * processes on different ports. The push path (Redis), the backstop (revalidation) with Redis
 * killed, X-Authz-Min-Revision across instances, and concurrent writers on two instances.
 * Fault tests run their own redis-server on a free port, never the machine's shared one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { freePort, startServers, tempDir, type RunningServer } from '../helpers/server.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { sharedDatabase, type SharedDatabase } from '../helpers/postgres.ts';
import { requireService } from '../helpers/services.ts';
import { waitUntil } from '../helpers/wait.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

async function pair(t: { after: (fn: () => Promise<void>) => void }, db: SharedDatabase, env: Record<string, string>): Promise<[RunningServer, RunningServer]> {
  const common = { ...db.env, AUTH_WORKERS: '2', ...env };
  const [a, b] = (await startServers({ env: common }, { env: common })) as [RunningServer, RunningServer];
  t.after(async () => {
    await Promise.all([a.kill(), b.kill()]);
  });
  return [a, b];
}

/** has_permission on a new connection; the answer and the revision it reflects. */
async function check(
  server: RunningServer,
  key: string,
  user: string,
  perm: string,
  minRevision?: number,
): Promise<{ status: number; answer: boolean | undefined; revision: number | undefined }> {
  const headers: Record<string, string> = minRevision === undefined ? {} : { 'x-authz-min-revision': String(minRevision) };
  const res = await rawRequest<{ has_permission: boolean }>({ port: server.port, key, path: `/api/has_permission/${user}/${perm}`, headers, timeoutMs: 5000 });
  return { status: res.status, answer: res.data?.has_permission, revision: res.revision };
}

/**
 * Milliseconds until `server` answers `want`, polling every 5 ms. The wait is generous but stays
 * well under the 60 s revalidation period of the first test, so that only a push can end it there.
 */
async function visibleAfter(server: RunningServer, key: string, user: string, perm: string, want: boolean, since: number): Promise<number> {
  let last = '';
  await waitUntil(
    () => `${perm} ${want ? 'granted' : 'revoked'} on the other instance (${last})`,
    async () => {
      const r = await check(server, key, user, perm);
      last = `answer ${r.answer}, revision ${r.revision}`;
      return r.answer === want ? true : undefined;
    },
    { intervalMs: 5 },
  );
  return performance.now() - since;
}

async function ready(server: RunningServer): Promise<{ status: number; text: string }> {
  // strict: 503 while a dependency (Redis here) is down, instead of 200 degraded.
  const res = await rawRequest({ port: server.port, path: '/ready?strict=1', timeoutMs: 5000 });
  return { status: res.status, text: res.text };
}

/** Both instances ready, strictly: Redis subscribed. */
const bothReady = async (a: RunningServer, b: RunningServer): Promise<true | undefined> =>
  (await ready(a)).status === 200 && (await ready(b)).status === 200 ? true : undefined;

/** The revalidation backstop's debug lines of `server` from offset `from` of its output: each a cached graph found behind the database. */
const foundBehind = (server: RunningServer, from: number): number =>
  (
    server
      .output()
      .slice(from)
      .match(/"event":"cache.revalidation_behind"/g) ?? []
  ).length;

test('a write on A is visible on B: never stale with X-Authz-Min-Revision, and within a bounded delay without it', { timeout: 120_000 }, async (t) => {
  if (!(await requireService(t, 'redis', REDIS_URL))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  // A long revalidation period: what is measured here is the push through Redis.
  const [a, b] = await pair(t, db, { AUTH_REDIS_URL: REDIS_URL, AUTH_REVALIDATE_MS: '60000' });
  await waitUntil('both instances ready (Redis subscribed)', () => bothReady(a, b));
  const key = randomUUID();
  const ca = a.client(key);
  assert.equal((await ca.createRole('R')).status, 201);
  assert.equal((await ca.addMember('alice', 'R')).status, 201);
  // B caches the tenant first, so a missed change would show as a stale answer.
  assert.equal((await check(b, key, 'alice', 'p0')).answer, false);

  const stale: string[] = [];
  for (let i = 0; i < 60; i++) {
    const granted = await ca.grant('R', `p${i}`);
    assert.equal(granted.status, 201);
    const rev = granted.revision as number;
    const r = await check(b, key, 'alice', `p${i}`, rev);
    if (r.status !== 200 || r.answer !== true || (r.revision ?? 0) < rev) stale.push(`p${i}: HTTP ${r.status} ${r.answer} at ${r.revision} < ${rev}`);
  }
  assert.deepEqual(stale, [], 'reads with X-Authz-Min-Revision on B are never stale');

  const delays: number[] = [];
  for (let i = 0; i < 60; i++) {
    const on = i % 2 === 0;
    const res = on ? await ca.grant('R', 'moving') : await ca.revoke('R', 'moving');
    assert.equal(res.status, on ? 201 : 200);
    const t0 = performance.now(); // from the acknowledgement on A
    delays.push(await visibleAfter(b, key, 'alice', 'moving', on, t0));
  }
  // Every change seen on B before a revalidation could have told it: the push through Redis.
  const p50 = percentile(delays, 50);
  const p99 = percentile(delays, 99);
  t.diagnostic(
    `acknowledged on A → visible on B (new connection per poll, every 5 ms): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...delays).toFixed(1)} ms over ${delays.length}`,
  );
});

test('concurrent writers on two instances to one client: no lost update, revisions unique and gapless', { timeout: 120_000 }, async (t) => {
  if (!(await requireService(t, 'redis', REDIS_URL))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  const [a, b] = await pair(t, db, { AUTH_REDIS_URL: REDIS_URL });
  const key = randomUUID();
  assert.equal((await a.client(key).createRole('R')).status, 201);
  const perms = Array.from({ length: 120 }, (_, i) => `p${i}`);
  const results = await Promise.all(perms.map((p, i) => (i % 2 === 0 ? a : b).client(key).grant('R', p)));
  const revisions = results.map((r) => {
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.revision as number;
  });
  assert.deepEqual(
    [...revisions].sort((x, y) => x - y),
    Array.from({ length: 120 }, (_, i) => i + 2),
    'revisions 2..121, each once',
  );
  for (const s of [a, b]) {
    const res = await s.client(key).request('GET', '/api/role_permissions/R?limit=1000', { minRevision: 121 });
    assert.equal(res.status, 200);
    assert.deepEqual(
      (res.body as { data: Array<{ name: string }> }).data.map((x) => x.name).sort(),
      [...perms].sort(),
      'every grant is there, on both instances',
    );
  }
});

test('Redis killed: B converges through revalidation and /ready names redis; Redis back: push resumes', { timeout: 120_000 }, async (t) => {
  if (!(await requireService(t, 'redis-server binary', 'redis-server'))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  const port = await freePort();
  const own = await startRedis(port);
  t.after(async () => void own.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  // Debug logs: B's say when its revalidation found a cached graph behind, a change the push missed.
  const [a, b] = await pair(t, db, { AUTH_REDIS_URL: url, AUTH_REVALIDATE_MS: '1000', AUTH_LOG_LEVEL: 'debug' });
  await waitUntil('both instances subscribed', () => bothReady(a, b));
  const key = randomUUID();
  const ca = a.client(key);
  assert.equal((await ca.createRole('R')).status, 201);
  assert.equal((await ca.addMember('alice', 'R')).status, 201);
  assert.equal((await check(b, key, 'alice', 'p')).answer, false);

  own.kill('SIGKILL');
  await waitUntil('B /ready 503 naming redis', async () => {
    const r = await ready(b);
    return r.status === 503 && r.text.includes('redis') ? true : undefined;
  });
  const down: number[] = [];
  for (let i = 0; i < 3; i++) {
    assert.equal((await ca.grant('R', `down${i}`)).status, 201, 'writes go on without Redis');
    const t0 = performance.now();
    down.push(await visibleAfter(b, key, 'alice', `down${i}`, true, t0));
  }
  // Without Redis nothing tells B: its worker that cached the client catches up at a revalidation
  // (the other may load the client afresh). How long that took is reported.
  t.diagnostic(`Redis down: visible on B after ${down.map((d) => d.toFixed(0)).join(', ')} ms (revalidation every 1000 ms)`);

  const again = await startRedis(port);
  t.after(async () => void again.kill('SIGKILL'));
  await waitUntil('both instances subscribed again', () => bothReady(a, b));
  const upFrom = b.output().length;
  const up: number[] = [];
  for (let i = 0; i < 10; i++) {
    assert.equal((await ca.grant('R', `up${i}`)).status, 201);
    const t0 = performance.now();
    up.push(await visibleAfter(b, key, 'alice', `up${i}`, true, t0));
  }
  // Each change is waited for before the next, so each one the push missed is found by a
  // revalidation of its own: fewer than half of them is "most by push".
  const caughtUp = foundBehind(b, upFrom);
  t.diagnostic(
    `Redis back: visible on B after p50 ${percentile(up, 50).toFixed(1)} ms, max ${Math.max(...up).toFixed(1)} ms; ${caughtUp} of ${up.length} found behind by revalidation`,
  );
  assert.ok(caughtUp < up.length / 2, `most changes arrive by push again: ${caughtUp} of ${up.length} came by revalidation`);
});

function startRedis(port: number): Promise<ChildProcess> {
  const dir = tempDir('rbac-redis-');
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir.dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.on('exit', () => dir.cleanup());
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10_000);
    proc.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(proc);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${out}`));
    });
  });
}
