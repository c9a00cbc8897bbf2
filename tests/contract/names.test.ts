/**
 * Names in paths (docs/api.md §4) against the real server: every allowed character and 128
 * characters round-trip, segments are percent-decoded once, and a bad name is 400 naming its
 * field on every route.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRoleMissing, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import { sorted } from '../../support/rbac-model.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

describe('names', () => {
  test('every allowed character and 128-character names round-trip', async () => {
    const c = fresh();
    const role = 'Az09_-.:@+|';
    const perm = `${'p'.repeat(120)}.:@+|-_9`;
    const user = 'u'.repeat(128);
    const longRole = 'R'.repeat(128);
    assert.equal(perm.length, 128);
    assert.deepEqual(expectOk(await c.createRole(role), 201), { role, description: '', revision: 1 });
    assert.deepEqual(expectOk(await c.createRole(longRole), 201), { role: longRole, description: '', revision: 2 });
    assert.deepEqual(expectOk(await c.grant(role, perm), 201), { role, permission: perm, revision: 3 });
    assert.deepEqual(expectOk(await c.addMember(user, longRole), 201), { user, role: longRole, revision: 4 });
    expectOk(await c.addMember(user, role), 201);
    assert.deepEqual(
      expectOk(await c.listRoles()),
      sorted([role, longRole]).map((r) => ({ role: r, description: '' })),
    );
    assert.deepEqual(expectOk(await c.rolePermissions(role)), [{ name: perm }]);
    assert.deepEqual(expectOk(await c.members(longRole)), [{ user }]);
    assert.deepEqual(expectOk(await c.hasPermission(user, perm)), { has_permission: true });
    assert.deepEqual(expectOk(await c.whichUsersCan(perm)), [{ user }]);
    assert.deepEqual(
      expectOk(await c.userRoles(user)),
      sorted([role, longRole]).map((r) => ({ role: r })),
    );
  });

  test('129-character names are 400 naming the field', async () => {
    const c = fresh();
    const long = 'n'.repeat(129);
    expectErr(await c.createRole(long), 400, 'role');
    expectErr(await c.grant('r', long), 400, 'permission');
    expectErr(await c.addMember(long, 'r'), 400, 'user');
    assert.equal(await revisionOf(c), 0);
  });

  test('path segments are percent-decoded once; unreserved delimiters are literal', async () => {
    const c = fresh();
    const created = await c.request('POST', '/api/role/%41dmin');
    assert.deepEqual(expectOk(created, 201), { role: 'Admin', description: '', revision: 1 });
    assert.deepEqual(expectOk(await c.rolePermissions('Admin')), []);
    expectErr(await c.request('POST', '/api/role/Admin'), 409, 'Admin');
    // Lower-case hex digits too.
    assert.deepEqual(expectOk(await c.request('POST', '/api/role/%4a%4B'), 201), { role: 'JK', description: '', revision: 2 });
    // Case-sensitive: 'admin' is another role.
    expectRoleMissing(await c.request('GET', '/api/role_permissions/%61dmin'), 'admin');
    assert.deepEqual(expectOk(await c.createRole('admin'), 201), { role: 'admin', description: '', revision: 3 });
    // '+' is a literal plus, not a space; ':' '@' '|' unencoded are accepted.
    assert.deepEqual(expectOk(await c.request('POST', '/api/role/a+b'), 201), { role: 'a+b', description: '', revision: 4 });
    assert.deepEqual(expectOk(await c.request('POST', '/api/permission/a+b/x:y@z|w'), 201), { role: 'a+b', permission: 'x:y@z|w', revision: 5 });
    assert.deepEqual(expectOk(await c.request('POST', '/api/membership/alice@example.com/a%2Bb'), 201), {
      user: 'alice@example.com',
      role: 'a+b',
      revision: 6,
    });
    assert.deepEqual(expectOk(await c.hasPermission('alice@example.com', 'x:y@z|w')), { has_permission: true });
    assert.deepEqual(expectOk(await c.request('GET', '/api/has_permission/alice%40example.com/x%3Ay%40z%7Cw')), { has_permission: true });
    // Double encoding decodes once: %2541 is '%41', which is not a valid name.
    expectErr(await c.request('POST', '/api/role/%2541'), 400, 'role');
    assert.deepEqual(
      expectOk(await c.listRoles()).map((r) => r.role),
      ['Admin', 'JK', 'a+b', 'admin'],
    );
  });

  test('bad names are 400 naming the field, on every route', async () => {
    const c = fresh();
    await seedRole(c, 'r', ['p'], ['u']);
    const rev = await revisionOf(c);
    const bad = '%zz';
    const cases: Array<[string, string, string]> = [
      ['POST', `/api/role/${bad}`, 'role'],
      ['DELETE', `/api/role/${bad}`, 'role'],
      ['GET', `/api/permission/${bad}/p`, 'role'],
      ['GET', `/api/permission/r/${bad}`, 'permission'],
      ['POST', `/api/permission/${bad}/p`, 'role'],
      ['POST', `/api/permission/r/${bad}`, 'permission'],
      ['DELETE', `/api/permission/${bad}/p`, 'role'],
      ['DELETE', `/api/permission/r/${bad}`, 'permission'],
      ['GET', `/api/role_permissions/${bad}`, 'role'],
      ['GET', `/api/membership/${bad}/r`, 'user'],
      ['GET', `/api/membership/u/${bad}`, 'role'],
      ['POST', `/api/membership/${bad}/r`, 'user'],
      ['POST', `/api/membership/u/${bad}`, 'role'],
      ['DELETE', `/api/membership/${bad}/r`, 'user'],
      ['DELETE', `/api/membership/u/${bad}`, 'role'],
      ['GET', `/api/members/${bad}`, 'role'],
      ['GET', `/api/has_permission/${bad}/p`, 'user'],
      ['GET', `/api/has_permission/u/${bad}`, 'permission'],
      ['GET', `/api/user_permissions/${bad}`, 'user'],
      ['GET', `/api/user_roles/${bad}`, 'user'],
      ['GET', `/api/which_users_can/${bad}`, 'permission'],
      ['GET', `/api/which_roles_can/${bad}`, 'permission'],
    ];
    for (const [method, path, field] of cases) {
      const res = await c.request(method, path);
      expectErr(res, 400, field, `${method} ${path}`);
      expectRev(res, rev);
    }
    // A bad name is 400 even when the named role does not exist (names before the operation).
    expectErr(await c.request('POST', `/api/permission/ghost/${bad}`), 400, 'permission');
    expectErr(await c.request('GET', `/api/members/a%20b`), 400, 'role');
    assert.equal(await revisionOf(c), rev);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 50);
