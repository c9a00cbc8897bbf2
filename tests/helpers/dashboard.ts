/** The shipped Grafana dashboard (deploy/grafana/rbac-gateway.json) as the tests read it. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './server.ts';

const DASHBOARD = join(ROOT, 'deploy/grafana/rbac-gateway.json');

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<{ expr?: string }>;
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown }> };
}
export const readDashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
export const allPanels = (d: Dashboard): Panel[] => d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

/** The dashboard's PromQL: panel targets, and the metric part of `label_values(...)` variable queries. */
export function dashboardExpressions(d: Dashboard): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const p of allPanels(d)) for (const t of p.targets ?? []) if (t.expr !== undefined) out.push([`panel "${p.title}"`, t.expr]);
  for (const v of d.templating.list) {
    if (v.type !== 'query') continue;
    const q = isObj(v.query) ? String(v.query.query ?? '') : String(v.query ?? '');
    const m = /^label_values\((.*),\s*\w+\s*\)$/.exec(q.trim());
    assert.ok(m !== null, `variable ${v.name}: a label_values() query`);
    out.push([`variable ${v.name}`, m[1] ?? '']);
  }
  return out;
}

/** `expr` with Grafana's variables replaced: ranges by `range`, the job by the shipped one, every instance. */
export function withVariables(expr: string, range: string): string {
  return expr
    .replace(/\$__(rate_)?interval|\$__range/g, range)
    .replace(/\$\{?job\}?/g, 'rbac-gateway')
    .replace(/\$\{?instance\}?/g, '.+');
}
