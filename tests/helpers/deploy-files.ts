/**
 * The operations artefacts under deploy/ as the deploy suites read them (tests/ops/deploy*.test.ts):
 * where they are, YAML that must parse without a warning, promtool to check rules with, and the
 * service's own facts they are held to (its settings' defaults, its unauthenticated routes).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { configSchema } from '../../src/config/schema.ts';
import { ROOT } from './server.ts';

export const DEPLOY = join(ROOT, 'deploy');
export const K8S = join(DEPLOY, 'kubernetes');
export const ALERTS = join(DEPLOY, 'prometheus/alerts.yml');
export const ALERT_TESTS = join(DEPLOY, 'prometheus/alerts.test.yml');
export const PROMETHEUS_CONFIG = join(DEPLOY, 'prometheus/prometheus.yml');
export const DASHBOARD = join(DEPLOY, 'grafana/rbac-gateway.json');
export const PROMETHEUS_RULE = join(K8S, 'prometheusrule.yaml');
export const RUNBOOK = join(ROOT, 'docs/runbook.md');

export type Json = Record<string, unknown>;

// ---- reading ------------------------------------------------------------------------------------

/** Every file under `dir` (relative paths, sorted). */
export function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

/** The documents of a YAML file as plain values; a syntax error or warning fails the test. */
export function readYaml(path: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(path, 'utf8'), { prettyErrors: true });
  assert.ok(Array.isArray(docs), `${path}: not a YAML stream`);
  return docs.map((d, i) => {
    assert.deepEqual([...d.errors, ...d.warnings].map(String), [], `${relative(ROOT, path)} document ${i + 1}`);
    return d.toJS({ maxAliasCount: 100 }) as unknown;
  });
}

export function readYamlOne<T>(path: string): T {
  const docs = readYaml(path);
  assert.equal(docs.length, 1, `${path}: one document`);
  return docs[0] as T;
}

/** promtool (Debian package prometheus) run in `cwd`; callers check that it is installed first. */
export function promtool(args: string[], cwd = ROOT): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}${r.error?.message ?? ''}` };
}

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---- the service's own facts -----------------------------------------------------------------------

export const schemaProps = configSchema.properties as unknown as Record<string, { default?: unknown }>;
export const defaultOf = (key: string): unknown => schemaProps[key]?.default;

/** Paths of the unauthenticated GET routes, read from src/http/handle/plain-routes.ts. */
export function plainGetRoutes(): Set<string> {
  const src = readFileSync(join(ROOT, 'src/http/handle/plain-routes.ts'), 'utf8');
  return new Set([...src.matchAll(/routes\.on\(\s*'GET',\s*'([^']+)'/g)].map((m) => m[1] ?? ''));
}
