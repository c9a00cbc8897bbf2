/**
 * Tenants split over instances (docs/operations.md, "Splitting tenants over instances"): two
 * instances on one PostgreSQL, coherent over Redis, behind a real HAProxy run from the shipped
 * deploy/haproxy/haproxy.cfg. Each client lands on one instance, which alone caches its graph;
 * when that instance dies, its clients are answered by the other one, with every acknowledged
 * write, while the other instance's clients stay where they were (still cached, no hydration).
 *
 * Which instance answered: the prefix of the X-Request-Id it generated, one per worker process
 * (one worker per instance here), learnt by asking each instance directly. What an instance
 * caches: its own metrics (`rbac_cache_clients`, `rbac_cache_misses_total`).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RbacClient, type ApiResult } from '../../src/client/index.ts';
import { checkConfig, HAPROXY_BIN, HAPROXY_CONFIG, haproxyEnv, startHaproxy, type RunningHaproxy } from '../helpers/haproxy.ts';
import { sharedDatabase } from '../helpers/postgres.ts';
import { crash } from '../helpers/processes.ts';
import { freePort, rememberSecret, ROOT, startServers, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { waitUntil } from '../helpers/wait.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CLIENTS = 40;
/** Clients that also read with a token they minted and with their key in upper case. */
const OTHER_CREDENTIALS = 12;

/** The worker that answered: the prefix of the request id it generated. */
const who = (r: { requestId: string | null }): string => (r.requestId ?? '?').split('-')[0] ?? '?';

/** A value of one of an instance's own metrics (an unlabelled counter or gauge). */
async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(m !== null, `${name} in the metrics of :${port}`);
  return Number(m[1]);
}

/** The request-id prefix of the one worker of `server`, asked directly. */
async function workerOf(server: RunningServer): Promise<string> {
  const res = await fetch(`${server.baseUrl}/health`);
  await res.text();
  return who({ requestId: res.headers.get('x-request-id') });
}

interface Tenant {
  readonly key: string;
  readonly api: RbacClient;
  /** The instance (worker prefix) that answered each request so far. */
  readonly seen: Set<string>;
}

/** The answer's status and has_permission, and who answered it, noted for the tenant. */
async function allowed(tn: Tenant, perm: string, api: RbacClient = tn.api): Promise<{ status: number; allowed: boolean | undefined; by: string }> {
  const r = await api.hasPermission('alice', perm);
  return { status: r.status, allowed: r.data?.has_permission, by: who(r) };
}

function expectStatus(r: ApiResult<unknown>, status: number, what: string): void {
  assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
}

test('the shipped HAProxy file passes haproxy -c with instance addresses, and is refused without them', async (t) => {
  if (!(await requireService(t, 'haproxy binary', HAPROXY_BIN))) return;
  const ok = checkConfig(haproxyEnv('127.0.0.1:5000', '127.0.0.1:8404', ['127.0.0.1:5001', '127.0.0.1:5002']));
  assert.equal(ok.status, 0, ok.output);
  const without = checkConfig({ PATH: process.env.PATH ?? '' });
  assert.notEqual(without.status, 0, 'no RBAC_GATEWAY_1 or _2: haproxy -c fails');
  assert.match(without.output, /'server' expects <name> and <addr>/);
});

