/**
 * deploy/compose.yaml as Compose itself resolves it (`config`, no Docker daemon needed): valid for
 * Debian's docker-compose 1.29 and, where installed, for `docker compose` v2; two gateways on
 * PostgreSQL and Redis; Prometheus reading the shipped prometheus.yml and alerts.yml; Grafana
 * provisioned with the shipped dashboard; every file mounted from the host exists.
 * (deploy-ops.test.ts reads the file as written: scrape targets, data source, grace periods.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, join, posix, relative, resolve as resolvePath } from 'node:path';
import { parse } from 'yaml';
import { ALERTS, DASHBOARD, DEPLOY, PROMETHEUS_CONFIG, readYamlOne } from '../helpers/deploy-files.ts';
import { ROOT } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';

const COMPOSE_FILE = join(DEPLOY, 'compose.yaml');

/** A volume as v1 prints it ("source:target:mode") or v2 does ({type, source, target}). */
type RawVolume = string | { type?: string; source?: string; target: string };
interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string | null>;
  volumes?: RawVolume[];
  depends_on?: Record<string, { condition?: string }>;
}
interface Resolved {
  services: Record<string, Service>;
}
interface Mount {
  source: string;
  target: string;
  bind: boolean;
}

function mounts(service: Service): Mount[] {
  return (service.volumes ?? []).map((v) => {
    if (typeof v !== 'string') return { source: v.source ?? '', target: v.target, bind: v.type === 'bind' };
    const [source = '', target = ''] = v.split(':');
    return { source, target, bind: isAbsolute(source) };
  });
}

/** Where a path inside the container comes from on the host, through the service's bind mounts. */
function hostPath(service: Service, inside: string): string | undefined {
  const mount = mounts(service)
    .filter((m) => m.bind && (inside === m.target || inside.startsWith(`${m.target}/`)))
    .sort((a, b) => b.target.length - a.target.length)[0];
  return mount === undefined ? undefined : join(mount.source, posix.relative(mount.target, inside));
}

/** `config` of one Compose implementation, from the repository root as the docs run it. */
function resolve(command: string, args: string[]): Resolved {
  const r = spawnSync(command, [...args, '-f', relative(ROOT, COMPOSE_FILE), 'config'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `${command} ${args.join(' ')} config:\n${r.stderr}${r.error?.message ?? ''}`);
  return parse(r.stdout) as Resolved;
}

/** `docker compose` (v2) where the plug-in is installed; only docker-compose 1.29 is required. */
function composeV2Installed(): boolean {
  return spawnSync('docker', ['compose', 'version'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
}

function checkGateways(services: Record<string, Service>): void {
  const gateways = Object.entries(services).filter(([, s]) => s.build?.dockerfile === 'deploy/Dockerfile');
  assert.ok(gateways.length >= 2, `two gateways built from deploy/Dockerfile: ${gateways.map(([n]) => n).join(', ')}`);
  for (const [name, s] of gateways) {
    assert.equal(resolvePath(s.build?.context ?? ''), resolvePath(ROOT), `${name}: built from the repository root`);
    const env = s.environment ?? {};
    assert.equal(env.AUTH_DATABASE_TYPE, 'postgresql', `${name}: on PostgreSQL`);
    assert.equal(new URL(env.AUTH_POSTGRESQL_URL ?? 'x:').hostname, 'postgres', `${name}: the postgres service`);
    assert.equal(new URL(env.AUTH_REDIS_URL ?? 'x:').hostname, 'redis', `${name}: the redis service`);
    for (const dep of ['postgres', 'redis']) assert.equal(s.depends_on?.[dep]?.condition, 'service_healthy', `${name}: starts once ${dep} is healthy`);
  }
  assert.match(services.postgres?.image ?? '', /^postgres:\d+/, 'a PostgreSQL service with a versioned image');
  assert.match(services.redis?.image ?? '', /^redis:\d+/, 'a Redis service with a versioned image');
}

function checkPrometheus(prometheus: Service | undefined): void {
  assert.ok(prometheus !== undefined, 'a prometheus service');
  const configArg = (prometheus.command ?? []).find((a) => a.startsWith('--config.file='));
  assert.ok(configArg !== undefined, 'Prometheus is told its configuration file');
  const configInside = configArg.slice('--config.file='.length);
  assert.equal(hostPath(prometheus, configInside), PROMETHEUS_CONFIG, 'Prometheus reads deploy/prometheus/prometheus.yml');
  // Rule files are relative to the configuration file: each must be the shipped alerts.yml.
  const config = readYamlOne<{ rule_files?: string[] }>(PROMETHEUS_CONFIG);
  const rules = (config.rule_files ?? []).map((f) => hostPath(prometheus, posix.join(posix.dirname(configInside), f)));
  assert.deepEqual(rules, [ALERTS], 'Prometheus loads deploy/prometheus/alerts.yml');
}

function checkGrafana(grafana: Service | undefined): void {
  assert.ok(grafana !== undefined, 'a grafana service');
  assert.equal(hostPath(grafana, '/etc/grafana/provisioning'), join(DEPLOY, 'grafana/provisioning'), 'the shipped provisioning');
  const providers = readYamlOne<{ providers: Array<{ type: string; options: { path: string } }> }>(
    join(DEPLOY, 'grafana/provisioning/dashboards/rbac-gateway.yaml'),
  );
  const folders = providers.providers.filter((p) => p.type === 'file').map((p) => p.options.path);
  assert.ok(
    folders.some((f) => hostPath(grafana, posix.join(f, 'rbac-gateway.json')) === DASHBOARD),
    `the dashboard is mounted where a file provider reads (${folders.join(', ')})`,
  );
  const home = grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH;
  assert.equal(home === undefined || home === null ? undefined : hostPath(grafana, home), DASHBOARD, 'the home dashboard is the shipped one');
}

function checkResolved(label: string, resolved: Resolved): void {
  const services = resolved.services;
  checkGateways(services);
  checkPrometheus(services.prometheus);
  checkGrafana(services.grafana);
  for (const [name, s] of Object.entries(services)) {
    for (const m of mounts(s).filter((x) => x.bind)) assert.ok(existsSync(m.source), `${label} ${name}: mounts ${m.source}, which exists`);
  }
}

test('compose: docker-compose 1.29 resolves deploy/compose.yaml; gateways, PostgreSQL, Redis, Prometheus and Grafana as shipped', async (t) => {
  if (!(await requireService(t, 'docker-compose (Debian package docker-compose)', 'docker-compose'))) return;
  checkResolved('docker-compose', resolve('docker-compose', []));
});

test('compose: docker compose v2 resolves it the same way, where installed', (t) => {
  if (!composeV2Installed()) {
    // Not required: the file keeps to what both read (no top-level `name:`, which 1.29 refuses).
    t.skip('docker compose (v2) is not installed');
    return;
  }
  checkResolved('docker compose', resolve('docker', ['compose']));
});
