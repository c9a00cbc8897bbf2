/**
 * A token revoked on one instance is refused on the others (docs/api.md §3): two instances on one
 * PostgreSQL database, two workers each. Through Redis, within the invalidation delay (the
 * revalidation period is set far longer, so only the push can tell); without Redis, by the
 * periodic look at the store (the backstop).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeJwt } from '../helpers/jwt.ts';
import { sharedDatabase, type SharedDatabase } from '../helpers/postgres.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { newSecret } from '../helpers/tokens.ts';
import { rememberSecret, startServers, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { waitUntil } from '../helpers/wait.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECRET = newSecret();
rememberSecret(SECRET, 'AUTH_JWT_SECRET_KEY');

async function pair(t: { after: (fn: () => Promise<void>) => void }, db: SharedDatabase, env: Record<string, string>): Promise<[RunningServer, RunningServer]> {
  const common = { ...db.env, AUTH_WORKERS: '2', AUTH_JWT_SECRET_KEY: SECRET, ...env };
  const [a, b] = (await startServers({ env: common }, { env: common })) as [RunningServer, RunningServer];
  t.after(async () => {
    await Promise.all([a.kill(), b.kill()]);
  });
  return [a, b];
}

/** `GET /api/roles` with `token` on a new connection to `server`: the status. */
async function statusWith(server: RunningServer, token: string): Promise<number> {
  return (await rawRequest({ port: server.port, key: token, path: '/api/roles', timeoutMs: 5000 })).status;
}

/** A token of `key` issued by `server`, known (verified and remembered) by every worker of both instances. */
async function knownToken(a: RunningServer, b: RunningServer, key: string): Promise<string> {
  const res = await a.client(key).issueToken({ ttl_seconds: 3600 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const token = res.data?.token as string;
  rememberSecret(token, 'token');
  for (const s of [a, b]) for (let i = 0; i < 8; i++) assert.equal(await statusWith(s, token), 200);
  return token;
}

/** Milliseconds from now until `server` refuses `token` on new connections, polling every 5 ms. */
async function refusedAfter(server: RunningServer, token: string): Promise<number> {
  const t0 = performance.now();
  await waitUntil('the revoked token refused on the other instance', async () => ((await statusWith(server, token)) === 401 ? true : undefined), {
    intervalMs: 5,
  });
  return performance.now() - t0;
}

test('through Redis: a token revoked on A is refused on B within the invalidation delay', { timeout: 120_000 }, async (t) => {
  if (!(await requireService(t, 'redis', REDIS_URL))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  // A long revalidation period: only the push through Redis can tell B in time.
  const [a, b] = await pair(t, db, { AUTH_REDIS_URL: REDIS_URL, AUTH_REVALIDATE_MS: '60000' });
  await waitUntil('both instances ready (Redis subscribed)', async () => {
    const ready = await Promise.all([a, b].map((s) => rawRequest({ port: s.port, path: '/ready?strict=1', timeoutMs: 5000 })));
    return ready.every((r) => r.status === 200) ? true : undefined;
  });
  const key = randomUUID();
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    const token = await knownToken(a, b, key);
    const kept = await knownToken(a, b, key);
    const res = await a.client(key).revokeToken(String(decodeJwt(token).payload.jti));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (let j = 0; j < 6; j++) assert.equal(await statusWith(a, token), 401, 'refused on every worker of A at once');
    delays.push(await refusedAfter(b, token));
    for (let j = 0; j < 6; j++) assert.equal(await statusWith(b, token), 401, 'then on every worker of B');
    assert.equal(await statusWith(b, kept), 200, 'another token of the client goes on');
  }
  t.diagnostic(`revoked on A → refused on B after ${delays.map((d) => d.toFixed(1)).join(', ')} ms`);
  assert.ok(Math.max(...delays) < 2000, `within the invalidation delay, long before a revalidation: ${delays.join(', ')} ms`);
});

test('without Redis: B refuses a token revoked on A at its next look at the store', { timeout: 120_000 }, async (t) => {
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  const [a, b] = await pair(t, db, { AUTH_REVALIDATE_MS: '500' });
  const key = randomUUID();
  const token = await knownToken(a, b, key);
  const res = await a.client(key).revokeToken(String(decodeJwt(token).payload.jti));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const delay = await refusedAfter(b, token);
  t.diagnostic(`revoked on A → refused on B after ${delay.toFixed(0)} ms (the store read every 500 ms)`);
  // Let every worker of B have looked (each on its own period), then no worker of B may answer it.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  for (let j = 0; j < 8; j++) assert.equal(await statusWith(b, token), 401, 'refused on every worker of B');
});
