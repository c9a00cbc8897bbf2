/**
 * Windows on grants and memberships in the graph (docs/api.md §12.1), against the reference
 * model, on a clock moved by hand: random changes, some with windows, and after each, reads at
 * random instants before, between and after the bounds. Every read counts the edges active at the
 * instant it is answered, whether or not a boundary change has come; the graph made from the
 * model's snapshot (a hydration) answers the same as the one the changes were applied to.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TenantGraph } from '../../../src/authz/graph.ts';
import { imageOfSnapshot } from '../../../src/authz/graph-image.ts';
import { windowBetween, type Change } from '../../../src/authz/changes.ts';
import { RbacModel } from '../../../support/rbac-model.ts';

const ROLES = ['a', 'b', 'c'];
const PERMS = ['p', 'q', 'r:1:read'];
const USERS = ['u', 'v', 'w'];
/** Instants (µs) the windows and the reads choose among: bounds fall between reads and on them. */
const TIMES = [0, 10, 20, 30, 40, 50];

const windowArb = fc
  .tuple(fc.option(fc.constantFrom(...TIMES), { nil: undefined }), fc.option(fc.constantFrom(...TIMES), { nil: undefined }))
  .map(([nb, ea]) => (nb !== undefined && ea !== undefined && ea <= nb ? windowBetween(nb, undefined) : windowBetween(nb, ea)) ?? {});

const role = fc.constantFrom(...ROLES);
const changeArb: fc.Arbitrary<Change> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ op: fc.constant('role.create' as const), role, description: fc.constant('') }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('role.delete' as const), role }) },
  {
    weight: 4,
    arbitrary: fc.tuple(role, fc.constantFrom(...PERMS), windowArb).map(([r, p, w]): Change => ({ op: 'permission.grant', role: r, permission: p, ...w })),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(role, fc.constantFrom(...PERMS), windowArb).map(([r, p, w]): Change => ({ op: 'permission.window', role: r, permission: p, ...w })),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('permission.revoke' as const), role, permission: fc.constantFrom(...PERMS) }) },
  { weight: 5, arbitrary: fc.tuple(fc.constantFrom(...USERS), role, windowArb).map(([u, r, w]): Change => ({ op: 'membership.add', user: u, role: r, ...w })) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...USERS), role, windowArb).map(([u, r, w]): Change => ({ op: 'membership.window', user: u, role: r, ...w })),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('membership.remove' as const), user: fc.constantFrom(...USERS), role }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(role, fc.constantFrom(...PERMS), fc.constantFrom(...TIMES))
      .map(([r, p, t]): Change => ({ op: 'permission.expire', role: r, permission: p, expiresAt: t })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(role, fc.constantFrom(...PERMS), fc.constantFrom(...TIMES))
      .map(([r, p, t]): Change => ({ op: 'permission.activate', role: r, permission: p, notBefore: t })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...USERS), role, fc.constantFrom(...TIMES))
      .map(([u, r, t]): Change => ({ op: 'membership.expire', user: u, role: r, expiresAt: t })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...USERS), role, fc.constantFrom(...TIMES))
      .map(([u, r, t]): Change => ({ op: 'membership.activate', user: u, role: r, notBefore: t })),
  },
);

/** A change as the store would commit it: refused ones (a missing role, an edge that exists) are skipped, as the store refuses them. */
function committable(m: RbacModel, c: Change): boolean {
  const state = m.roles.get(c.role);
  if (c.op === 'role.create') return state === undefined;
  if (state === undefined) return false;
  if (c.op === 'permission.grant') return !state.perms.has(c.permission);
  if (c.op === 'membership.add') return !state.members.has(c.user);
  if (c.op === 'permission.revoke') return state.perms.has(c.permission);
  if (c.op === 'membership.remove') return state.members.has(c.user);
  return true;
}

/** Every read of the graph equals the model's at the instant both clocks say. */
function sameReads(g: TenantGraph, m: RbacModel, when: string): void {
  assert.deepEqual(g.roles(), m.roleNames(), when);
  for (const r of ROLES) {
    if (!m.roles.has(r)) continue;
    assert.deepEqual(
      g.rolePermissions(r),
      m.rolePermissions(r).map((x) => x.name),
      `${when}: role_permissions ${r}`,
    );
    assert.deepEqual(
      g.members(r),
      m.members(r).map((x) => x.user),
      `${when}: members ${r}`,
    );
    for (const u of USERS) {
      assert.equal(g.isMember(u, r), m.activeMembers(r).includes(u), `${when}: is_member ${u} ${r}`);
      assert.deepEqual(g.memberEdge(u, r), m.roles.get(r)?.members.has(u) ? (m.memberWindow(u, r) ?? {}) : undefined, `${when}: window ${u} ${r}`);
    }
    for (const p of PERMS) assert.equal(g.roleHasPermission(r, p), m.activePerms(r).includes(p), `${when}: permission ${r} ${p}`);
  }
  for (const u of USERS) {
    assert.deepEqual(g.userRoles(u), m.userRoleNames(u), `${when}: user_roles ${u}`);
    assert.deepEqual(g.userPermissions(u), m.userPermissionNames(u), `${when}: user_permissions ${u}`);
    for (const p of PERMS) assert.equal(g.check(u, p), m.hasPermission(u, p), `${when}: check ${u} ${p}`);
  }
  for (const p of PERMS) {
    assert.deepEqual(g.whichUsersCan(p), m.userNamesWith(p), `${when}: which_users_can ${p}`);
    assert.deepEqual(g.whichRolesCan(p), m.roleNamesWith(p), `${when}: which_roles_can ${p}`);
  }
  assert.deepEqual(g.knownResources('r'), m.permissionNames().includes('r:1:read') ? ['1'] : [], `${when}: known resources`);
}

