// A client that never wrote is counted as an unknown client on the AuthZEN routes too, as on
// /api: AuthZEN had its own copy of the authenticated prelude, which counted such a request as a
// cache hit (rbac_cache_hits_total) and never as rbac_unknown_client_requests_total.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { rawRequest } from '../helpers/raw-http.ts';
import { freePort, startServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

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

interface Counts {
  readonly unknown: number;
  readonly hits: number;
  readonly misses: number;
}

const EVALUATION = { subject: { type: 'user', id: 'alice' }, action: { name: 'read' }, resource: { type: 'doc', id: '42' } };

test('a never-written client is an unknown client, not a cache hit, on /access/v1 as on /api', { timeout: 120_000 }, async (t) => {
  const metricsPort = await freePort();
  const server = await startServer({ env: { AUTH_METRICS_PORT: String(metricsPort) } });
  t.after(() => server.kill());
  // A client that wrote: cached, its requests are hits on both.
  const real = randomUUID();
  assert.equal((await rawRequest({ port: server.port, key: real, method: 'POST', path: '/api/role/reader' })).status, 201);

  const N = 20;
  /** How `ask` for N keys is counted: a scrape may show a worker's figures from before its last requests, so it is read until all N are in. */
  const counted = async (keys: () => string, ask: (key: string) => Promise<number>): Promise<Counts> => {
    const before = await scrape(metricsPort);
    for (let i = 0; i < N; i++) assert.equal(await ask(keys()), 200);
    return waitUntil(
      `${N} requests counted`,
      async () => {
        const after = await scrape(metricsPort);
        const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
        const counts = { unknown: delta('rbac_unknown_client_requests_total'), hits: delta('rbac_cache_hits_total'), misses: delta('rbac_cache_misses_total') };
        return counts.unknown + counts.hits + counts.misses >= N ? counts : undefined;
      },
      { intervalMs: 50 },
    );
  };
  const evaluate = async (key: string): Promise<number> =>
    (await rawRequest({ port: server.port, key, method: 'POST', path: '/access/v1/evaluation', body: EVALUATION })).status;
  const hasPermission = async (key: string): Promise<number> => (await rawRequest({ port: server.port, key, path: '/api/has_permission/alice/read' })).status;

  assert.deepEqual(await counted(randomUUID, hasPermission), { unknown: N, hits: 0, misses: 0 }, '/api: each an unknown client');
  assert.deepEqual(await counted(randomUUID, evaluate), { unknown: N, hits: 0, misses: 0 }, 'AuthZEN: each an unknown client, as on /api');
  // A client that wrote is never an unknown client, on either.
  assert.equal((await counted(() => real, hasPermission)).unknown, 0);
  assert.equal((await counted(() => real, evaluate)).unknown, 0);
});
