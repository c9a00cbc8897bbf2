/**
 * The Kubernetes manifests under deploy/kubernetes: the kustomization lists every manifest; probes
 * ask routes the service serves, on the ports its settings default to, and the selectors meet; the
 * pod is locked down with bounded resources; the settings given are ones the service accepts, and
 * it drains within its grace period.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadConfig } from '../../src/config/index.ts';
import { renderPrometheusRule } from '../../support/prometheus-rule.ts';
import {
  ALERTS,
  ALERT_TESTS,
  K8S,
  PROMETHEUS_RULE,
  RUNBOOK,
  defaultOf,
  isObj,
  listFiles,
  plainGetRoutes,
  promtool,
  readYaml,
  readYamlOne,
  schemaProps,
  type Json,
} from '../helpers/deploy-files.ts';
import { ROOT, tempDir } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';

// ---- Kubernetes ---------------------------------------------------------------------------------

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Json;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
interface Probe {
  httpGet?: { path?: string; port?: string | number };
  exec?: unknown;
  tcpSocket?: unknown;
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  privileged?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type?: string };
}
interface Container {
  name: string;
  image?: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  containers: Container[];
  securityContext?: SecurityContext;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  volumes?: Array<{ name: string; emptyDir?: unknown; persistentVolumeClaim?: unknown }>;
}
interface DeploymentSpec {
  replicas?: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
}

function k8sObjects(): Map<string, K8sObject[]> {
  const byKind = new Map<string, K8sObject[]>();
  for (const file of listFiles(K8S)) {
    if (file === 'kustomization.yaml' || !/\.ya?ml$/.test(file)) continue;
    for (const doc of readYaml(join(K8S, file))) {
      assert.ok(isObj(doc) && typeof doc.kind === 'string' && typeof doc.apiVersion === 'string', `${file}: a Kubernetes object`);
      const o = doc as unknown as K8sObject;
      byKind.set(o.kind, [...(byKind.get(o.kind) ?? []), o]);
    }
  }
  return byKind;
}

function only(objects: Map<string, K8sObject[]>, kind: string): K8sObject {
  const list = objects.get(kind) ?? [];
  assert.equal(list.length, 1, `one ${kind} in deploy/kubernetes/`);
  return list[0] as K8sObject;
}

/** The Deployment, its pod spec and its one container. */
function gatewayPod(objects: Map<string, K8sObject[]>): { deployment: DeploymentSpec; pod: PodSpec; container: Container } {
  const deployment = only(objects, 'Deployment').spec as unknown as DeploymentSpec;
  const pod = deployment.template.spec;
  assert.equal(pod.containers.length, 1, 'one container');
  return { deployment, pod, container: pod.containers[0] as Container };
}

/** The container's environment as the kubelet builds it: envFrom in order, then env. */
function podEnvironment(objects: Map<string, K8sObject[]>, container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  const named = (kind: string, name: string): K8sObject => {
    const o = (objects.get(kind) ?? []).find((x) => x.metadata.name === name);
    assert.ok(o !== undefined, `envFrom names ${kind} ${name}, which deploy/kubernetes/ defines`);
    return o;
  };
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef !== undefined) Object.assign(env, named('ConfigMap', from.configMapRef.name).data);
    if (from.secretRef !== undefined) {
      const s = named('Secret', from.secretRef.name);
      const data = Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      Object.assign(env, data, s.stringData);
    }
  }
  for (const e of container.env ?? []) {
    assert.ok(e.value !== undefined, `env ${e.name}: a literal value`);
    env[e.name] = e.value;
  }
  return env;
}

