import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantGraph } from '../../../src/authz/graph.ts';
import { pageAfter } from '../../../src/authz/page.ts';
import type { Change } from '../../../src/authz/changes.ts';
import { graphOfSnapshot, hasRole } from '../../helpers/graphs.ts';

function build(changes: Change[]): TenantGraph {
  const g = new TenantGraph();
  changes.forEach((c, i) => assert.equal(g.apply([c], i + 1), 'applied'));
  return g;
}

test('check follows user → role → permission and nothing else', () => {
  const g = build([
    { op: 'role.create', role: 'admin', description: 'A' },
    { op: 'role.create', role: 'viewer', description: '' },
    { op: 'permission.grant', role: 'admin', permission: 'write' },
    { op: 'permission.grant', role: 'viewer', permission: 'read' },
    { op: 'membership.add', user: 'alice', role: 'admin' },
    { op: 'membership.add', user: 'bob', role: 'viewer' },
  ]);
  assert.equal(g.check('alice', 'write'), true);
  assert.equal(g.check('alice', 'read'), false);
  assert.equal(g.check('bob', 'read'), true);
  assert.equal(g.check('bob', 'write'), false);
  assert.equal(g.check('carol', 'read'), false);
  assert.equal(g.check('alice', 'nope'), false);
  assert.equal(g.revision, 6);
});

test('deleting a role removes its grants and memberships, and re-creating it resurrects nothing', () => {
  const g = build([
    { op: 'role.create', role: 'admin', description: 'A' },
    { op: 'permission.grant', role: 'admin', permission: 'write' },
    { op: 'membership.add', user: 'alice', role: 'admin' },
    { op: 'role.delete', role: 'admin' },
  ]);
  assert.equal(hasRole(g, 'admin'), false);
  assert.equal(g.check('alice', 'write'), false);
  assert.deepEqual(g.whichRolesCan('write'), []);
  assert.deepEqual(g.userRoles('alice'), []);
  assert.equal(g.apply([{ op: 'role.create', role: 'admin', description: '' }], 5), 'applied');
  assert.deepEqual(g.rolePermissions('admin'), []);
  assert.deepEqual(g.members('admin'), []);
  assert.equal(g.description('admin'), '');
});

test('lists are sorted by code point, without duplicates, and follow changes', () => {
  const g = build([
    { op: 'role.create', role: 'a', description: '' },
    { op: 'role.create', role: 'Z', description: '' },
    { op: 'role.create', role: '_x', description: '' },
    { op: 'role.create', role: 'A', description: '' },
    { op: 'permission.grant', role: 'a', permission: 'p' },
    { op: 'permission.grant', role: 'Z', permission: 'p' },
    { op: 'membership.add', user: 'u', role: 'a' },
    { op: 'membership.add', user: 'u', role: 'Z' },
  ]);
  assert.deepEqual(g.roles(), ['A', 'Z', '_x', 'a']);
  assert.deepEqual(g.whichRolesCan('p'), ['Z', 'a']);
  assert.deepEqual(g.whichUsersCan('p'), ['u']);
  assert.deepEqual(g.userPermissions('u'), ['p']);
  assert.deepEqual(g.userRoles('u'), ['Z', 'a']);
  g.apply([{ op: 'membership.remove', user: 'u', role: 'Z' }], 9);
  assert.deepEqual(g.userRoles('u'), ['a']);
  g.apply([{ op: 'permission.revoke', role: 'a', permission: 'p' }], 10);
  assert.deepEqual(g.userPermissions('u'), []);
  assert.deepEqual(g.whichUsersCan('p'), []);
});

test('apply refuses stale and out-of-order revisions', () => {
  const g = build([{ op: 'role.create', role: 'r', description: '' }]);
  assert.equal(g.apply([{ op: 'role.create', role: 'x', description: '' }], 1), 'stale');
  assert.equal(g.apply([{ op: 'role.create', role: 'x', description: '' }], 3), 'gap');
  assert.equal(hasRole(g, 'x'), false);
  assert.equal(g.revision, 1);
});

test('a snapshot builds the same graph as the changes that made it', () => {
  const g = graphOfSnapshot({
    revision: 7,
    roles: [
      ['admin', 'A'],
      ['viewer', ''],
    ],
    grants: [
      ['admin', 'write'],
      ['viewer', 'read'],
      ['admin', 'read'],
    ],
    memberships: [
      ['alice', 'admin'],
      ['bob', 'viewer'],
    ],
    windows: [],
  });
  assert.equal(g.revision, 7);
  assert.deepEqual(g.userPermissions('alice'), ['read', 'write']);
  assert.deepEqual(g.whichUsersCan('read'), ['alice', 'bob']);
  assert.equal(g.roleHasPermission('viewer', 'write'), false);
  assert.equal(g.roleHasPermission('ghost', 'write'), undefined);
  assert.equal(g.isMember('bob', 'viewer'), true);
  assert.equal(g.isMember('bob', 'ghost'), undefined);
});

test('the size estimate grows with content and shrinks back when it goes', () => {
  const g = new TenantGraph();
  const empty = g.estimatedBytes;
  let rev = 0;
  g.apply([{ op: 'role.create', role: 'r', description: 'd'.repeat(100) }], ++rev);
  for (let i = 0; i < 100; i++) g.apply([{ op: 'membership.add', user: `user${i}`, role: 'r' }], ++rev);
  for (let i = 0; i < 50; i++) g.apply([{ op: 'permission.grant', role: 'r', permission: `perm${i}` }], ++rev);
  assert.ok(g.estimatedBytes > empty + 100 * 64);
  g.apply([{ op: 'role.delete', role: 'r' }], ++rev);
  assert.equal(g.estimatedBytes, empty);
});

test('ids are reused after churn, and names stay correct', () => {
  const g = new TenantGraph();
  let rev = 0;
  for (let round = 0; round < 3; round++) {
    g.apply([{ op: 'role.create', role: `r${round}`, description: '' }], ++rev);
    g.apply([{ op: 'permission.grant', role: `r${round}`, permission: `p${round}` }], ++rev);
    g.apply([{ op: 'membership.add', user: `u${round}`, role: `r${round}` }], ++rev);
    if (round > 0) g.apply([{ op: 'role.delete', role: `r${round - 1}` }], ++rev);
  }
  assert.deepEqual(g.roles(), ['r2']);
  assert.equal(g.check('u2', 'p2'), true);
  assert.equal(g.check('u1', 'p1'), false);
  assert.deepEqual(g.userPermissions('u2'), ['p2']);
});

test('pageAfter pages by key', () => {
  const list = ['a', 'b', 'c', 'd', 'e'];
  assert.deepEqual(pageAfter(list, undefined, undefined), { items: list, after: undefined });
  assert.deepEqual(pageAfter(list, undefined, 2), { items: ['a', 'b'], after: 'b' });
  assert.deepEqual(pageAfter(list, 'b', 2), { items: ['c', 'd'], after: 'd' });
  assert.deepEqual(pageAfter(list, 'd', 2), { items: ['e'], after: undefined });
  assert.deepEqual(pageAfter(list, 'bb', 10), { items: ['c', 'd', 'e'], after: undefined });
  assert.deepEqual(pageAfter(list, 'e', 1), { items: [], after: undefined });
  assert.deepEqual(pageAfter(list, undefined, 5), { items: list, after: undefined });
});
