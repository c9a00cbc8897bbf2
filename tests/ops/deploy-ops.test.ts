/**
 * Operations artefacts under deploy/ beside Kubernetes: every YAML file parses; the compose file's
 * Prometheus and Grafana; the alert rules pass promtool's checks and unit tests, each with a
 * severity and a runbook; the dashboard's panels; and every metric the dashboard and the rules
 * read is one the service registers, with its labels.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, posix, relative } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ROUTES } from '../../src/http/api/routes.ts';
import { METRICS } from '../../src/metrics/definitions.ts';
import { allPanels, dashboardExpressions, readDashboard, withVariables } from '../helpers/dashboard.ts';
import {
  ALERTS,
  ALERT_TESTS,
  DASHBOARD,
  DEPLOY,
  PROMETHEUS_CONFIG,
  defaultOf,
  isObj,
  listFiles,
  promtool,
  readYaml,
  readYamlOne,
} from '../helpers/deploy-files.ts';
import { requireService } from '../helpers/services.ts';
import { ROOT, tempDir } from '../helpers/server.ts';

/** Metric name → the labels its series may carry (besides the target's job and instance). */
async function registeredMetrics(): Promise<Map<string, Set<string>>> {
  const known = new Map<string, Set<string>>();
  const add = (name: string, type: string, labels: readonly string[]): void => {
    if (type === 'histogram') {
      known.set(`${name}_bucket`, new Set([...labels, 'le']));
      known.set(`${name}_sum`, new Set(labels));
      known.set(`${name}_count`, new Set(labels));
    } else {
      known.set(name, new Set(labels));
    }
  };
  for (const m of Object.values(METRICS)) add(m.name, m.type, m.labels);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const m of await registry.getMetricsAsJSON()) {
    const labels = new Set<string>();
    for (const v of m.values as Array<{ labels?: Record<string, unknown> }>) for (const l of Object.keys(v.labels ?? {})) labels.add(l);
    add(m.name, String(m.type), [...labels]);
  }
  known.set('up', new Set());
  return known;
}

/** prom-client default metrics that the dashboard and alerts use: each must be one prom-client registers. */
const DEFAULT_METRICS_USED = ['nodejs_eventloop_lag_p99_seconds', 'nodejs_eventloop_lag_seconds', 'process_cpu_seconds_total', 'process_resident_memory_bytes'];

// ---- PromQL, enough of it to name what an expression reads --------------------------------------

