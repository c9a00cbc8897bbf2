/**
 * The compact graph against the reference model (support/rbac-model.ts): random sequences of every change (deletes and
 * re-creations of the same names included, bulk ones that leave the buffers enough garbage to
 * compact), after which every read the routes make must equal the model's answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MessageChannel } from 'node:worker_threads';
import { TenantGraph } from '../../../src/authz/graph.ts';
import { buffersOf, imageOfSnapshot, type GraphImage } from '../../../src/authz/graph-image.ts';
import { Adjacency } from '../../../src/authz/adjacency.ts';
import { NameTable } from '../../../src/authz/name-table.ts';
import { knownResourceIds } from '../../../src/authz/resources.ts';
import type { Change } from '../../../src/authz/changes.ts';
import { knownResources } from '../../helpers/authzen-model.ts';
import { byCodePoint, RbacModel, sorted } from '../../../support/rbac-model.ts';
import { graphOfSnapshot, hasRole } from '../../helpers/graphs.ts';

/** Every read compared with the model, over the whole universe of names (known or not). */
function assertSame(g: TenantGraph, m: RbacModel, users: readonly string[], roles: readonly string[], perms: readonly string[]): void {
  assert.deepEqual(g.roles(), m.roleNames());
  for (const role of roles) {
    const r = m.roles.get(role);
    assert.equal(hasRole(g, role), r !== undefined);
    assert.equal(g.description(role), r?.description);
    assert.deepEqual(g.members(role), r && sorted(r.members), `members of ${role}`);
    assert.deepEqual(g.rolePermissions(role), r && sorted(r.perms));
    assert.equal(g.permissionCount(role), r?.perms.size);
  }
  for (const user of users) {
    const mine = m.userPermissionNames(user);
    assert.deepEqual(g.userRoles(user), m.userRoleNames(user));
    assert.deepEqual(g.userPermissions(user), mine);
    assert.equal(g.hasUser(user), m.userRoleNames(user).length > 0);
    for (const p of perms) assert.equal(g.check(user, p), mine.includes(p), `check ${user} ${p}`);
    for (const role of roles) assert.equal(g.isMember(user, role), m.roles.has(role) ? m.roles.get(role)?.members.has(user) : undefined);
  }
  for (const p of perms) {
    assert.deepEqual(g.whichRolesCan(p), m.roleNamesWith(p));
    assert.deepEqual(g.whichUsersCan(p), m.userNamesWith(p), `holders of ${p}`);
  }
  for (const type of ['doc', 'img', 'x']) assert.deepEqual(g.knownResources(type), knownResources(m, type));
}

const ROLES = ['a', 'B', 'c_1', 'd.d', 'zz'];
const PERMS = ['read', 'doc:read', 'doc:d1:read', 'doc:d1:write', 'doc:d2:x:read', 'doc::read', 'img:i1:view', 'x:y'];
// Mixed lengths and cases so that name order differs from id order after churn; one beyond Latin-1.
const USERS = ['u1', 'u10', 'u2', 'U3', 'alice@example.com', 'bob', 'b', 'zed', 'carol|x', 'é', 'Ω-user'];

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('role.create' as const),
      role: fc.constantFrom(...ROLES),
      description: fc.constantFrom('', 'd', 'long description'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('role.delete' as const), role: fc.constantFrom(...ROLES) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('permission.grant' as const), role: fc.constantFrom(...ROLES), permission: fc.constantFrom(...PERMS) }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('permission.revoke' as const), role: fc.constantFrom(...ROLES), permission: fc.constantFrom(...PERMS) }),
  },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('membership.add' as const), user: fc.constantFrom(...USERS), role: fc.constantFrom(...ROLES) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('membership.remove' as const), user: fc.constantFrom(...USERS), role: fc.constantFrom(...ROLES) }) },
);

test('the compact graph answers every read as the brute-force model does, through random changes', () => {
  fc.assert(
    fc.property(fc.array(changeArb, { minLength: 20, maxLength: 120 }), (changes) => {
      const g = new TenantGraph();
      const m = new RbacModel();
      changes.forEach((c, i) => {
        assert.equal(g.apply([c], i + 1), 'applied');
        m.applyLeniently(c);
        if (i % 15 === 14) assertSame(g, m, USERS, ROLES, PERMS);
      });
      assertSame(g, m, USERS, ROLES, PERMS);
      // A snapshot of the model builds the same graph as the changes did.
      assert.equal(m.revision, g.revision);
      assertSame(graphOfSnapshot(m.snapshot()), m, USERS, ROLES, PERMS);
    }),
    { seed: 2201, numRuns: 150 },
  );
});

