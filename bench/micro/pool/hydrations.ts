/**
 * `node --import tsx bench/micro/pool/hydrations.ts [clients]`: how many small clients' graphs the
 * pool hydrates per second, without HTTP in the way (the `small-clients` scenario goes through
 * HTTP, where its own asker is often the limit). Clients of 3 roles, 9 grants and 8 memberships
 * are seeded into a SQLite file; then, three times, every client's graph is read through the
 * worker's own pool (2 threads, 32 reads in flight) and adopted as the cache adopts it. Reports
 * graphs per second, CPU per graph of the whole process (every thread) and the event loop's part.
 * Each graph answers one check, which must be true.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Change } from '../../../src/authz/changes.ts';
import { TenantGraph } from '../../../src/authz/graph.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { tenantOfKey } from '../../../src/http/input/credentials.ts';
import { PooledStore } from '../../../src/pool/index.ts';
import { seedSqlite } from '../../lib/seed.ts';

const CLIENTS = Number(process.argv[2] ?? 10_000);
const IN_FLIGHT = 32;
const THREADS = 2;

function smallClient(): Change[] {
  const changes: Change[] = [];
  for (let r = 0; r < 3; r++) {
    changes.push({ op: 'role.create', role: `role-${r}`, description: '' });
    for (let p = 0; p < 3; p++) changes.push({ op: 'permission.grant', role: `role-${r}`, permission: `svc.res-${r}${p}:read` });
  }
  for (let u = 0; u < 8; u++) changes.push({ op: 'membership.add', user: `user${u}@example.com`, role: `role-${u % 3}` });
  return changes;
}

async function round(pooled: PooledStore, tenants: readonly TenantId[]): Promise<string> {
  const cpu0 = process.cpuUsage();
  const loop0 = performance.eventLoopUtilization();
  const started = performance.now();
  let next = 0;
  let wrong = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < tenants.length; i = next++) {
      const g = TenantGraph.fromImage(await pooled.loadGraph(tenants[i] as TenantId));
      if (!g.check('user1@example.com', 'svc.res-10:read')) wrong++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  if (wrong > 0) throw new Error(`${wrong} graphs answered a check wrongly`);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const loop = performance.eventLoopUtilization(loop0);
  const n = tenants.length;
  return `${Math.round(n / seconds)} graphs/s, ${Math.round((cpu.user + cpu.system) / n)} µs CPU per graph (every thread), event loop ${Math.round((loop.active * 1000) / n)} µs per graph`;
}

const dir = mkdtempSync(join(tmpdir(), 'rbac-hydrations-'));
try {
  const path = join(dir, 'rbac.sqlite3');
  const tenants = Array.from({ length: CLIENTS }, () => tenantOfKey(randomUUID()));
  await seedSqlite(path, tenants, smallClient());
  const pooled = new PooledStore({ type: 'sqlite', sqlitePath: path }, THREADS);
  try {
    await pooled.loadGraph(tenants[0] as TenantId);
    for (let r = 1; r <= 3; r++) console.log(`round ${r}: ${await round(pooled, tenants)}`);
  } finally {
    await pooled.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