test('reads count the edges active at the instant they are answered, on a graph changed and on one hydrated', () => {
  fc.assert(
    fc.property(
      fc.array(changeArb, { minLength: 10, maxLength: 60 }),
      fc.array(fc.constantFrom(...TIMES, 5, 15, 25, 35, 45, 55), { minLength: 3, maxLength: 6 }),
      (changes, instants) => {
        let now = 0;
        const clock = (): number => now;
        const m = new RbacModel();
        m.clock = clock;
        const g = new TenantGraph(0, undefined, clock);
        for (const c of changes) {
          if (!committable(m, c)) continue;
          m.apply(c);
          assert.equal(g.apply([c], m.revision), 'applied');
          // Reads at several instants, memoised lists included: a bound passing makes them again.
          for (const t of instants) {
            now = t;
            sameReads(g, m, `after ${c.op} at ${t}`);
          }
        }
        const hydrated = TenantGraph.fromImage(imageOfSnapshot(m.snapshot()), clock);
        for (const t of instants) {
          now = t;
          sameReads(hydrated, m, `hydrated at ${t}`);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('a check one microsecond after expires_at is false, and at not_before true, with no change applied in between', () => {
  let now = 1_000;
  const g = new TenantGraph(0, undefined, () => now);
  g.apply([{ op: 'role.create', role: 'oncall', description: '' }], 1);
  g.apply([{ op: 'permission.grant', role: 'oncall', permission: 'page' }], 2);
  g.apply([{ op: 'membership.add', user: 'ann', role: 'oncall', notBefore: 2_000, expiresAt: 3_000 }], 3);
  assert.equal(g.check('ann', 'page'), false, 'pending');
  assert.deepEqual(g.members('oncall'), []);
  now = 2_000;
  assert.equal(g.check('ann', 'page'), true, 'active at not_before');
  assert.deepEqual(g.members('oncall'), ['ann'], 'the memoised list was made again when the bound passed');
  now = 2_999;
  assert.equal(g.check('ann', 'page'), true);
  now = 3_000;
  assert.equal(g.check('ann', 'page'), false, 'inactive at expires_at');
  assert.deepEqual(g.whichUsersCan('page'), []);
  assert.equal(g.hasWindows, true);
  g.apply([{ op: 'membership.expire', user: 'ann', role: 'oncall', expiresAt: 3_000 }], 4);
  assert.equal(g.hasWindows, false, 'the last window went with its edge: the plain check loop again');
  assert.equal(g.memberEdge('ann', 'oncall'), undefined);
});

test('a boundary change whose bound was replaced in the meantime changes nothing', () => {
  const now = 0;
  const g = new TenantGraph(0, undefined, () => now);
  g.apply([{ op: 'role.create', role: 'r', description: '' }], 1);
  g.apply([{ op: 'membership.add', user: 'u', role: 'r', expiresAt: 100 }], 2);
  g.apply([{ op: 'membership.window', user: 'u', role: 'r', expiresAt: 500 }], 3);
  g.apply([{ op: 'membership.expire', user: 'u', role: 'r', expiresAt: 100 }], 4);
  assert.deepEqual(g.memberEdge('u', 'r'), { expiresAt: 500 });
  g.apply([{ op: 'membership.window', user: 'u', role: 'r' }], 5);
  assert.deepEqual(g.memberEdge('u', 'r'), {}, 'an empty window makes the edge permanent');
  assert.equal(g.hasWindows, false);
});

test('a write request of many changes applies whole at one revision', () => {
  const g = new TenantGraph(0);
  const batch: Change[] = [
    { op: 'role.create', role: 'r', description: 'x' },
    { op: 'permission.grant', role: 'r', permission: 'p' },
    { op: 'membership.add', user: 'u', role: 'r' },
  ];
  assert.equal(g.apply(batch, 1), 'applied');
  assert.equal(g.revision, 1);
  assert.equal(g.check('u', 'p'), true);
  assert.equal(g.apply(batch, 1), 'stale');
  assert.equal(g.apply(batch, 3), 'gap');
});