/** An image carried through a real message port with its buffers moved, as a pool thread sends it. */
function moved(image: GraphImage): Promise<GraphImage> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port2.once('message', (m: GraphImage) => {
      port1.close();
      resolve(m);
    });
    port1.postMessage(image, buffersOf(image));
  });
}

test('a graph built from a snapshot, moved to another port as its buffers and adopted, answers as the model and takes changes after', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(changeArb, { minLength: 20, maxLength: 120 }), fc.array(changeArb, { maxLength: 30 }), async (before, after) => {
      const m = new RbacModel();
      for (const c of before) m.applyLeniently(c);
      const image = imageOfSnapshot(m.snapshot());
      assert.deepEqual(buffersOf(image), [image.buffer], 'every array of the image is packed into one buffer');
      // Adopted and changed before anything is read (a small image leaves relations to be made).
      const unread = TenantGraph.fromImage(imageOfSnapshot(m.snapshot()));
      const g = TenantGraph.fromImage(await moved(image));
      assert.equal(image.buffer.byteLength, 0, 'the sender no longer holds the buffer');
      assertSame(g, m, USERS, ROLES, PERMS);
      after.forEach((c, i) => {
        assert.equal(g.apply([c], m.revision + i + 1), 'applied');
        assert.equal(unread.apply([c], m.revision + i + 1), 'applied');
      });
      for (const c of after) m.applyLeniently(c);
      assertSame(g, m, USERS, ROLES, PERMS);
      assertSame(unread, m, USERS, ROLES, PERMS);
    }),
    { seed: 2203, numRuns: 60 },
  );
});

test("an image carries the reverse relations of a large graph and leaves out a small one's; both answer every list and change alike", async () => {
  for (const users of [6, 700]) {
    const m = new RbacModel();
    for (const role of ROLES) m.applyLeniently({ op: 'role.create', role, description: '' });
    ROLES.forEach((role, r) => PERMS.forEach((permission, p) => (r + p) % 2 === 0 && m.applyLeniently({ op: 'permission.grant', role, permission })));
    const names = Array.from({ length: users }, (_, u) => `user${(u * 7919) % users}`);
    names.forEach((user, u) => [0, 2].forEach((k) => m.applyLeniently({ op: 'membership.add', user, role: ROLES[(u + k) % ROLES.length] as string })));
    const image = imageOfSnapshot(m.snapshot());
    const g = TenantGraph.fromImage(await moved(image));
    // A twin adopted from the same rows takes the changes before any list is asked of it.
    const twin = TenantGraph.fromImage(imageOfSnapshot(m.snapshot()));
    assertSame(g, m, names.slice(0, 40), ROLES, PERMS);
    const next = [
      { op: 'membership.add', user: 'late', role: 'a' },
      { op: 'permission.revoke', role: 'a', permission: PERMS[0] as string },
      { op: 'role.delete', role: 'c_1' },
    ] as const;
    next.forEach((c, i) => assert.equal(g.apply([c], m.revision + i + 1), 'applied'));
    next.forEach((c, i) => assert.equal(twin.apply([c], m.revision + i + 1), 'applied'));
    for (const c of next) m.applyLeniently(c);
    assertSame(g, m, [...names.slice(0, 40), 'late'], ROLES, PERMS);
    assertSame(twin, m, [...names.slice(0, 40), 'late'], ROLES, PERMS);
  }
});

