import { existsSync } from 'node:fs';
import { generate } from './lib/dataset.ts';
import { seedSqlite } from './lib/seed.ts';
import { openStore } from '../src/store/index.ts';
import { TenantGraph } from '../src/authz/graph.ts';
import { tenantOfKey } from '../src/http/input/credentials.ts';
const users = Number(process.argv[2] ?? 33334);
const path = `/tmp/phase-${users}.sqlite3`;
const ds = generate({ users, roles: users > 100000 ? 1000 : 100, permissions: 1000, rolesPerUser: 3, grantsPerRole: [10, 50], clients: 1, hotHolders: 0, pareto: 1.2, seed: 42 });
const tenant = tenantOfKey('00000000-0000-4000-8000-000000000001');
if (!existsSync(path)) await seedSqlite(path, [tenant], ds.changes);
const store = openStore({ type: 'sqlite', sqlitePath: path });
for (let round = 0; round < 4; round++) {
  let t = performance.now();
  const s = await store.load(tenant);
  const tLoad = performance.now() - t; t = performance.now();
  const g = TenantGraph.fromSnapshot(s);
  const tBuild = performance.now() - t; t = performance.now();
  const img = await store.loadGraph(tenant);
  const tImage = performance.now() - t;
  console.log(`memberships ${s.memberships.length}: load ${tLoad.toFixed(0)} ms, build ${tBuild.toFixed(0)} ms; loadGraph ${tImage.toFixed(0)} ms; estimate ${(g.estimatedBytes / s.memberships.length).toFixed(1)} B/membership ${img.revision}`);
}
