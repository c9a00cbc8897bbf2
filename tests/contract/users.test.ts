/**
 * Users (docs/api.md §2): memberships (add, check, list, remove, 409 and 404) and the queries by
 * user and by permission (has_permission, user_permissions, user_roles, which_users_can,
 * which_roles_can), against the real server.
 */
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRoleMissing, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Memberships
// ---------------------------------------------------------------------------------------------

describe('memberships', () => {
  test('add, check, list, remove', async () => {
    const c = fresh();
    expectOk(await c.createRole('viewer'), 201);
    const a = await c.addMember('alice@example.com', 'viewer');
    assert.deepEqual(expectOk(a, 201), { user: 'alice@example.com', role: 'viewer', revision: 2 });
    expectRev(a, 2);
    const b = await c.request('POST', '/api/membership/Bob/viewer', { body: {} });
    assert.deepEqual(expectOk(b, 201), { user: 'Bob', role: 'viewer', revision: 3 });
    const b2 = await c.request('POST', '/api/membership/bob/viewer', { rawBody: '', contentType: 'text/plain' });
    assert.deepEqual(expectOk(b2, 201), { user: 'bob', role: 'viewer', revision: 4 });

    const is = await c.isMember('alice@example.com', 'viewer');
    assert.deepEqual(expectOk(is), { is_member: true });
    expectRev(is, 4);
    assert.deepEqual(expectOk(await c.isMember('carol', 'viewer')), { is_member: false });
    assert.deepEqual(expectOk(await c.isMember('BOB', 'viewer')), { is_member: false });

    const members = await c.members('viewer');
    assert.deepEqual(expectOk(members), [{ user: 'Bob' }, { user: 'alice@example.com' }, { user: 'bob' }]);
    expectRev(members, 4);
    for (const item of expectOk(members)) assert.deepEqual(Object.keys(item), ['user']);

    const r = await c.removeMember('alice@example.com', 'viewer');
    assert.deepEqual(expectOk(r), { user: 'alice@example.com', role: 'viewer', revision: 5 });
    expectRev(r, 5);
    assert.deepEqual(expectOk(await c.isMember('alice@example.com', 'viewer')), { is_member: false });
    assert.deepEqual(expectOk(await c.members('viewer')), [{ user: 'Bob' }, { user: 'bob' }]);
  });

  test('adding twice is 409 naming the user; removing twice is 404 naming the user', async () => {
    const c = fresh();
    expectOk(await c.createRole('viewer'), 201);
    expectOk(await c.addMember('alice', 'viewer'), 201);
    const dup = await c.addMember('alice', 'viewer');
    expectErr(dup, 409, 'alice');
    expectRev(dup, 2);
    expectOk(await c.removeMember('alice', 'viewer'));
    const again = await c.removeMember('alice', 'viewer');
    expectErr(again, 404, 'alice');
    expectRev(again, 3);
    const never = await c.removeMember('nobody', 'viewer');
    expectErr(never, 404, 'nobody');
    assert.equal(await revisionOf(c), 3);
  });

  test('every membership route on a missing role is 404 naming the role', async () => {
    const c = fresh();
    expectOk(await c.createRole('present'), 201);
    expectOk(await c.addMember('alice', 'present'), 201);
    for (const res of [
      await c.addMember('alice', 'ghost'),
      await c.removeMember('alice', 'ghost'),
      await c.isMember('alice', 'ghost'),
      await c.members('ghost'),
      await c.members('ghost', { limit: 2 }),
    ]) {
      expectRoleMissing(res, 'ghost');
      expectRev(res, 2);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// User and permission queries
// ---------------------------------------------------------------------------------------------

describe('user and permission queries', () => {
  let c: RbacClient;
  let rev = 0;

  before(async () => {
    c = fresh();
    await seedRole(c, 'admin', ['read', 'write', 'delete'], ['alice']);
    await seedRole(c, 'editor', ['read', 'write'], ['alice', 'carol']);
    await seedRole(c, 'viewer', ['read'], ['bob', 'carol']);
    await seedRole(c, 'orphan', ['audit']);
    await seedRole(c, 'empty', [], ['dave']);
    rev = await revisionOf(c);
    assert.equal(rev, 5 + 5 + 4 + 2 + 2);
  });

  test('has_permission through any role; unknown user or permission is false', async () => {
    const cases: Array<[string, string, boolean]> = [
      ['alice', 'delete', true],
      ['alice', 'read', true],
      ['carol', 'write', true],
      ['bob', 'write', false],
      ['bob', 'read', true],
      ['dave', 'read', false],
      ['nobody', 'read', false],
      ['alice', 'nothing', false],
      ['alice', 'audit', false],
      ['Alice', 'read', false],
      ['alice', 'READ', false],
    ];
    for (const [user, permission, expected] of cases) {
      const res = await c.hasPermission(user, permission);
      assert.deepEqual(expectOk(res), { has_permission: expected }, `${user} ${permission}`);
      expectRev(res, rev);
    }
  });

  test('user_permissions: union over roles, deduplicated, sorted; unknown user []', async () => {
    const cases: Array<[string, string[]]> = [
      ['alice', ['delete', 'read', 'write']],
      ['carol', ['read', 'write']],
      ['bob', ['read']],
      ['dave', []],
      ['nobody', []],
    ];
    for (const [user, expected] of cases) {
      const res = await c.userPermissions(user);
      assert.deepEqual(
        expectOk(res),
        expected.map((name) => ({ name })),
        user,
      );
      expectRev(res, rev);
      assert.equal(res.nextCursor, undefined);
    }
  });

  test('user_roles: sorted; unknown user []', async () => {
    const cases: Array<[string, string[]]> = [
      ['alice', ['admin', 'editor']],
      ['carol', ['editor', 'viewer']],
      ['dave', ['empty']],
      ['nobody', []],
    ];
    for (const [user, expected] of cases) {
      const res = await c.userRoles(user);
      assert.deepEqual(
        expectOk(res),
        expected.map((role) => ({ role })),
        user,
      );
      expectRev(res, rev);
    }
  });

  test('which_users_can: deduplicated, sorted; unknown permission []', async () => {
    const cases: Array<[string, string[]]> = [
      ['read', ['alice', 'bob', 'carol']],
      ['write', ['alice', 'carol']],
      ['delete', ['alice']],
      ['audit', []],
      ['nothing', []],
    ];
    for (const [permission, expected] of cases) {
      const res = await c.whichUsersCan(permission);
      assert.deepEqual(
        expectOk(res),
        expected.map((user) => ({ user })),
        permission,
      );
      expectRev(res, rev);
    }
  });

  test('which_roles_can: sorted; unknown permission []', async () => {
    const cases: Array<[string, string[]]> = [
      ['read', ['admin', 'editor', 'viewer']],
      ['write', ['admin', 'editor']],
      ['audit', ['orphan']],
      ['nothing', []],
    ];
    for (const [permission, expected] of cases) {
      const res = await c.whichRolesCan(permission);
      assert.deepEqual(
        expectOk(res),
        expected.map((role) => ({ role })),
        permission,
      );
      expectRev(res, rev);
    }
  });

  test('queries never 404 for unknown names, also on an empty tenant', async () => {
    const e = fresh();
    for (const res of [
      (await e.hasPermission('u', 'p')) as ApiResult<unknown>,
      await e.userPermissions('u'),
      await e.userRoles('u'),
      await e.whichUsersCan('p'),
      await e.whichRolesCan('p'),
    ]) {
      expectOk(res);
      expectRev(res, 0);
    }
  });

  test('revoking and removing update the queries', async () => {
    const d = fresh();
    await seedRole(d, 'r1', ['p'], ['u']);
    await seedRole(d, 'r2', ['p'], ['u']);
    expectOk(await d.revoke('r1', 'p'));
    assert.deepEqual(expectOk(await d.hasPermission('u', 'p')), { has_permission: true });
    assert.deepEqual(expectOk(await d.whichRolesCan('p')), [{ role: 'r2' }]);
    expectOk(await d.removeMember('u', 'r2'));
    assert.deepEqual(expectOk(await d.hasPermission('u', 'p')), { has_permission: false });
    assert.deepEqual(expectOk(await d.userPermissions('u')), []);
    assert.deepEqual(expectOk(await d.userRoles('u')), [{ role: 'r1' }]);
    assert.deepEqual(expectOk(await d.whichUsersCan('p')), []);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 80);