test('bulk churn past the compaction thresholds keeps every answer (buffers compacted, ids and names reused)', () => {
  const g = new TenantGraph();
  const m = new RbacModel();
  let rev = 0;
  const apply = (c: Change): void => {
    assert.equal(g.apply([c], ++rev), 'applied');
    m.applyLeniently(c);
  };
  const users = Array.from({ length: 400 }, (_, i) => `user-${(i * 7919) % 400}-${'x'.repeat(i % 13)}`);
  const perms = Array.from({ length: 30 }, (_, i) => `doc:d${i}:read`);
  const sample = [...users.slice(0, 25), 'nobody'];
  for (let round = 0; round < 8; round++) {
    for (const role of ROLES) apply({ op: 'role.create', role, description: `round ${round}` });
    ROLES.forEach((role, k) => {
      for (let i = k; i < perms.length; i += 2) apply({ op: 'permission.grant', role, permission: perms[i] as string });
      for (let i = (k + round) % 3; i < users.length; i += 1 + k) apply({ op: 'membership.add', user: users[i] as string, role });
    });
    for (let i = round % 5; i < users.length; i += 5) apply({ op: 'membership.remove', user: users[i] as string, role: ROLES[round % ROLES.length] as string });
    for (let i = 0; i < perms.length; i += 3)
      apply({ op: 'permission.revoke', role: ROLES[(round + 1) % ROLES.length] as string, permission: perms[i] as string });
    assertSame(g, m, sample, ROLES, perms);
    for (const p of perms) assert.deepEqual(g.whichUsersCan(p), m.userNamesWith(p));
    apply({ op: 'role.delete', role: ROLES[round % ROLES.length] as string });
    if (round % 3 === 2) for (const role of ROLES) apply({ op: 'role.delete', role });
    assertSame(g, m, sample, ROLES, perms);
  }
});

test('an adjacency patched, cleared and compacted at random equals plain sorted arrays', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(9), fc.nat(60), fc.nat(99)), { minLength: 200, maxLength: 2000 }), (ops) => {
      const a = new Adjacency();
      a.ensureNodes(10);
      const model = Array.from({ length: 10 }, () => new Set<number>());
      for (const [node, value, dice] of ops) {
        const set = model[node] as Set<number>;
        if (dice < 55) {
          assert.equal(a.insertSorted(node, value), !set.has(value));
          set.add(value);
        } else if (dice < 90) assert.equal(a.removeSorted(node, value), set.delete(value));
        else if (dice < 97) {
          a.clear(node);
          set.clear();
        } else a.compact();
      }
      model.forEach((set, node) =>
        assert.deepEqual(
          [...a.copyOf(node)],
          [...set].sort((x, y) => x - y),
        ),
      );
    }),
    { seed: 2202, numRuns: 60 },
  );
});

test('a tight adjacency (segments back to back, no capacities) takes inserts, removals and clears as any other', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(9), fc.nat(60), fc.nat(99)), { minLength: 50, maxLength: 600 }), (ops) => {
      let a = new Adjacency();
      a.ensureNodes(10);
      const model = Array.from({ length: 10 }, () => new Set<number>());
      ops.forEach(([node, value, dice], i) => {
        const set = model[node] as Set<number>;
        // Every 40 operations the relation is packed tight and adopted again, as a hydration's image is.
        if (i % 40 === 39) a = Adjacency.fromState(a.tightState());
        if (dice < 60) {
          assert.equal(a.insertSorted(node, value), !set.has(value));
          set.add(value);
        } else if (dice < 92) assert.equal(a.removeSorted(node, value), set.delete(value));
        else {
          a.clear(node);
          set.clear();
        }
      });
      a.ensureNodes(12);
      assert.equal(a.insertSorted(11, 5), true);
      model.forEach((set, node) =>
        assert.deepEqual(
          [...a.copyOf(node)],
          [...set].sort((x, y) => x - y),
        ),
      );
      assert.deepEqual([...a.copyOf(11)], [5]);
    }),
    { seed: 2204, numRuns: 60 },
  );
});

test('a name table interns, finds, orders and releases names as a Map would, and compacts its characters', () => {
  const t = new NameTable<number>();
  const model = new Map<string, number>();
  for (let i = 0; i < 6000; i++) {
    const name = `n${(i * 37) % 1500}-${'y'.repeat(i % 7)}`;
    if (i % 3 === 2 && model.has(name)) {
      t.release(model.get(name) as number);
      model.delete(name);
    } else model.set(name, t.intern(name));
  }
  assert.equal(t.size, model.size);
  for (const [name, id] of model) {
    assert.equal(t.id(name), id);
    assert.equal(t.name(id), name);
  }
  assert.equal(t.id('absent'), undefined);
  const ids = [...model.values()];
  const byTable = [...ids].sort((x, y) => t.compare(x, y)).map((id) => t.name(id));
  assert.deepEqual(byTable, [...model.keys()].sort(byCodePoint));
  assert.deepEqual(knownResourceIds(new NameTable(), 'doc'), []);
});
