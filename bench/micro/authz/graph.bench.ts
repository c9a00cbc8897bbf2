/** src/authz/graph.ts: the check of the hot path and the list reads, on a graph of 100,000 memberships. */
import { TenantGraph } from '../../../src/authz/graph.ts';
import { generate, probes } from '../../lib/dataset.ts';
import type { MicroTask } from '../task.ts';

const ds = generate({
  users: 33_334,
  roles: 100,
  permissions: 1_000,
  rolesPerUser: 3,
  grantsPerRole: [10, 50],
  clients: 1,
  hotHolders: 10_000,
  pareto: 1.2,
  seed: 42,
});
const graph = new TenantGraph();
ds.changes.forEach((c, i) => graph.apply([c], i + 1));
const sample = probes(ds, 4_096, 0.2, 7);
let i = 0;

const mustMatch = (what: string, got: unknown, want: unknown): void => {
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(`${what}: the graph answers ${JSON.stringify(got).slice(0, 80)}, the model ${JSON.stringify(want).slice(0, 80)}`);
};

export const tasks: MicroTask[] = [
  {
    name: 'check (Pareto probes, 20% false)',
    check: () => sample.forEach((p) => mustMatch(`check(${p.user}, ${p.permission})`, graph.check(p.user, p.permission), p.expected)),
    fn: () => {
      const p = sample[i++ & 4095];
      return p !== undefined && graph.check(p.user, p.permission);
    },
  },
  {
    name: 'check of an unknown user',
    check: () => mustMatch('check(nobody)', graph.check('nobody@example.com', 'svc0.res-000000:read'), false),
    fn: () => graph.check('nobody@example.com', 'svc0.res-000000:read'),
  },
  {
    name: 'userPermissions',
    check: () =>
      mustMatch(
        'userPermissions',
        graph.userPermissions(ds.users[0] ?? ''),
        ds.model.userPermissions(ds.users[0] ?? '').map((x) => x.name),
      ),
    fn: () => graph.userPermissions(ds.users[i++ % 1000] ?? ''),
  },
];