function matchesLabels(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

test('kubernetes: the kustomization lists every manifest; the kinds and API versions expected', () => {
  const kustomization = readYamlOne<{ kind: string; resources: string[] }>(join(K8S, 'kustomization.yaml'));
  assert.equal(kustomization.kind, 'Kustomization');
  const manifests = listFiles(K8S).filter((f) => f !== 'kustomization.yaml');
  assert.deepEqual([...kustomization.resources].sort(), manifests, 'resources: exactly the files beside it');
  const objects = k8sObjects();
  const expected: Record<string, string> = {
    Deployment: 'apps/v1',
    Service: 'v1',
    ConfigMap: 'v1',
    Secret: 'v1',
    PodDisruptionBudget: 'policy/v1',
    ServiceMonitor: 'monitoring.coreos.com/v1',
    PrometheusRule: 'monitoring.coreos.com/v1',
  };
  for (const [kind, apiVersion] of Object.entries(expected)) assert.equal(only(objects, kind).apiVersion, apiVersion, kind);
  for (const list of objects.values()) for (const o of list) assert.equal(o.metadata.labels?.['app.kubernetes.io/name'], 'rbac-gateway', `${o.kind} labels`);
});

test('kubernetes: probes ask routes the service serves, on ports equal to its defaults; selectors meet', () => {
  const objects = k8sObjects();
  const { deployment, container } = gatewayPod(objects);
  const routes = plainGetRoutes();
  assert.ok(routes.has('/ready') && routes.has('/health'), `plain routes read from the source: ${[...routes].join(', ')}`);

  const ports = new Map((container.ports ?? []).map((p) => [p.name ?? '', p.containerPort]));
  assert.equal(ports.get('http'), defaultOf('AUTH_SERVER_PORT'), 'port http = the AUTH_SERVER_PORT default');
  assert.equal(ports.get('metrics'), defaultOf('AUTH_METRICS_PORT'), 'port metrics = the AUTH_METRICS_PORT default');
  const env = podEnvironment(objects, container);
  for (const [key, port] of [
    ['AUTH_SERVER_PORT', 'http'],
    ['AUTH_METRICS_PORT', 'metrics'],
  ] as const) {
    if (env[key] !== undefined) assert.equal(Number(env[key]), ports.get(port), `${key} matches containerPort ${port}`);
  }
  assert.equal(env.AUTH_SERVER_HOST, '0.0.0.0', 'the API listens beyond the pod loopback');
  assert.equal(env.AUTH_METRICS_HOST, '0.0.0.0', 'the metrics listen beyond the pod loopback');

  const probes: Array<[string, Probe | undefined, string | undefined]> = [
    ['readinessProbe', container.readinessProbe, '/ready'],
    ['livenessProbe', container.livenessProbe, '/health'],
    ['startupProbe', container.startupProbe, undefined],
  ];
  for (const [name, probe, expected] of probes) {
    if (probe === undefined && expected === undefined) continue;
    const get = probe?.httpGet;
    assert.ok(get?.path !== undefined, `${name}: an httpGet probe`);
    const [path = '', query = ''] = get.path.split('?');
    assert.ok(routes.has(path), `${name}: ${path} is a route of src/http/handle/plain-routes.ts`);
    if (expected !== undefined) assert.equal(path, expected, name);
    // strict readiness would take every pod out of the Service when a shared dependency is away.
    assert.ok(!/strict/.test(query), `${name}: not ?strict=1`);
    const port = typeof get.port === 'number' ? get.port : ports.get(String(get.port));
    assert.equal(port, ports.get('http'), `${name}: on the API port`);
  }

  const podLabels = deployment.template.metadata.labels;
  assert.ok(matchesLabels(deployment.selector.matchLabels, podLabels), 'the Deployment selects its own pods');
  const service = only(objects, 'Service');
  const svc = service.spec as { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string | number }> };
  assert.ok(matchesLabels(svc.selector, podLabels), 'the Service selects the pods');
  for (const p of svc.ports) {
    const target = typeof p.targetPort === 'number' ? p.targetPort : ports.get(p.targetPort);
    assert.ok(target !== undefined && [...ports.values()].includes(target), `Service port ${p.name} reaches a container port`);
  }
  const pdb = only(objects, 'PodDisruptionBudget').spec as {
    selector: { matchLabels: Record<string, string> };
    maxUnavailable?: number;
    minAvailable?: number;
  };
  assert.ok(matchesLabels(pdb.selector.matchLabels, podLabels), 'the PodDisruptionBudget selects the pods');
  assert.ok((pdb.maxUnavailable ?? 0) >= 1 || (pdb.minAvailable ?? Infinity) < (deployment.replicas ?? 1), 'the budget lets a drain proceed');

  const monitor = only(objects, 'ServiceMonitor').spec as {
    selector: { matchLabels: Record<string, string> };
    endpoints: Array<{ port: string; path?: string }>;
  };
  assert.ok(matchesLabels(monitor.selector.matchLabels, service.metadata.labels), 'the ServiceMonitor selects the Service');
  assert.equal(service.metadata.name, 'rbac-gateway', 'the job name the alert rules expect comes from the Service name');
  for (const e of monitor.endpoints) {
    const sp = svc.ports.find((p) => p.name === e.port);
    assert.ok(sp !== undefined, `ServiceMonitor port ${e.port} is a Service port`);
    assert.equal(typeof sp.targetPort === 'number' ? sp.targetPort : ports.get(sp.targetPort), ports.get('metrics'), 'scrapes the metrics port');
    assert.equal(e.path ?? '/metrics', '/metrics');
  }
  const annotations = deployment.template.metadata.annotations ?? {};
  assert.equal(annotations['prometheus.io/scrape'], 'true');
  assert.equal(Number(annotations['prometheus.io/port']), ports.get('metrics'), 'prometheus.io/port is the metrics port');
  assert.equal(annotations['prometheus.io/path'] ?? '/metrics', '/metrics');
});

