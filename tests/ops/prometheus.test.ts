/**
 * The service under a real Prometheus server (docs/operations.md §2): counters that never go down while
 * the primary runs, across a worker killed and a worker too slow to answer a scrape; and every
 * dashboard panel and alert rule evaluated by Prometheus itself on the data the service exposed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dashboardExpressions, readDashboard, withVariables } from '../helpers/dashboard.ts';
import { descendants } from '../helpers/processes.ts';
import { startPrometheus, scalarOf, type RunningPrometheus } from '../helpers/prometheus.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { freePort, startServer, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { sleep } from '../helpers/wait.ts';

const SCRAPE_SECONDS = 2;
const TOTAL = 'sum(rbac_http_requests_total{job="rbac-gateway"})';

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms${last === undefined ? '' : ` (${String(last)})`}`);
    await sleep(200);
  }
}

/** `count` has_permission checks, each on a new connection so that both workers get some. */
async function checks(server: RunningServer, key: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    const batch = Array.from({ length: Math.min(10, count - i) }, (_, j) =>
      rawRequest({ port: server.port, key, path: `/api/has_permission/u${(i + j) % 7}/read` }),
    );
    for (const res of await Promise.all(batch)) assert.equal(res.status, 200);
  }
}

/** Waits until Prometheus has scraped a total of `expected` /api requests, and that it stays there. */
async function scrapedTotal(prom: RunningPrometheus, expected: number): Promise<void> {
  await until(`Prometheus reads ${expected} requests`, 20_000, async () => (scalarOf(await prom.query(TOTAL)) === expected ? true : undefined));
}

/** The service's HTTP workers: the primary's node children (tsx's esbuild helpers are not node). */
function workerPids(server: RunningServer): number[] {
  const primary = server.proc.pid ?? -1;
  return descendants(primary).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      return ppid === primary && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node';
    } catch {
      return false; // gone meanwhile
    }
  });
}

test('counters never go down: a worker killed, a worker too slow for a scrape; dashboard and rules evaluate', { timeout: 180_000 }, async (t) => {
  if (!(await requireService(t, 'prometheus (Debian package prometheus)', 'prometheus'))) return;
  const metricsPort = await freePort();
  const server = await startServer({ env: { AUTH_WORKERS: '2', AUTH_METRICS_PORT: String(metricsPort) } });
  t.after(() => server.stop());
  const prom = await startPrometheus(metricsPort, SCRAPE_SECONDS);
  t.after(() => prom.stop());

  const key = randomUUID();
  const client = server.client(key);
  assert.equal((await client.createRole('reader')).status, 201);
  assert.equal((await client.grant('reader', 'read')).status, 201);
  assert.equal((await client.addMember('u1', 'reader')).status, 201);
  let sent = 3;
  await until('both workers up', 20_000, async () => (workerPids(server).length === 2 ? true : undefined));
  await scrapedTotal(prom, sent);
  const startedAt = Date.now() / 1000;

  // 1. Traffic, scraped; then one worker is killed: its counts stay, its replacement adds from 0.
  await checks(server, key, 300);
  sent += 300;
  await scrapedTotal(prom, sent);
  const [victim] = workerPids(server);
  assert.ok(victim !== undefined);
  process.kill(victim, 'SIGKILL');
  await until('the worker replaced', 20_000, async () => {
    const pids = workerPids(server);
    return pids.length === 2 &&
      !pids.includes(victim) &&
      (await rawRequest({ port: server.port, path: '/ready' }).then(
        (r) => r.status === 200,
        () => false,
      ))
      ? true
      : undefined;
  });
  await checks(server, key, 300);
  sent += 300;
  await scrapedTotal(prom, sent);

  // 2. A worker that cannot answer a scrape in time (stopped): its last answer stands in.
  const [slow] = workerPids(server);
  assert.ok(slow !== undefined);
  process.kill(slow, 'SIGSTOP');
  try {
    const stoppedAt = Date.now();
    while (Date.now() - stoppedAt < 3 * SCRAPE_SECONDS * 1000) {
      assert.equal(scalarOf(await prom.query(TOTAL)), sent, 'the total holds while a worker is silent');
      await sleep(500);
    }
    assert.equal(scalarOf(await prom.query('up{job="rbac-gateway"}')), 1, 'the scrape itself still succeeds');
  } finally {
    process.kill(slow, 'SIGCONT');
  }

  // What an SRE's queries say over the whole window.
  const window = `${Math.ceil(Date.now() / 1000 - startedAt) + SCRAPE_SECONDS}s`;
  const resets = await prom.query(`sum(resets(rbac_http_requests_total{job="rbac-gateway"}[${window}]))`);
  assert.equal(scalarOf(resets), 0, 'no series of rbac_http_requests_total was ever read as reset');
  // increase() between two scrapes, the window exactly from one to the other (Prometheus then
  // extrapolates nothing): the requests sent in between, counted once, whatever the workers did.
  const times = (await prom.query(`up{job="rbac-gateway"}[${window}]`)).flatMap((s) => (s.values ?? []).map(([t]) => t));
  const first = Math.max(...times.filter((t) => t <= startedAt));
  const last = Math.max(...times);
  const span = Math.round((last - first) * 1000);
  const increase = scalarOf(await prom.query(`sum(increase(rbac_http_requests_total{job="rbac-gateway"}[${span}ms]))`, last));
  assert.equal(Math.round(increase), 600, `increase() from the scrape at ${first} to the one at ${last}`);
  const restarts = await prom.query('sum(rbac_worker_restarts_total{job="rbac-gateway"})');
  assert.equal(scalarOf(restarts), 1);

  // 3. Traffic for every panel: writes, a 404, a 501 (no token secret), and then every query.
  assert.equal((await client.createRole('writer')).status, 201);
  assert.equal((await client.createRole('writer')).status, 409);
  assert.equal((await rawRequest({ port: server.port, key, method: 'POST', path: '/api/token' })).status, 501);
  assert.equal((await rawRequest({ port: server.port, key: randomUUID(), path: '/api/has_permission/u1/read' })).status, 200);
  await checks(server, key, 50);
  await sleep(2 * SCRAPE_SECONDS * 1000 + 500);

  const empty: string[] = [];
  for (const [where, expr] of dashboardExpressions(readDashboard())) {
    const result = await prom.query(withVariables(expr, '1m')).catch((err: unknown) => assert.fail(`dashboard ${where}: ${String(err)}`));
    if (result.length === 0) empty.push(`${where}: ${expr}`);
  }
  assert.deepEqual(empty, [], 'every dashboard query has data after traffic that feeds it');

  const rules = await until('every rule evaluated', 20_000, async () => {
    const all = await prom.rules();
    return all.length > 0 && all.every((r) => !r.lastEvaluation.startsWith('0001')) ? all : undefined;
  });
  assert.deepEqual(
    rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`),
    [],
    'every alert and recording rule evaluates without error',
  );
  for (const r of ['RbacGatewayErrorBudgetBurnFast', 'RbacGatewayTargetsMissing', 'RbacGatewayDown'])
    assert.ok(
      rules.some((x) => x.name === r),
      `${r} is loaded`,
    );
});
