import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantGraph } from '../../../src/authz/graph.ts';
import type { Change } from '../../../src/authz/changes.ts';
import { prng } from '../../../support/prng.ts';
import { sorted } from '../../../support/rbac-model.ts';

/** The holders and known resources recomputed from scratch out of the graph's plain reads. */
function expected(g: TenantGraph, users: readonly string[], perms: readonly string[]): { holders: Map<string, string[]>; docs: string[] } {
  const holders = new Map(perms.map((p) => [p, sorted(users.filter((u) => g.userPermissions(u).includes(p)))]));
  const granted = g.roles().flatMap((r) => g.rolePermissions(r) ?? []);
  const docs = sorted(
    granted
      .filter((p) => p.startsWith('doc:') && p.indexOf(':') !== p.lastIndexOf(':'))
      .map((p) => p.slice(4, p.lastIndexOf(':')))
      .filter((id) => id !== ''),
  );
  return { holders, docs };
}

test('the holder and resource indexes equal a recomputation after every change of random sequences, bulk ones included', () => {
  for (let seed = 1; seed <= 12; seed++) {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const roles = ['a', 'b', 'c', 'd'];
    const users = Array.from({ length: 60 }, (_, i) => `u${i}`);
    const perms = ['read', 'doc:read', ...Array.from({ length: 40 }, (_, i) => `doc:d${i % 20}:${i < 20 ? 'read' : 'write'}`), 'doc::read'];
    const g = new TenantGraph();
    const apply = (c: Change): void => void g.apply([c], g.revision + 1);
    for (let step = 0; step < 400; step++) {
      const x = rnd();
      const role = pick(roles);
      if (x < 0.05) apply({ op: 'role.create', role, description: '' });
      else if (x < 0.08) apply({ op: 'role.delete', role });
      else if (x < 0.1)
        for (const u of users) apply({ op: 'membership.add', user: u, role }); // one role gains many members
      else if (x < 0.12)
        for (const p of perms) apply({ op: 'permission.grant', role, permission: p }); // and many permissions
      else if (x < 0.45) apply({ op: 'permission.grant', role, permission: pick(perms) });
      else if (x < 0.6) apply({ op: 'permission.revoke', role, permission: pick(perms) });
      else if (x < 0.85) apply({ op: 'membership.add', user: pick(users), role });
      else apply({ op: 'membership.remove', user: pick(users), role });
      if (step % 10 !== 0) continue;
      const want = expected(g, users, perms);
      for (const [p, holders] of want.holders) assert.deepEqual(g.whichUsersCan(p), holders, `seed ${seed} step ${step}: holders of ${p}`);
      assert.deepEqual(g.knownResources('doc'), want.docs, `seed ${seed} step ${step}: known docs`);
    }
  }
});
