/**
 * deploy/kubernetes/prometheusrule.yaml is written from deploy/prometheus/alerts.yml, so that the
 * Prometheus Operator and a plain Prometheus evaluate the same rules: edit alerts.yml, then run
 *   node --import tsx support/prometheus-rule.ts           (rewrites prometheusrule.yaml)
 *   node --import tsx support/prometheus-rule.ts --check   (exit 1 when it is out of date)
 * tests/ops/deploy-kubernetes.test.ts fails while the two differ. The groups are carried over as
 * YAML nodes, not values, so the comments that explain each rule come along.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Document, parseDocument } from 'yaml';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const ALERTS_FILE = join(ROOT, 'deploy/prometheus/alerts.yml');
export const PROMETHEUS_RULE_FILE = join(ROOT, 'deploy/kubernetes/prometheusrule.yaml');

const HEADER = [
  ' Prometheus Operator: the alert and recording rules of deploy/prometheus/alerts.yml, which a',
  ' Prometheus whose ruleSelector matches these labels loads. Written by support/prometheus-rule.ts:',
  ' edit alerts.yml and run `node --import tsx support/prometheus-rule.ts`, never this file.',
  ' Each alert links its section of docs/runbook.md (runbook_url, relative to the repository).',
].join('\n');

/** The PrometheusRule manifest holding the groups of `alertsYaml` (the text of alerts.yml). */
export function renderPrometheusRule(alertsYaml: string): string {
  const source = parseDocument(alertsYaml);
  if (source.errors.length > 0) throw new Error(`alerts.yml: ${source.errors.map(String).join('; ')}`);
  const groups = source.get('groups', true);
  if (groups === undefined) throw new Error('alerts.yml: no groups');
  const manifest = new Document({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'rbac-gateway',
      labels: { 'app.kubernetes.io/name': 'rbac-gateway', 'app.kubernetes.io/component': 'server' },
    },
    spec: { groups: [] },
  });
  manifest.setIn(['spec', 'groups'], groups);
  manifest.commentBefore = HEADER;
  // lineWidth 0: no folding, so the expressions keep the lines they have in alerts.yml.
  return manifest.toString({ lineWidth: 0 });
}

function main(args: readonly string[]): number {
  const wanted = renderPrometheusRule(readFileSync(ALERTS_FILE, 'utf8'));
  const target = relative(process.cwd(), PROMETHEUS_RULE_FILE);
  if (args.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(PROMETHEUS_RULE_FILE, 'utf8');
    } catch {
      // a missing file is out of date too
    }
    if (current === wanted) return 0;
    console.error(`${target} is not what alerts.yml gives: run node --import tsx support/prometheus-rule.ts`);
    return 1;
  }
  writeFileSync(PROMETHEUS_RULE_FILE, wanted);
  console.log(`wrote ${target}`);
  return 0;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main(process.argv.slice(2));