test('kubernetes: the pod runs locked down, with bounded resources and a writable /tmp only', () => {
  const { pod, container } = gatewayPod(k8sObjects());
  const sc = { ...pod.securityContext, ...container.securityContext };
  assert.equal(sc.runAsNonRoot, true, 'runAsNonRoot');
  assert.ok(Number.isInteger(sc.runAsUser) && (sc.runAsUser ?? 0) > 0, `a numeric non-root runAsUser (${sc.runAsUser})`);
  assert.equal(container.securityContext?.allowPrivilegeEscalation, false, 'allowPrivilegeEscalation: false');
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true, 'readOnlyRootFilesystem: true');
  assert.notEqual(sc.privileged, true, 'not privileged');
  assert.ok(container.securityContext?.capabilities?.drop?.includes('ALL'), 'capabilities: drop ALL');
  assert.deepEqual(container.securityContext?.capabilities?.add ?? [], [], 'no capability added');
  assert.equal(sc.seccompProfile?.type, 'RuntimeDefault', 'seccompProfile RuntimeDefault');
  assert.equal(pod.automountServiceAccountToken, false, 'no service account token');

  for (const kind of ['requests', 'limits'] as const) {
    for (const r of ['cpu', 'memory']) assert.ok(container.resources?.[kind]?.[r] !== undefined, `resources.${kind}.${r}`);
  }
  assert.match(container.image ?? '', /^[\w./-]+:(?!latest$)[\w.-]+$/, 'an image with a version tag');

  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  for (const m of container.volumeMounts ?? []) assert.ok(volumes.has(m.name), `volumeMount ${m.name} has a volume`);
  const tmp = (container.volumeMounts ?? []).find((m) => m.mountPath === '/tmp');
  assert.ok(tmp !== undefined && volumes.get(tmp.name)?.emptyDir !== undefined, '/tmp is an emptyDir');
});

test('kubernetes: settings the service accepts, PostgreSQL and Redis for several replicas, a drain inside the grace period', () => {
  const objects = k8sObjects();
  const { deployment, pod, container } = gatewayPod(objects);
  const env = podEnvironment(objects, container);
  for (const key of Object.keys(env)) {
    assert.ok(key === 'NODE_ENV' || key in schemaProps, `${key} is a setting of src/config/schema.ts (unknown names are ignored silently)`);
  }
  // As the image runs it: NODE_ENV=production from the Dockerfile, the pod's environment on top.
  const config = loadConfig({ NODE_ENV: 'production', ...env }, ROOT);
  if ((deployment.replicas ?? 1) > 1) {
    assert.equal(config.AUTH_DATABASE_TYPE, 'postgresql', "several replicas share one PostgreSQL (SQLite is one pod's file)");
    assert.ok(config.AUTH_REDIS_URL !== undefined, 'several replicas stay coherent through Redis');
  }
  const cpuLimit = String(container.resources?.limits?.cpu ?? '');
  const cpus = cpuLimit.endsWith('m') ? Number(cpuLimit.slice(0, -1)) / 1000 : Number(cpuLimit);
  assert.ok(config.AUTH_WORKERS <= Math.ceil(cpus), `AUTH_WORKERS (${config.AUTH_WORKERS}) within the CPU limit (${cpuLimit})`);

  // Secret values are placeholders, never something that could be a real secret.
  const secret = only(objects, 'Secret');
  assert.equal(secret.data, undefined, 'placeholders in stringData, readable');
  const values = secret.stringData ?? {};
  for (const key of ['AUTH_POSTGRESQL_URL', 'AUTH_REDIS_URL', 'AUTH_JWT_SECRET_KEY', 'AUTH_ENCRYPTION_KEY']) assert.ok(key in values, `Secret holds ${key}`);
  for (const [key, value] of Object.entries(values)) {
    const url = /^\w+:\/\//.test(value) ? new URL(value) : undefined;
    const secretPart = url === undefined ? value : url.password;
    assert.ok(secretPart === '' || /CHANGE-ME/.test(secretPart), `${key}: a CHANGE-ME placeholder`);
  }

  const delayMs = Number(env.AUTH_SHUTDOWN_DELAY_MS ?? 0);
  assert.ok(delayMs > 0, 'AUTH_SHUTDOWN_DELAY_MS gives load balancers time to drop a stopping pod');
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  assert.ok(grace > delayMs / 1000 + 10, `terminationGracePeriodSeconds (${grace}) > shutdown delay (${delayMs / 1000} s) + the 10 s drain`);
  const preStop = container.lifecycle?.preStop?.exec?.command?.join(' ') ?? '';
  assert.ok(!/\bsleep\b/.test(preStop), 'no preStop sleep: the service delays its own shutdown');
});

