/**
 * Prometheus metrics (docs/operations.md §2), black box: a server with 4 workers and its metrics port,
 * requests on fresh connections (so the kernel spreads them over the workers), then a scrape.
 * The names, types, labels and buckets are pinned here from the contract's table, independently
 * of src/metrics/definitions.ts; the exposition is parsed strictly, and by `promtool` when it is
 * installed (CI installs it).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { freePort, startServer, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';

const REQUEST_BUCKETS = ['0.0001', '0.00025', '0.0005', '0.001', '0.002', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '1', '5', '+Inf'];

/** docs/operations.md §2: name → type and label names (histograms: without `le`). */
const CONTRACT: Record<string, { type: string; labels: string[] }> = {
  rbac_http_requests_total: { type: 'counter', labels: ['route', 'method', 'status'] },
  rbac_http_request_duration_seconds: { type: 'histogram', labels: ['route', 'method'] },
  rbac_check_decisions_total: { type: 'counter', labels: ['result'] },
  rbac_cache_hits_total: { type: 'counter', labels: [] },
  rbac_cache_misses_total: { type: 'counter', labels: [] },
  rbac_cache_evictions_total: { type: 'counter', labels: [] },
  rbac_cache_clients: { type: 'gauge', labels: [] },
  rbac_cache_bytes: { type: 'gauge', labels: [] },
  rbac_unknown_client_requests_total: { type: 'counter', labels: [] },
  rbac_client_index_clients: { type: 'gauge', labels: [] },
  rbac_hydration_duration_seconds: { type: 'histogram', labels: [] },
  rbac_invalidation_delay_seconds: { type: 'histogram', labels: ['source'] },
  rbac_revision_gaps_total: { type: 'counter', labels: ['resolution'] },
  rbac_writes_total: { type: 'counter', labels: ['op', 'result'] },
  rbac_db_pool_connections: { type: 'gauge', labels: ['state'] },
  rbac_db_retries_total: { type: 'counter', labels: [] },
  rbac_db_circuit_state: { type: 'gauge', labels: [] },
  rbac_worker_restarts_total: { type: 'counter', labels: [] },
  rbac_build_info: { type: 'gauge', labels: ['version', 'node', 'engine'] },
};

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

interface Exposition {
  readonly types: Map<string, string>;
  readonly samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|$)/;

/** The text format, strictly: every line a comment or a sample of a family declared before it. */
function parse(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    // The format ignores empty lines (prom-client separates families with one).
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type !== null) {
      assert.ok(!types.has(type[1] as string), `one TYPE line for ${type[1]}`);
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    assert.ok(!line.startsWith('#'), `unexpected line: ${JSON.stringify(line)}`);
    const m = SAMPLE_LINE.exec(line);
    assert.ok(m !== null, `not a sample: ${line}`);
    const name = m[1] as string;
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((f) => types.has(f));
    assert.ok(family !== undefined, `${name} has no TYPE before it`);
    const labels: Record<string, string> = {};
    for (let rest = m[2] ?? ''; rest !== '';) {
      const l = LABEL.exec(rest);
      assert.ok(l !== null, `bad labels in ${line}`);
      labels[l[1] as string] = l[2] as string;
      rest = rest.slice(l[0].length);
    }
    const value = Number(m[3]);
    assert.ok(!Number.isNaN(value) || m[3] === 'NaN', `bad value in ${line}`);
    samples.push({ name, labels, value });
  }
  return { types, samples };
}

const sum = (e: Exposition, name: string, where: (l: Record<string, string>) => boolean = () => true): number =>
  e.samples.filter((s) => s.name === name && where(s.labels)).reduce((n, s) => n + s.value, 0);

