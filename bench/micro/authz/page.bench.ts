/** src/authz/page.ts: a page of 1,000 out of the 10,000 holders of one permission, by cursor. */
import { TenantGraph } from '../../../src/authz/graph.ts';
import { pageAfter } from '../../../src/authz/page.ts';
import { generate, HOT_PERMISSION } from '../../lib/dataset.ts';
import type { MicroTask } from '../task.ts';

const ds = generate({ users: 100, roles: 10, permissions: 100, rolesPerUser: 2, grantsPerRole: [2, 5], clients: 1, hotHolders: 10_000, pareto: 1.2, seed: 42 });
const graph = new TenantGraph();
ds.changes.forEach((c, i) => graph.apply([c], i + 1));
const holders = graph.whichUsersCan(HOT_PERMISSION);
const afters = [undefined, ...Array.from({ length: 9 }, (_, k) => holders[(k + 1) * 1000 - 1])];
let i = 0;

export const tasks: MicroTask[] = [
  {
    name: 'whichUsersCan + pageAfter, limit 1000',
    check: () => {
      const want = ds.model.whichUsersCan(HOT_PERMISSION).map((x) => x.user);
      afters.forEach((after, k) => {
        const got = pageAfter(graph.whichUsersCan(HOT_PERMISSION), after, 1000).items;
        if (JSON.stringify(got) !== JSON.stringify(want.slice(k * 1000, (k + 1) * 1000))) throw new Error(`page ${k} differs from the model`);
      });
    },
    fn: () => pageAfter(graph.whichUsersCan(HOT_PERMISSION), afters[i++ % 10], 1000),
  },
];
