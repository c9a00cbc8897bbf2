/**
 * Keys that never wrote cost nothing (docs/api.md §3, last point): answered as the empty client
 * with no hydration and no cache entry, while a key's first write is visible at once on every
 * worker of its instance, and on another instance within the invalidation delay, through Redis
 * and through the revalidation backstop without it. Runs on the store of the run
 * (AUTH_TEST_DATABASE) and the engine of the run (AUTH_TEST_HTTP_ENGINE).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { rawRequest } from '../helpers/raw-http.ts';
import { sharedDatabase } from '../helpers/postgres.ts';
import { freePort, startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { waitUntil } from '../helpers/wait.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The roles of `key` as `server` answers them on a new connection (a worker the kernel picks). */
async function roles(server: RunningServer, key: string, minRevision?: number): Promise<{ status: number; revision: number | undefined; names: string[] }> {
  const headers: Record<string, string> = minRevision === undefined ? {} : { 'x-authz-min-revision': String(minRevision) };
  const res = await rawRequest<Array<{ role: string }>>({ port: server.port, key, path: '/api/roles', headers });
  return { status: res.status, revision: res.revision, names: (res.data ?? []).map((r) => r.role) };
}

async function createRole(server: RunningServer, key: string, role: string): Promise<number | undefined> {
  const res = await rawRequest({ port: server.port, key, method: 'POST', path: `/api/role/${role}` });
  assert.equal(res.status, 201, res.text);
  return res.revision;
}

/** Sums of the rbac_* samples of a scrape, by name (labels summed over). */
async function scrape(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(rbac_[a-z_]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m !== null) sums.set(m[1] as string, (sums.get(m[1] as string) ?? 0) + Number(m[2]));
  }
  return sums;
}

/** Two instances on one database: a fresh PostgreSQL one under AUTH_TEST_DATABASE=postgresql, else one SQLite file. */
async function pair(t: Parameters<typeof sharedDatabase>[0], env: Record<string, string>): Promise<[RunningServer, RunningServer] | undefined> {
  let options: Parameters<typeof startServer>[0];
  if (process.env.AUTH_TEST_DATABASE === 'postgresql') {
    const db = await sharedDatabase(t);
    if (db === undefined) return undefined;
    options = { env: { ...db.env, AUTH_WORKERS: '2', ...env } };
  } else {
    const dir = tempDir('rbac-instances-');
    t.after(async () => dir.cleanup());
    options = { sqlitePath: join(dir.dir, 'rbac.sqlite3'), env: { AUTH_WORKERS: '2', ...env } };
  }
  const a = await startServer(options);
  t.after(() => a.kill());
  const b = await startServer(options);
  t.after(() => b.kill());
  return [a, b];
}

/**
 * Milliseconds until `server` answers `key`'s roles with `role` in them, polling every 5 ms. The
 * wait is generous but well under the 60 s revalidation period of the Redis test, so that only a
 * push can end it there.
 */
async function visibleAfter(server: RunningServer, key: string, role: string, since: number): Promise<number> {
  let revision: number | undefined;
  await waitUntil(
    () => `${role} visible (revision ${revision})`,
    async () => {
      const r = await roles(server, key);
      revision = r.revision;
      return r.names.includes(role) ? true : undefined;
    },
    { intervalMs: 5 },
  );
  return performance.now() - since;
}