const NOT_METRICS = new Set([
  // keywords and modifiers
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
  // aggregation operators (they may be followed by `by (...)` rather than a parenthesis)
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

interface Selector {
  metric: string;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** The metric selectors of a PromQL expression (Grafana's `$variables` allowed in ranges and values). */
function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  // Label matchers first (their values may hold anything but a closing brace here).
  const bare = expr.replace(/([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}/g, (_all, name: string | undefined, body: string) => {
    assert.ok(name !== undefined, `a selector without a metric name in: ${expr}`);
    const matchers = [...body.matchAll(/([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map((m) => ({
      label: m[1] ?? '',
      op: m[2] ?? '',
      value: m[3] ?? '',
    }));
    out.push({ metric: name, matchers });
    return ` ${name} `;
  });
  const rest = bare
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '$1');
  const seen = new Set(out.map((s) => s.metric));
  for (const m of rest.matchAll(/\d+(?:\.\d+)?(?:e[+-]?\d+)?[a-z]*|[A-Za-z_:][\w:]*/gi)) {
    const word = m[0];
    if (/^\d/.test(word) || NOT_METRICS.has(word.toLowerCase())) continue;
    if (
      rest
        .slice((m.index ?? 0) + word.length)
        .trimStart()
        .startsWith('(')
    )
      continue; // a function
    if (!seen.has(word)) out.push({ metric: word, matchers: [] });
    seen.add(word);
  }
  return out;
}

test('PromQL reader: names the metrics and label matchers of an expression, not its functions or labels', () => {
  const expr =
    'histogram_quantile(0.99, sum by (route, le) (rate(rbac_http_request_duration_seconds_bucket{job="$job",le="0.005"}[$__rate_interval]))) ' +
    '/ on (job) group_left sum without (status) (increase(up[5m] offset 1h)) > 1e3 and max(nodejs_eventloop_lag_seconds) > bool 0.1';
  const got = selectors(expr);
  assert.deepEqual(got.map((s) => s.metric).sort(), ['nodejs_eventloop_lag_seconds', 'rbac_http_request_duration_seconds_bucket', 'up']);
  assert.deepEqual(got.find((s) => s.metric === 'rbac_http_request_duration_seconds_bucket')?.matchers, [
    { label: 'job', op: '=', value: '$job' },
    { label: 'le', op: '=', value: '0.005' },
  ]);
});

test('every YAML file under deploy/ parses', () => {
  const files = listFiles(DEPLOY).filter((f) => /\.ya?ml$/.test(f));
  for (const expected of [
    'compose.yaml',
    'kubernetes/kustomization.yaml',
    'prometheus/prometheus.yml',
    'prometheus/alerts.yml',
    'prometheus/alerts.test.yml',
  ]) {
    assert.ok(files.includes(expected), `deploy/${expected} exists`);
  }
  for (const file of files) assert.ok(readYaml(join(DEPLOY, file)).length > 0, `deploy/${file} holds a document`);
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as unknown;
  assert.ok(isObj(dashboard), 'the dashboard is a JSON object');
});

// ---- compose: Prometheus and Grafana --------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: { context?: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: unknown;
  stop_grace_period?: string;
}

test('compose: Prometheus scrapes every gateway and loads the alert rules; Grafana gets the data source and the dashboard', () => {
  const compose = readYamlOne<{ services: Record<string, ComposeService> }>(join(DEPLOY, 'compose.yaml'));
  const services = compose.services;
  for (const name of ['postgres', 'redis', 'lb', 'prometheus', 'grafana']) assert.ok(name in services, `service ${name}`);
  const gateways = Object.entries(services).filter(([, s]) => s.build?.dockerfile === 'deploy/Dockerfile');
  assert.ok(gateways.length >= 2, 'at least two gateways');

  const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const imageEnv = (key: string): string | undefined => new RegExp(`\\b${key}=(\\S+)`).exec(dockerfile.split(/^FROM /m).at(-1) ?? '')?.[1];
  const targets: string[] = [];
  for (const [name, s] of gateways) {
    const env = s.environment ?? {};
    const host = env.AUTH_METRICS_HOST ?? imageEnv('AUTH_METRICS_HOST') ?? String(defaultOf('AUTH_METRICS_HOST'));
    assert.equal(host, '0.0.0.0', `${name}: metrics reachable from the Prometheus container`);
    const port = Number(env.AUTH_METRICS_PORT ?? defaultOf('AUTH_METRICS_PORT'));
    assert.ok(port > 0, `${name}: metrics on`);
    targets.push(`${name}:${port}`);
    const delay = Number(env.AUTH_SHUTDOWN_DELAY_MS ?? 0) / 1000;
    const grace = Number(/^(\d+)s$/.exec(s.stop_grace_period ?? '10s')?.[1]);
    assert.ok(grace > delay + 10, `${name}: stop_grace_period (${s.stop_grace_period}) > shutdown delay + 10 s`);
  }

  // Prometheus: its configuration and rules mounted from deploy/prometheus, scraping every gateway.
  const prom = services.prometheus as ComposeService;
  const mount = (s: ComposeService, from: string): string | undefined =>
    (s.volumes ?? []).map((v) => v.split(':')).find(([src]) => posix.normalize(src ?? '') === posix.normalize(from))?.[1];
  const promDir = mount(prom, './prometheus');
  assert.ok(promDir !== undefined, 'deploy/prometheus is mounted into the Prometheus container');
  assert.ok((prom.command ?? []).includes(`--config.file=${posix.join(promDir, 'prometheus.yml')}`), 'Prometheus reads the mounted prometheus.yml');
  const config = readYamlOne<{ rule_files?: string[]; scrape_configs: Array<{ job_name: string; static_configs?: Array<{ targets: string[] }> }> }>(
    PROMETHEUS_CONFIG,
  );
  assert.ok(config.rule_files?.includes('alerts.yml'), 'prometheus.yml loads alerts.yml');
  const job = config.scrape_configs.find((c) => c.job_name === 'rbac-gateway');
  assert.ok(job !== undefined, 'a scrape job rbac-gateway (the alert rules select it)');
  assert.deepEqual(job.static_configs?.flatMap((c) => c.targets).sort(), targets.sort(), "every gateway's metrics port is scraped");

  // Grafana: provisioning mounted, the dashboard where the provider reads, the data source that
  // points at the Prometheus service and that the dashboard selects by default.
  const grafana = services.grafana as ComposeService;
  assert.equal(mount(grafana, './grafana/provisioning'), '/etc/grafana/provisioning');
  const dashboardPath = mount(grafana, './grafana/rbac-gateway.json');
  assert.ok(dashboardPath !== undefined, 'the dashboard is mounted');
  const providers = readYamlOne<{ providers: Array<{ type: string; options: { path: string } }> }>(
    join(DEPLOY, 'grafana/provisioning/dashboards/rbac-gateway.yaml'),
  );
  assert.ok(
    providers.providers.some((p) => p.type === 'file' && posix.normalize(p.options.path) === posix.dirname(dashboardPath)),
    "a file provider reads the dashboard's folder",
  );
  const sources = readYamlOne<{ datasources: Array<{ uid: string; type: string; url: string }> }>(
    join(DEPLOY, 'grafana/provisioning/datasources/prometheus.yaml'),
  );
  const source = sources.datasources.find((d) => d.type === 'prometheus');
  assert.ok(source !== undefined, 'a Prometheus data source');
  assert.equal(new URL(source.url).hostname, 'prometheus', 'the data source is the compose service');
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    templating: { list: Array<{ name: string; type: string; current?: { value?: unknown } }> };
  };
  const dsVar = dashboard.templating.list.find((v) => v.type === 'datasource');
  assert.equal(dsVar?.current?.value, source.uid, 'the dashboard starts on the provisioned data source');
});

// ---- alert rules and dashboard --------------------------------------------------------------------

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const alertRules = (): Rule[] => readYamlOne<{ groups: Array<{ rules: Rule[] }> }>(ALERTS).groups.flatMap((g) => g.rules);

test('dashboard: panels with queries on the data source variable, ids unique, inside the grid', () => {
  const d = readDashboard();
  assert.equal(d.uid, 'rbac-gateway');
  const panels = allPanels(d);
  assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'unique panel ids');
  const dsVar = d.templating.list.find((v) => v.type === 'datasource');
  assert.ok(dsVar !== undefined, 'a data source variable');
  for (const p of panels) {
    assert.ok(p.gridPos.x >= 0 && p.gridPos.x + p.gridPos.w <= 24, `panel "${p.title}" within 24 columns`);
    if (p.type === 'row') continue;
    assert.equal(p.datasource?.uid, `\${${dsVar.name}}`, `panel "${p.title}" uses the data source variable`);
    assert.ok((p.targets ?? []).length > 0 && (p.targets ?? []).every((t) => (t.expr ?? '').trim() !== ''), `panel "${p.title}" has queries`);
  }
  const titles = panels.map((p) => p.title.toLowerCase()).join('\n');
  for (const topic of [
    'requests',
    'p50',
    'p99',
    '5xx',
    '4xx',
    'allow ratio',
    'cache hit ratio',
    'cached clients',
    'cache bytes',
    'hydration',
    'invalidation delay',
    'revision gaps',
    'pool connections',
    'circuit',
    'worker restarts',
    'event-loop lag',
  ]) {
    assert.ok(titles.includes(topic), `a panel about ${topic}`);
  }
});

test('the dashboard and the alert rules read only metrics the service registers, with their labels', async () => {
  const known = await registeredMetrics();
  for (const name of DEFAULT_METRICS_USED) assert.ok(known.has(name) && /^(process|nodejs)_/.test(name), `${name} is a prom-client default metric`);
  const rules = alertRules();
  const recorded = new Set(rules.flatMap((r) => (r.record === undefined ? [] : [r.record])));
  const routeIds = new Set([...ROUTES.map((r) => r.id), 'unknown']);
  const usedRecorded = new Set<string>();

  const sources: Array<[string, string, boolean]> = [
    ...dashboardExpressions(readDashboard()).map(([where, expr]): [string, string, boolean] => [`dashboard ${where}`, expr, false]),
    ...rules.map((r): [string, string, boolean] => [`alerts.yml ${r.alert ?? r.record}`, r.expr, true]),
  ];
  for (const [where, expr, mayUseRecorded] of sources) {
    const found = selectors(expr);
    assert.ok(found.length > 0, `${where}: reads a metric`);
    for (const { metric, matchers } of found) {
      if (mayUseRecorded && recorded.has(metric)) {
        usedRecorded.add(metric);
        continue;
      }
      const labels = known.get(metric);
      assert.ok(labels !== undefined, `${where}: ${metric} is not a metric the service registers (src/metrics/definitions.ts, prom-client defaults) nor up`);
      if (/^(process|nodejs)_/.test(metric)) assert.ok(DEFAULT_METRICS_USED.includes(metric), `${where}: add ${metric} to DEFAULT_METRICS_USED`);
      for (const m of matchers) {
        assert.ok(labels.has(m.label) || m.label === 'job' || m.label === 'instance', `${where}: ${metric} has no label ${m.label}`);
        if (m.label === 'route' && m.op === '=') assert.ok(routeIds.has(m.value), `${where}: route="${m.value}" is a route id`);
      }
    }
  }
  assert.deepEqual(
    [...recorded].filter((r) => !usedRecorded.has(r)),
    [],
    'every recording rule is used by an alert',
  );
});

test('alerts: each has a severity, a runbook section in docs/runbook.md and unit tests where it fires and where it does not', () => {
  const alerts = alertRules().filter((r) => r.alert !== undefined);
  assert.ok(alerts.length >= 9, `alerts in alerts.yml: ${alerts.length}`);
  const runbook = readFileSync(join(ROOT, 'docs/runbook.md'), 'utf8');
  const tests = readYamlOne<{ rule_files: string[]; tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }> }>(ALERT_TESTS);
  assert.deepEqual(tests.rule_files, [basename(ALERTS)]);
  const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const rule of alerts) {
    const name = rule.alert ?? '';
    assert.ok(['critical', 'warning'].includes(rule.labels?.severity ?? ''), `${name}: severity critical or warning`);
    assert.equal(rule.annotations?.runbook_url, `docs/runbook.md#${name.toLowerCase()}`, `${name}: runbook_url annotation`);
    assert.ok((rule.annotations?.summary ?? '') !== '', `${name}: summary`);
    assert.ok(new RegExp(`^## ${name}$`, 'm').test(runbook), `${name}: a section of docs/runbook.md (its heading gives the anchor)`);
    const mine = cases.filter((c) => c.alertname === name);
    assert.ok(
      mine.some((c) => (c.exp_alerts ?? []).length > 0),
      `${name}: a unit test where it fires`,
    );
    assert.ok(
      mine.some((c) => (c.exp_alerts ?? []).length === 0),
      `${name}: a unit test where it does not`,
    );
  }
  for (const c of cases)
    assert.ok(
      alerts.some((r) => r.alert === c.alertname),
      `alerts.test.yml tests ${c.alertname}, which alerts.yml does not define`,
    );
});

// ---- promtool -------------------------------------------------------------------------------------

test('promtool: the Prometheus config, the alert rules and their unit tests', async (t) => {
  if (!(await requireService(t, 'promtool (Debian package prometheus)', 'promtool'))) return;
  for (const args of [
    ['check', 'config', relative(ROOT, PROMETHEUS_CONFIG)],
    ['check', 'rules', relative(ROOT, ALERTS)],
    ['test', 'rules', relative(ROOT, ALERT_TESTS)],
  ]) {
    const r = promtool(args);
    assert.equal(r.status, 0, `promtool ${args.join(' ')}:\n${r.output}`);
  }
});

test('promtool: every dashboard query is valid PromQL', async (t) => {
  if (!(await requireService(t, 'promtool (Debian package prometheus)', 'promtool'))) return;
  // Each query, Grafana's variables replaced by values of their kind, becomes a recording rule.
  const concrete = (expr: string): string => withVariables(expr, '5m');
  const exprs = dashboardExpressions(readDashboard());
  const rules = { groups: [{ name: 'dashboard', rules: exprs.map(([, expr], i) => ({ record: `dashboard_query_${i}`, expr: concrete(expr) })) }] };
  for (const r of rules.groups[0]?.rules ?? []) assert.ok(!r.expr.includes('$'), `a Grafana variable left in: ${r.expr}`);
  const dir = tempDir('rbac-dashboard-');
  t.after(dir.cleanup);
  const file = join(dir.dir, 'dashboard.rules.json');
  // JSON is YAML: promtool reads it as a rules file.
  writeFileSync(file, JSON.stringify(rules));
  assert.ok(existsSync(file));
  const r = promtool(['check', 'rules', file]);
  assert.equal(r.status, 0, `promtool check rules (dashboard queries):\n${r.output}`);
});