/** A GET on a connection of its own (no keep-alive), so that requests spread over the workers. */
function getOnNewConnection(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { ...headers, connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

let server: RunningServer;
let metricsPort: number;
const key = randomUUID();
const USER = `metrics-user-${randomUUID().slice(0, 8)}`;

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

before(async () => {
  metricsPort = await freePort();
  server = await startServer({ env: { AUTH_WORKERS: '4', AUTH_METRICS_PORT: String(metricsPort) } });
});
after(() => server.stop());

test('from start-up: every route with its success status at 0, every contract metric with its type, labels and buckets', async () => {
  const e = parse(await scrape());
  for (const [name, { type, labels }] of Object.entries(CONTRACT)) {
    assert.equal(e.types.get(name), type, `${name} is a ${type}`);
    const own = e.samples.filter((s) => s.name === name || (type === 'histogram' && s.name.startsWith(`${name}_`)));
    for (const s of own) {
      const names = Object.keys(s.labels)
        .filter((l) => l !== 'le')
        .sort();
      assert.deepEqual(names, [...labels].sort(), `${s.name} labels`);
    }
  }
  const openapi = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
  };
  for (const [path, methods] of Object.entries(openapi.paths)) {
    if (!path.startsWith('/api/')) continue;
    for (const [method, op] of Object.entries(methods)) {
      // A route with two successes (a PUT: 201 created, 200 replaced) starts with its first-named one, 201.
      const successes = Object.keys(op.responses).filter((s) => s.startsWith('2'));
      const series = e.samples.filter(
        (s) =>
          s.name === 'rbac_http_requests_total' &&
          s.labels.route === op.operationId &&
          s.labels.method === method.toUpperCase() &&
          successes.includes(s.labels.status ?? ''),
      );
      assert.equal(series.length, 1, `${method} ${path} (${op.operationId}) one of ${successes.join(', ')} is there`);
      const le = e.samples.filter((s) => s.name === 'rbac_http_request_duration_seconds_bucket' && s.labels.route === op.operationId).map((s) => s.labels.le);
      assert.deepEqual(le, REQUEST_BUCKETS, `${op.operationId} buckets`);
    }
  }
  const info = e.samples.filter((s) => s.name === 'rbac_build_info');
  assert.equal(info.length, 1, 'one build_info series, not one per worker');
  assert.equal(info[0]?.value, 1);
  assert.match(info[0]?.labels.engine ?? '', /^(uws|node)$/);
  assert.equal(info[0]?.labels.node, process.version);
});

test('after N requests over 4 workers on fresh connections, the counters say N; no client identifier or name in any label', async () => {
  const auth = { authorization: `Bearer ${key}` };
  const client = server.client(key);
  assert.equal((await client.createRole('ops')).status, 201);
  assert.equal((await client.grant('ops', 'deploy')).status, 201);
  assert.equal((await client.addMember(USER, 'ops')).status, 201);
  const before = parse(await scrape());
  const N = 240;
  const statuses: number[] = [];
  for (let i = 0; i < N; i += 24) {
    statuses.push(
      ...(await Promise.all(
        Array.from({ length: 24 }, (_, j) => getOnNewConnection(server.port, `/api/has_permission/${USER}/${(i + j) % 3 === 0 ? 'nope' : 'deploy'}`, auth)),
      )),
    );
  }
  assert.deepEqual(new Set(statuses), new Set([200]));
  const unknown = await Promise.all(Array.from({ length: 10 }, () => getOnNewConnection(server.port, '/api/nowhere')));
  assert.deepEqual(new Set(unknown), new Set([404]));
  const text = await scrape();
  const e = parse(text);
  const has = (l: Record<string, string>): boolean => l.route === 'has_permission' && l.method === 'GET';
  assert.equal(
    sum(e, 'rbac_http_requests_total', (l) => has(l) && l.status === '200') - sum(before, 'rbac_http_requests_total', (l) => has(l) && l.status === '200'),
    N,
  );
  assert.equal(sum(e, 'rbac_http_request_duration_seconds_count', has) - sum(before, 'rbac_http_request_duration_seconds_count', has), N);
  assert.equal(
    sum(e, 'rbac_http_requests_total', (l) => l.route === 'unknown' && l.status === '404') -
      sum(before, 'rbac_http_requests_total', (l) => l.route === 'unknown' && l.status === '404'),
    10,
  );
  const allow = sum(e, 'rbac_check_decisions_total', (l) => l.result === 'allow') - sum(before, 'rbac_check_decisions_total', (l) => l.result === 'allow');
  const deny = sum(e, 'rbac_check_decisions_total', (l) => l.result === 'deny') - sum(before, 'rbac_check_decisions_total', (l) => l.result === 'deny');
  assert.deepEqual([allow, deny], [N - N / 3, N / 3]);
  assert.equal(
    sum(e, 'rbac_writes_total', (l) => l.result === 'ok'),
    3,
  );
  assert.ok(sum(e, 'rbac_cache_hits_total') + sum(e, 'rbac_cache_misses_total') >= N);
  // The counters of every worker are in: more than one worker answered (fresh connections).
  assert.ok(sum(e, 'rbac_cache_clients') >= 2, 'several workers cached the client');
  assert.ok(sum(e, 'rbac_invalidation_delay_seconds_count', (l) => l.source === 'worker') >= 3, 'the writes reached the other workers, measured');
  const tenantPrefix = (await client.audit({ limit: 1 })).data?.[0]?.credential.slice(4) ?? 'x'.repeat(12);
  for (const secret of [USER, 'ops', 'deploy', key, tenantPrefix]) assert.ok(!text.includes(secret), `the exposition does not mention ${secret.slice(0, 4)}…`);
});

test('promtool check metrics finds nothing to say about the whole exposition', async (t) => {
  if (!(await requireService(t, 'promtool', 'promtool'))) return;
  const text = await scrape();
  const out = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  const findings = `${out.stdout}${out.stderr}`.split('\n').filter((l) => l.trim() !== '');
  assert.deepEqual(findings, [], findings.join('\n'));
  assert.equal(out.status, 0);
  // prom-client's `*_total` gauges, under names the format allows (docs/operations.md §2).
  for (const name of ['nodejs_active_handles_all', 'nodejs_active_requests_all', 'nodejs_active_resources_all']) {
    assert.match(text, new RegExp(`^# TYPE ${name} gauge$`, 'm'));
  }
  assert.doesNotMatch(text, /^nodejs_active_\w+_total/m);
});

test('the metrics port serves only GET /metrics', async () => {
  assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/`)).status, 404);
  assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: 'POST' })).status, 404);
});

test('workflow schedule changes count as writes: one scheduled, one unscheduled, one not found', async () => {
  const client = server.client(randomUUID());
  const of = (e: Exposition, op: string, result: string): number => sum(e, 'rbac_writes_total', (l) => l.op === op && l.result === result);
  const counts = (e: Exposition): number[] => [
    of(e, 'workflow.schedule', 'ok'),
    of(e, 'workflow.unschedule', 'ok'),
    of(e, 'workflow.unschedule', 'ERR_WORKFLOW_SCHEDULE_NOT_FOUND'),
  ];
  const before = counts(parse(await scrape()));
  assert.equal((await client.scheduleWorkflow('nightly', { interval_seconds: 3600 })).status, 201);
  assert.equal((await client.unscheduleWorkflow('nightly')).status, 200);
  assert.equal((await client.unscheduleWorkflow('nightly')).status, 404);
  const after = counts(parse(await scrape()));
  assert.deepEqual(
    after.map((n, i) => n - (before[i] ?? 0)),
    [1, 1, 1],
  );
});

test('decisions are counted by what a route is: has_permission, permission, membership and each batch item; explain, can_run and lists not', async () => {
  const client = server.client(randomUUID());
  assert.equal((await client.createRole('ops')).status, 201);
  assert.equal((await client.grant('ops', 'deploy')).status, 201);
  assert.equal((await client.addMember('alice', 'ops')).status, 201);
  const decisions = (e: Exposition): [number, number] => [
    sum(e, 'rbac_check_decisions_total', (l) => l.result === 'allow'),
    sum(e, 'rbac_check_decisions_total', (l) => l.result === 'deny'),
  ];
  const [allowBefore, denyBefore] = decisions(parse(await scrape()));
  // Not decisions: the answers say more than yes or no, or are not the contract's checks.
  for (const res of [await client.explain('alice', 'deploy'), await client.canRun('alice', 'deploy'), await client.userPermissions('alice')]) {
    assert.equal(res.status, 200);
  }
  const answers = [
    (await client.hasPermission('alice', 'deploy')).data?.has_permission,
    (await client.roleHasPermission('ops', 'deploy')).data?.has_permission,
    (await client.roleHasPermission('ops', 'nope')).data?.has_permission,
    (await client.isMember('alice', 'ops')).data?.is_member,
    (await client.isMember('bob', 'ops')).data?.is_member,
    ...((
      await client.check([
        { user: 'alice', permission: 'deploy' },
        { user: 'alice', permission: 'nope' },
      ])
    ).data?.results.map((r) => r.has_permission) ?? []),
  ];
  assert.deepEqual(answers, [true, true, false, true, false, true, false]);
  const [allow, deny] = decisions(parse(await scrape()));
  assert.deepEqual([allow - allowBefore, deny - denyBefore], [4, 3]);
});