test(
  '4 workers: a flood of unknown keys hydrates nothing and caches nothing; each first write is seen at once by every worker',
  { timeout: 120_000 },
  async (t) => {
    const metricsPort = await freePort();
    const server = await startServer({ env: { AUTH_WORKERS: '4', AUTH_METRICS_PORT: String(metricsPort) } });
    t.after(() => server.kill());
    const real = randomUUID();
    await createRole(server, real, 'ops');
    assert.deepEqual((await roles(server, real)).names, ['ops']);
    const before = await scrape(metricsPort);

    const N = 400;
    for (let i = 0; i < N; i += 40) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          rawRequest<{ has_permission: boolean }>({ port: server.port, key: randomUUID(), path: '/api/has_permission/alice/read' }),
        ),
      );
      for (const a of answers) assert.deepEqual([a.status, a.data?.has_permission, a.revision], [200, false, 0]);
    }
    const after = await scrape(metricsPort);
    const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    assert.equal(delta('rbac_hydration_duration_seconds_count'), 0, 'no unknown key was read from the database');
    assert.equal(delta('rbac_cache_clients'), 0, 'nor cached');
    assert.equal(delta('rbac_cache_misses_total'), 0);
    assert.equal(delta('rbac_unknown_client_requests_total'), N, 'each counted as an unknown client');
    assert.ok((after.get('rbac_client_index_clients') ?? 0) >= 1, 'the real client is indexed');

    // First writes: every worker answered the key as unknown first; right after the write's
    // response, every new connection (any worker) sees it.
    const stale: string[] = [];
    for (let k = 0; k < 20; k++) {
      const key = randomUUID();
      for (let i = 0; i < 8; i++) assert.deepEqual((await roles(server, key)).names, []);
      const revision = await createRole(server, key, `r${k}`);
      const reads = await Promise.all(Array.from({ length: 8 }, () => roles(server, key)));
      for (const r of reads)
        if (r.revision !== revision || !r.names.includes(`r${k}`)) stale.push(`key ${k}: revision ${r.revision}, roles ${r.names.join(',')}`);
    }
    assert.deepEqual(stale, [], 'no read after a first write misses it');

    // A client deleted down to nothing is still a client, at its revision, on every worker.
    const gone = randomUUID();
    await createRole(server, gone, 'temp');
    assert.equal((await rawRequest({ port: server.port, key: gone, method: 'DELETE', path: '/api/role/temp' })).status, 200);
    for (const r of await Promise.all(Array.from({ length: 8 }, () => roles(server, gone)))) assert.deepEqual([r.revision, r.names], [2, []]);
  },
);

test(
  'two instances with Redis: a first write on A is seen on B within the invalidation delay, and at once with X-Authz-Min-Revision',
  { timeout: 120_000 },
  async (t) => {
    if (!(await requireService(t, 'redis', REDIS_URL))) return;
    // A long revalidation period: only the push through Redis can tell B.
    const servers = await pair(t, { AUTH_REDIS_URL: REDIS_URL, AUTH_REVALIDATE_MS: '60000' });
    if (servers === undefined) return;
    const [a, b] = servers;
    const delays: number[] = [];
    for (let k = 0; k < 10; k++) {
      const key = randomUUID();
      assert.deepEqual((await roles(b, key)).names, [], 'B answers it as unknown first');
      const revision = await createRole(a, key, 'first');
      const t0 = performance.now();
      delays.push(await visibleAfter(b, key, 'first', t0));
      const pinned = randomUUID();
      const r = await createRole(a, pinned, 'pinned');
      const read = await roles(b, pinned, r);
      assert.deepEqual([read.status, read.names], [200, ['pinned']], 'never stale with X-Authz-Min-Revision');
      assert.ok((read.revision ?? 0) >= (revision ?? 1));
    }
    t.diagnostic(`first writes on A visible on B after ${delays.map((d) => d.toFixed(0)).join(', ')} ms`);
  },
);

test('two instances without Redis: a first write on A reaches B through the revalidation backstop', { timeout: 120_000 }, async (t) => {
  const servers = await pair(t, { AUTH_REVALIDATE_MS: '1000' });
  if (servers === undefined) return;
  const [a, b] = servers;
  const delays: number[] = [];
  for (let k = 0; k < 3; k++) {
    const key = randomUUID();
    assert.deepEqual((await roles(b, key)).names, [], 'B answers it as unknown first');
    await createRole(a, key, 'first');
    const t0 = performance.now();
    delays.push(await visibleAfter(b, key, 'first', t0));
  }
  // Nothing but the backstop tells B of a client created on A; how soon is reported.
  t.diagnostic(`first writes on A visible on B after ${delays.map((d) => d.toFixed(0)).join(', ')} ms (revalidation every 1000 ms)`);
});