// ---- PrometheusRule -------------------------------------------------------------------------------

interface RuleGroup {
  name: string;
  rules: Array<{ alert?: string; record?: string; expr: string; annotations?: Record<string, string> }>;
}

const ruleGroups = (): RuleGroup[] => (only(k8sObjects(), 'PrometheusRule').spec as unknown as { groups: RuleGroup[] }).groups;

/** The anchors GitHub gives a Markdown file's headings (lower case, punctuation dropped, spaces to hyphens). */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} +(.+?) *$/gm)) {
    anchors.add(
      (m[1] ?? '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\- _]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

test('kubernetes: the PrometheusRule is alerts.yml as support/prometheus-rule.ts writes it, the same groups', () => {
  assert.equal(
    readFileSync(PROMETHEUS_RULE, 'utf8'),
    renderPrometheusRule(readFileSync(ALERTS, 'utf8')),
    'prometheusrule.yaml is out of date: run node --import tsx support/prometheus-rule.ts',
  );
  // Compared as values too, independently of the writer: the operator loads exactly the shipped rules.
  assert.deepEqual(ruleGroups(), readYamlOne<{ groups: RuleGroup[] }>(ALERTS).groups);
  const rule = only(k8sObjects(), 'PrometheusRule');
  assert.equal(rule.metadata.name, 'rbac-gateway');
  assert.equal(rule.metadata.labels?.['app.kubernetes.io/component'], 'server');
});

test('kubernetes: every alert of the PrometheusRule links a section of the runbook that exists', () => {
  const alerts = ruleGroups().flatMap((g) => g.rules.filter((r) => r.alert !== undefined));
  assert.ok(alerts.length >= 9, `alerts in the PrometheusRule: ${alerts.length}`);
  const anchors = headingAnchors(readFileSync(RUNBOOK, 'utf8'));
  for (const { alert, annotations } of alerts) {
    const url = annotations?.runbook_url ?? '';
    const [path = '', anchor = ''] = url.split('#');
    assert.ok(existsSync(join(ROOT, path)) && path.endsWith('.md'), `${alert}: runbook_url ${url} names a document of the repository`);
    assert.equal(join(ROOT, path), RUNBOOK, `${alert}: the runbook is docs/runbook.md`);
    assert.equal(anchor, alert?.toLowerCase(), `${alert}: the anchor is the alert's name`);
    assert.ok(anchors.has(anchor), `${alert}: docs/runbook.md has a heading whose anchor is #${anchor}`);
  }
});

test("promtool: the PrometheusRule's groups pass check rules and the unit tests of alerts.test.yml", async (t) => {
  if (!(await requireService(t, 'promtool (Debian package prometheus)', 'promtool'))) return;
  // The groups alone make a rules file; the unit tests beside it under the name they load.
  const dir = tempDir('rbac-prometheusrule-');
  t.after(dir.cleanup);
  const rulesFile = join(dir.dir, basename(ALERTS));
  // JSON is YAML: promtool reads it as a rules file.
  writeFileSync(rulesFile, JSON.stringify({ groups: ruleGroups() }));
  copyFileSync(ALERT_TESTS, join(dir.dir, basename(ALERT_TESTS)));
  for (const args of [
    ['check', 'rules', basename(ALERTS)],
    ['test', 'rules', basename(ALERT_TESTS)],
  ]) {
    const r = promtool(args, dir.dir);
    assert.equal(r.status, 0, `promtool ${args.join(' ')} (spec.groups of prometheusrule.yaml):\n${r.output}`);
  }
});
