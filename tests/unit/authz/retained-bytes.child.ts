/**
 * Run by estimate.test.ts as `node --expose-gc --import tsx`: builds graphs the ways the cache
 * does (a snapshot, then a stream of changes with deletes and re-creations) and prints, per
 * graph, its estimate and the heap plus array-buffer bytes that dropping it gives back.
 */
import { TenantGraph } from '../../../src/authz/graph.ts';
import type { Change } from '../../../src/authz/changes.ts';
import { graphOfSnapshot } from '../../helpers/graphs.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');
const collect = gc;

function retained(): number {
  collect();
  collect();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

// Flat strings, so that reading them does not flatten (and grow) the caller's copies.
const flat = (s: string): string => JSON.parse(JSON.stringify(s)) as string;
const USERS = 60_000;
const ROLES = 300;
const roles = Array.from({ length: ROLES }, (_, i) => [flat(`role-${i}`), flat(`the role number ${i}`)] as const);
const grants = roles.flatMap(([role], i) => Array.from({ length: 8 }, (_, k) => [role, flat(`svc${k}.doc:d${(i * 13 + k) % 900}:read`)] as const));
const memberships = Array.from({ length: USERS }, (_, u) => [
  [flat(`user${(u * 7919) % USERS}@example.com`), roles[u % ROLES]?.[0] ?? ''] as const,
  [flat(`user${(u * 7919) % USERS}@example.com`), roles[(u * 31 + 7) % ROLES]?.[0] ?? ''] as const,
]).flat();
const changes: Change[] = [];
for (let i = 0; i < 40_000; i++) {
  const user = flat(`churn${i % 9000}`);
  const role = roles[(i * 17) % ROLES]?.[0] ?? '';
  changes.push(i % 4 === 3 ? { op: 'membership.remove', user, role } : { op: 'membership.add', user, role });
  if (i % 5000 === 4999) changes.push({ op: 'role.delete', role }, { op: 'role.create', role, description: flat('again') });
}

function measure(label: string, make: () => TenantGraph): void {
  const before = retained();
  let g: TenantGraph | undefined = make();
  const estimate = g.estimatedBytes;
  const withGraph = retained();
  g = undefined;
  const without = retained();
  process.stdout.write(`${JSON.stringify({ label, estimate, retained: withGraph - without, grewBy: withGraph - before, dropped: g === undefined })}\n`);
}

measure('snapshot', () => graphOfSnapshot({ revision: 1, roles, grants, memberships, windows: [] }));
measure('snapshot and changes', () => {
  const g = graphOfSnapshot({ revision: 1, roles, grants, memberships, windows: [] });
  for (const c of changes) g.apply([c], g.revision + 1);
  return g;
});
measure('changes only', () => {
  const g = new TenantGraph();
  for (const [role, description] of roles) g.apply([{ op: 'role.create', role, description }], g.revision + 1);
  for (const [role, permission] of grants) g.apply([{ op: 'permission.grant', role, permission }], g.revision + 1);
  for (const [user, role] of memberships) g.apply([{ op: 'membership.add', user, role }], g.revision + 1);
  return g;
});
