/**
 * A database outage (docs/api.md §13), caused for real: the service reaches PostgreSQL through a TCP
 * proxy the test cuts (every connection reset, new ones refused) and restores. Cached clients keep
 * being answered from memory, writes and uncached clients fail fast with 503 and Retry-After once
 * the circuit is open (a key that never wrote needs no database: the empty client, at once), /ready answers 200 `degraded` naming the database (503 with ?strict=1), and
 * everything recovers without a restart.
 * Nothing acknowledged is lost; nothing refused is applied.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { freePort, startServer } from '../helpers/server.ts';
import { rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { freshPostgresDatabase, requirePostgres } from '../helpers/postgres.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { waitUntil } from '../helpers/wait.ts';

test(
  'PostgreSQL cut off: cached checks answer, writes fail fast with 503, the circuit opens and recovers, nothing acknowledged is lost',
  { timeout: 120_000 },
  async (t) => {
    if (!(await requirePostgres(t))) return;
    const db = await freshPostgresDatabase(t);
    const target = new URL(db.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    t.after(() => proxy.close());
    const viaProxy = new URL(db.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const metricsPort = await freePort();
    /** rbac_db_circuit_state as scraped: the worst worker's (0 closed, 1 half-open, 2 open). */
    const circuit = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith('rbac_db_circuit_state '));
      return Number(line?.split(' ')[1]);
    };
    const server = await startServer({
      env: {
        AUTH_METRICS_PORT: String(metricsPort),
        AUTH_DATABASE_TYPE: 'postgresql',
        AUTH_POSTGRESQL_URL: viaProxy.href,
        AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS: '1000',
        AUTH_WORKERS: '2',
        AUTH_DB_BREAKER_THRESHOLD: '3',
        // Longer than the twelve writes below take on a loaded machine (the suite runs two files at
        // once): a half-open probe among the last of them would not say "circuit open".
        AUTH_DB_BREAKER_COOLDOWN_MS: '5000',
      },
    });
    t.after(() => server.kill());
    const port = server.port;
    /** The service's warnings and errors, for assertion messages. */
    const logged = (): string =>
      server
        .output()
        .split('\n')
        .filter((l) => /"level":(40|50)[,}]/.test(l))
        .slice(-15)
        .join('\n');
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    const acknowledged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await c.grant('R', `before${i}`);
      assert.equal(res.status, 201);
      acknowledged.push(`before${i}`);
    }
    const get = (path: string, k = key): Promise<RawResult<{ has_permission: boolean }>> => rawRequest({ port, key: k, path, timeoutMs: 10_000 });
    // Clients that wrote and were never read: no worker caches their graphs.
    const [stranger, laterStranger] = [randomUUID(), randomUUID()];
    for (const k of [stranger, laterStranger]) assert.equal((await server.client(k).createRole('S')).status, 201);
    // Every worker caches the client (new connections spread over both).
    for (let i = 0; i < 20; i++) assert.equal((await get('/api/has_permission/alice/before3')).data?.has_permission, true);

    await proxy.cut();

    // Cached checks: answered from memory, right, and fast.
    const slowest = { ms: 0 };
    for (let i = 0; i < 40; i++) {
      const t0 = performance.now();
      const res = await get(`/api/has_permission/alice/before${i % 10}`);
      slowest.ms = Math.max(slowest.ms, performance.now() - t0);
      assert.equal(res.status, 200, `cached check during the outage: HTTP ${res.status} ${res.text}`);
      assert.equal(res.data?.has_permission, true);
    }
    t.diagnostic(`cached checks during the outage: slowest ${slowest.ms.toFixed(1)} ms`);

    // Writes: 503 with Retry-After, never 500; once the circuit is open, at once: refused without
    // asking the database (ERR_STORE_CIRCUIT_OPEN says so). How long each took is reported.
    const refused: string[] = [];
    const times: number[] = [];
    const texts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const perm = `during${i}`;
      const t0 = performance.now();
      const res = await rawRequest({ port, key, method: 'POST', path: `/api/permission/R/${perm}`, timeoutMs: 15_000 });
      times.push(performance.now() - t0);
      assert.equal(res.status, 503, `a write during the outage: HTTP ${res.status} ${res.text}\n${logged()}`);
      assert.ok(res.headers['retry-after'] !== undefined, 'Retry-After on 503');
      assert.doesNotMatch(res.text, /127\.0\.0\.1|postgres|ECONN|SELECT|INSERT/i, 'no host, driver code or SQL in the body');
      texts.push(res.text);
      refused.push(perm);
    }
    t.diagnostic(`write answers during the outage (ms): ${times.map((x) => x.toFixed(0)).join(', ')}`);
    for (const text of texts.slice(-4)) assert.match(text, /circuit open/, `with the circuit open, a write is refused without asking the database: ${text}`);

    // An uncached client cannot be hydrated: 503, fast. A key that never wrote needs no database.
    const uncached = await get('/api/has_permission/alice/x', stranger);
    assert.equal(uncached.status, 503, uncached.text);
    const unknown = await get('/api/has_permission/alice/x', randomUUID());
    assert.deepEqual([unknown.status, unknown.data?.has_permission, unknown.revision], [200, false, 0], unknown.text);
    // Readiness: degraded, not down, so that a shared database's outage does not take every
    // instance out of its load balancer; strict readiness says 503. On every worker.
    for (let i = 0; i < 6; i++) {
      const ready = await rawRequest({ port, path: '/ready', timeoutMs: 10_000 });
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(ready.body, { status: 'degraded', degraded: ['database'] });
      const strict = await rawRequest({ port, path: '/ready?strict=1', timeoutMs: 10_000 });
      assert.equal(strict.status, 503, strict.text);
      assert.deepEqual(strict.body, { status: 'degraded', degraded: ['database'] });
      assert.ok(strict.headers['retry-after'] !== undefined, 'Retry-After on 503');
    }
    // Cached clients are still answered while /ready says degraded.
    assert.equal((await get('/api/has_permission/alice/before0')).status, 200);
    // The circuit as Prometheus sees it: open (a half-open probe may be under way).
    assert.ok((await circuit()) >= 1, 'rbac_db_circuit_state says open');

    await proxy.restore();

    // Recovery without a restart: the next probe after the cool-down closes the circuit.
    const t0 = Date.now();
    const recovered = await waitUntil(
      'writes to succeed again after the database is back',
      async () => {
        const res = await rawRequest({ port, key, method: 'POST', path: '/api/permission/R/after', timeoutMs: 15_000 });
        if (res.status === 201) return res;
        assert.equal(res.status, 503, res.text);
        return undefined;
      },
      { intervalMs: 200 },
    );
    acknowledged.push('after');
    t.diagnostic(`writes recovered ${Date.now() - t0} ms after the database came back`);
    // Each worker has its own circuit: one that saw no request yet closes at its next probe (a
    // readiness check is one), a cool-down later. Then every worker is ready: rbac_db_circuit_state,
    // the worst worker's, says closed.
    const readySince = Date.now();
    await waitUntil(
      'the circuit of every worker closed',
      async () => {
        await rawRequest({ port, path: '/ready?strict=1', timeoutMs: 10_000 });
        return (await circuit()) === 0 ? true : undefined;
      },
      { intervalMs: 100 },
    );
    t.diagnostic(`every circuit closed ${Date.now() - readySince} ms after the first write went through again`);
    for (let i = 0; i < 10; i++) {
      const ready = await rawRequest({ port, path: i % 2 === 0 ? '/ready' : '/ready?strict=1', timeoutMs: 10_000 });
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(ready.body, { status: 'ready' });
    }
    assert.equal((await get('/api/has_permission/alice/x', laterStranger)).status, 200, 'uncached clients hydrate again');
    assert.equal(await circuit(), 0, 'rbac_db_circuit_state says closed');

    // Nothing acknowledged lost, nothing refused applied: on every worker.
    for (let i = 0; i < 6; i++) {
      const minRevision = String(recovered.revision);
      const listed: RawResult<Array<{ name: string }>> = await rawRequest({
        port,
        key,
        path: '/api/role_permissions/R?limit=1000',
        headers: { 'x-authz-min-revision': minRevision },
        timeoutMs: 10_000,
      });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual((listed.data ?? []).map((x) => x.name).sort(), [...acknowledged].sort());
    }
    const changes = await c.request<Array<{ permission?: string }>>('GET', '/api/changes?since=0');
    assert.equal(changes.status, 200);
    const inLog = (changes.body as { data: Array<{ permission?: string }> }).data.map((e) => e.permission).filter((p) => p !== undefined);
    for (const perm of refused) assert.ok(!inLog.includes(perm), `${perm} was refused with 503 and must not be in the changelog`);
  },
);