test('the lines docs/operations.md quotes from the HAProxy file are in it', () => {
  const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const quoted = /```haproxy\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(quoted !== undefined, 'a haproxy block in docs/operations.md');
  const shipped = new Set(
    readFileSync(HAPROXY_CONFIG, 'utf8')
      .split('\n')
      .map((l) => l.trim()),
  );
  const absent = quoted.split('\n').filter((l) => l.trim() !== '' && !shipped.has(l.trim()));
  assert.deepEqual(absent, [], 'quoted lines that the shipped file does not have');
});

interface Fleet {
  readonly servers: readonly [RunningServer, RunningServer];
  /** Each instance's worker (request-id prefix). */
  readonly workers: readonly [string, string];
  readonly metricsPorts: readonly [number, number];
  readonly lb: RunningHaproxy;
  readonly baseUrl: string;
}

/**
 * Two instances (one worker each) on a fresh PostgreSQL database and Redis, behind HAProxy run
 * from the shipped file, both seen up by it; undefined when a service is missing (test skipped).
 */
async function fleet(t: TestContext, env: Record<string, string> = {}): Promise<Fleet | undefined> {
  if (!(await requireService(t, 'haproxy binary', HAPROXY_BIN))) return undefined;
  if (!(await requireService(t, 'redis', REDIS_URL))) return undefined;
  const db = await sharedDatabase(t);
  if (db === undefined) return undefined;
  const metricsPorts = [await freePort(), await freePort()] as const;
  const common = { ...db.env, AUTH_REDIS_URL: REDIS_URL, AUTH_WORKERS: '1', AUTH_JWT_SECRET_KEY: randomBytes(32).toString('hex'), ...env };
  const servers = (await startServers(...metricsPorts.map((p) => ({ env: { ...common, AUTH_METRICS_PORT: String(p) } })))) as [RunningServer, RunningServer];
  t.after(async () => void (await Promise.all(servers.map((s) => s.kill()))));
  const lb = await startHaproxy(servers.map((s) => `127.0.0.1:${s.port}`));
  t.after(() => lb.stop());
  const workers = [await workerOf(servers[0]), await workerOf(servers[1])] as const;
  await waitUntil('HAProxy to see both instances ready', async () =>
    (await lb.serverStatus('gw1')) === 'UP' && (await lb.serverStatus('gw2')) === 'UP' ? true : undefined,
  );
  return { servers, workers, metricsPorts, lb, baseUrl: `http://127.0.0.1:${lb.port}` };
}

/** `count` new clients made through HAProxy: role R, alice a member, R granted `read`. */
async function newTenants(baseUrl: string, count: number): Promise<Tenant[]> {
  const tenants: Tenant[] = Array.from({ length: count }, () => {
    const key = randomUUID();
    rememberSecret(key);
    return { key, api: new RbacClient({ baseUrl, key }), seen: new Set<string>() };
  });
  await Promise.all(
    tenants.map(async (tn) => {
      for (const [r, what] of [
        [await tn.api.createRole('R'), 'role'],
        [await tn.api.addMember('alice', 'R'), 'member'],
        [await tn.api.grant('R', 'read'), 'grant'],
      ] as const) {
        expectStatus(r, 201, what);
        tn.seen.add(who(r));
      }
    }),
  );
  return tenants;
}

test('HAProxy splits clients over two instances, and moves a dead instance’s clients with their writes', { timeout: 120_000 }, async (t) => {
  const f = await fleet(t);
  if (f === undefined) return;
  const { lb, metricsPorts, baseUrl } = f;
  const [, b] = f.servers;
  const [wa, wb] = f.workers;

  // Clients made and written through HAProxy, many requests on the same few keep-alive
  // connections: HAProxy balances each request, not each connection.
  const tenants = await newTenants(baseUrl, CLIENTS);
  await Promise.all(
    tenants.map(async (tn) => {
      // Each write is seen by the reads that follow.
      for (const [perm, want] of [
        ['read', true],
        ['write', false],
      ] as const) {
        const r = await allowed(tn, perm);
        assert.deepEqual([r.status, r.allowed], [200, want], `${perm} after the writes`);
        tn.seen.add(r.by);
      }
    }),
  );
  // The same client with a token it minted, and with its key in upper case: the same instance.
  for (const tn of tenants.slice(0, OTHER_CREDENTIALS)) {
    const issued = await tn.api.issueToken({ scope: 'read' });
    expectStatus(issued, 201, 'token');
    const token = issued.data?.token ?? '';
    rememberSecret(token);
    rememberSecret(tn.key.toUpperCase());
    for (const other of [token, tn.key.toUpperCase()]) {
      const r = await allowed(tn, 'read', new RbacClient({ baseUrl, key: other }));
      assert.deepEqual([r.status, r.allowed], [200, true]);
      tn.seen.add(r.by);
    }
  }

  for (const tn of tenants) assert.equal(tn.seen.size, 1, `every request of a client lands on one instance, not ${[...tn.seen].join(' and ')}`);
  const on = (w: string): Tenant[] => tenants.filter((tn) => tn.seen.has(w));
  const [ofA, ofB] = [on(wa), on(wb)];
  assert.equal(ofA.length + ofB.length, CLIENTS, `answered by the two instances (${wa}, ${wb}), nothing else`);
  assert.ok(ofA.length > 0 && ofB.length > 0, `both instances have clients: ${ofA.length} and ${ofB.length}`);
  t.diagnostic(`${CLIENTS} clients: ${ofA.length} on A, ${ofB.length} on B`);
  // Each instance caches its own clients and none of the other's: each graph is in one memory.
  assert.deepEqual(
    [await metric(metricsPorts[0], 'rbac_cache_clients'), await metric(metricsPorts[1], 'rbac_cache_clients')],
    [ofA.length, ofB.length],
    'client graphs cached on A and on B',
  );

  // A write on B acknowledged just before B dies, for each of its clients.
  for (const tn of ofB) {
    const r = await tn.api.grant('R', 'late');
    expectStatus(r, 201, 'late grant');
    assert.equal(who(r), wb);
  }
  const hydrationsBefore = await metric(metricsPorts[0], 'rbac_cache_misses_total');
  await crash(b);
  // At once, before any health check noticed: a connection to B is refused and retried on A.
  for (const tn of ofA) {
    const r = await allowed(tn, 'read');
    assert.deepEqual([r.status, r.allowed, r.by], [200, true, wa], 'a client of A after B died');
  }
  assert.equal(await metric(metricsPorts[0], 'rbac_cache_misses_total'), hydrationsBefore, 'the clients of A did not move: still cached there, no hydration');
  for (const tn of ofB) {
    const r = await allowed(tn, 'late');
    assert.deepEqual([r.status, r.allowed, r.by], [200, true, wa], 'a client of B after B died: on A, with the write B acknowledged last');
  }
  assert.equal(await metric(metricsPorts[0], 'rbac_cache_misses_total'), hydrationsBefore + ofB.length, 'each moved client cost one hydration on A');

  await waitUntil('HAProxy to mark B down', async () => ((await lb.serverStatus('gw2'))?.startsWith('DOWN') === true ? true : undefined));
  // Writes and reads go on through HAProxy for every client, all on A.
  for (const tn of tenants) {
    const w = await tn.api.grant('R', 'after');
    expectStatus(w, 201, 'grant after the failover');
    const r = await allowed(tn, 'after');
    assert.deepEqual([who(w), r.status, r.allowed, r.by], [wa, 200, true, wa], 'a write and its read after the failover');
  }
  t.diagnostic(`HAProxy's log of what went wrong: ${lb.output().trim().split('\n').length} lines`);
});

test('an instance stopped with SIGTERM and AUTH_SHUTDOWN_DELAY_MS leaves HAProxy before it closes: no request fails', { timeout: 120_000 }, async (t) => {
  const f = await fleet(t, { AUTH_SHUTDOWN_DELAY_MS: '5000' });
  if (f === undefined) return;
  const [, b] = f.servers;
  const [wa, wb] = f.workers;
  const tenants = await newTenants(f.baseUrl, 16);
  const ofB = tenants.filter((tn) => tn.seen.has(wb));
  assert.ok(ofB.length > 0, 'some clients on B');
  // Reads of B's clients without a pause, from before the signal until B is gone.
  const failures: string[] = [];
  let reads = 0;
  let going = true;
  const load = (async () => {
    while (going) {
      for (const tn of ofB) {
        const r = await allowed(tn, 'read').catch((err: unknown) => ({ status: 0, allowed: undefined, by: String(err) }));
        reads++;
        if (r.status !== 200 || r.allowed !== true) failures.push(`HTTP ${r.status} ${r.allowed} (${r.by})`);
      }
    }
  })();
  const signalled = performance.now();
  const exit = b.stop();
  let downAfter = NaN;
  await waitUntil('HAProxy to take B out', async () => ((await f.lb.serverStatus('gw2'))?.startsWith('DOWN') === true ? true : undefined));
  downAfter = performance.now() - signalled;
  const running = b.proc.exitCode === null && b.proc.signalCode === null;
  assert.equal(await exit, 0, 'B stopped cleanly');
  const exitedAfter = performance.now() - signalled;
  going = false;
  await load;
  t.diagnostic(`B out of HAProxy ${downAfter.toFixed(0)} ms after SIGTERM, exited after ${exitedAfter.toFixed(0)} ms; ${reads} reads meanwhile`);
  assert.ok(running, 'HAProxy took B out while B still served (within AUTH_SHUTDOWN_DELAY_MS)');
  assert.deepEqual(failures, [], 'no read failed across the stop');
  for (const tn of ofB) assert.equal((await allowed(tn, 'read')).by, wa, 'B’s clients now on A');
});
