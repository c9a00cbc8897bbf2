/**
 * Roles (docs/api.md §2, §6) against the real server: create with and without a description, the
 * list, 409 and 404 naming the role, and a delete that takes the role's grants and memberships
 * with it at one revision (no resurrection).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRoleMissing, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import { sorted } from '../../support/rbac-model.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Roles
// ---------------------------------------------------------------------------------------------

describe('roles', () => {
  test('create without a body: 201 {role, description:"", revision}', async () => {
    const c = fresh();
    const res = await c.createRole('admin');
    assert.deepEqual(expectOk(res, 201), { role: 'admin', description: '', revision: 1 });
    expectRev(res, 1);
    const list = await c.listRoles();
    assert.deepEqual(expectOk(list), [{ role: 'admin', description: '' }]);
    expectRev(list, 1);
  });

  test('create with a description, which the list returns', async () => {
    const c = fresh();
    const description = 'Administrators of the caf\u00e9 \u2615 \u{1F600} "quoted" \\ \n tab\t';
    const res = await c.createRole('admin', { description });
    assert.deepEqual(expectOk(res, 201), { role: 'admin', description, revision: 1 });
    assert.deepEqual(expectOk(await c.listRoles()), [{ role: 'admin', description }]);
  });

  test('empty body (0 bytes) with any content type, {} and "" all mean description ""', async () => {
    const c = fresh();
    const cases: Array<[string, { rawBody?: string; contentType?: string; body?: unknown }]> = [
      ['e1', { rawBody: '', contentType: 'text/plain' }],
      ['e2', { rawBody: '', contentType: 'application/json' }],
      ['e3', { rawBody: '', contentType: 'application/octet-stream' }],
      ['e4', { body: {} }],
      ['e5', { body: { description: '' } }],
    ];
    let rev = 0;
    for (const [role, opts] of cases) {
      const res = await c.request('POST', `/api/role/${role}`, opts);
      rev += 1;
      assert.deepEqual(expectOk(res, 201), { role, description: '', revision: rev }, role);
      expectRev(res, rev);
    }
    assert.deepEqual(
      expectOk(await c.listRoles()),
      cases.map(([role]) => ({ role, description: '' })),
    );
  });

  test('JSON content types: application/json and application/*+json, any parameters, any case', async () => {
    const c = fresh();
    const types = [
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'Application/Json;Charset=UTF-8',
      'application/vnd.api+json',
      'application/merge-patch+json; charset=utf-8',
      'APPLICATION/PROBLEM+JSON',
    ];
    for (const [i, ct] of types.entries()) {
      const res = await c.request('POST', `/api/role/ct${i}`, { rawBody: JSON.stringify({ description: ct }), contentType: ct });
      assert.deepEqual(expectOk(res, 201), { role: `ct${i}`, description: ct, revision: i + 1 }, ct);
    }
  });

  test('JSON with surrounding whitespace is a valid body', async () => {
    const c = fresh();
    const res = await c.request('POST', '/api/role/ws', { rawBody: ' \n\t{ "description" : "spaced" }\r\n ', contentType: 'application/json' });
    assert.deepEqual(expectOk(res, 201), { role: 'ws', description: 'spaced', revision: 1 });
  });

  test('description: at most 1024 code points (not UTF-16 units, not bytes)', async () => {
    const c = fresh();
    const ascii = 'd'.repeat(1024);
    const astral = '\u{1F600}'.repeat(1024);
    const accented = '\u00e9'.repeat(1024);
    let created = 0;
    for (const [role, description] of [
      ['ascii', ascii],
      ['astral', astral],
      ['accented', accented],
    ] as const) {
      const res = await c.createRole(role, { description });
      created += 1;
      assert.deepEqual(expectOk(res, 201), { role, description, revision: created }, role);
    }
    assert.deepEqual(expectOk(await c.listRoles()), [
      { role: 'accented', description: accented },
      { role: 'ascii', description: ascii },
      { role: 'astral', description: astral },
    ]);
    const rev = await revisionOf(c);
    for (const description of ['d'.repeat(1025), '\u{1F600}'.repeat(1025), `${'d'.repeat(1024)}\u00e9`]) {
      const res = await c.createRole('toolong', { description });
      expectErr(res, 400, 'description');
      expectRev(res, rev);
    }
    expectRoleMissing(await c.rolePermissions('toolong'), 'toolong');
  });

  test('creating an existing role is 409 naming it, and changes nothing', async () => {
    const c = fresh();
    expectOk(await c.createRole('admin', { description: 'first' }), 201);
    const res = await c.createRole('admin', { description: 'second' });
    expectErr(res, 409, 'admin');
    expectRev(res, 1);
    const res2 = await c.createRole('admin');
    expectErr(res2, 409, 'admin');
    assert.deepEqual(expectOk(await c.listRoles()), [{ role: 'admin', description: 'first' }]);
    assert.equal(await revisionOf(c), 1);
  });

  test('delete: 200 {role, permissions_removed, memberships_removed, revision}', async () => {
    const c = fresh();
    expectOk(await c.createRole('temp'), 201);
    const res = await c.deleteRole('temp');
    assert.deepEqual(expectOk(res), { role: 'temp', permissions_removed: 0, memberships_removed: 0, revision: 2 });
    expectRev(res, 2);
    assert.deepEqual(expectOk(await c.listRoles()), []);
  });

  test('delete of a missing role: 404 "Role \'<name>\' does not exist"', async () => {
    const c = fresh();
    const res = await c.deleteRole('ghost');
    expectRoleMissing(res, 'ghost');
    expectRev(res, 0);
    expectOk(await c.createRole('ghost'), 201);
    expectOk(await c.deleteRole('ghost'));
    const again = await c.deleteRole('ghost');
    expectRoleMissing(again, 'ghost');
    expectRev(again, 2);
  });

  test('role list is sorted by code point with exact item shape', async () => {
    const c = fresh();
    // ('.' and '..' alone are dot segments that fetch would remove from the URL.)
    const names = ['b', 'a', 'Z', 'A', '_x', 'z', '0', '9', '.x', '-', ':', '@', '+', '|', 'aa', 'a.b', 'B', '...'];
    for (const n of names) expectOk(await c.createRole(n, { description: `d-${n}` }), 201);
    const list = expectOk(await c.listRoles());
    assert.deepEqual(
      list,
      sorted(names).map((role) => ({ role, description: `d-${role}` })),
    );
    for (const item of list) assert.deepEqual(Object.keys(item).sort(), ['description', 'role']);
  });
});

// ---------------------------------------------------------------------------------------------
// Cascade delete and no resurrection
// ---------------------------------------------------------------------------------------------

describe('cascade delete', () => {
  test('deleting a role removes its grants and memberships at one revision', async () => {
    const c = fresh();
    await seedRole(c, 'doomed', ['p1', 'p2', 'p3'], ['u1', 'u2']);
    await seedRole(c, 'kept', ['p1'], ['u1']);
    const before = await revisionOf(c);
    assert.equal(before, 9);

    const res = await c.deleteRole('doomed');
    assert.deepEqual(expectOk(res), { role: 'doomed', permissions_removed: 3, memberships_removed: 2, revision: before + 1 });
    expectRev(res, before + 1);
    assert.equal(await revisionOf(c), before + 1);

    assert.deepEqual(expectOk(await c.listRoles()), [{ role: 'kept', description: '' }]);
    expectRoleMissing(await c.rolePermissions('doomed'), 'doomed');
    expectRoleMissing(await c.members('doomed'), 'doomed');
    assert.deepEqual(expectOk(await c.hasPermission('u2', 'p2')), { has_permission: false });
    assert.deepEqual(expectOk(await c.hasPermission('u1', 'p3')), { has_permission: false });
    assert.deepEqual(expectOk(await c.hasPermission('u1', 'p1')), { has_permission: true });
    assert.deepEqual(expectOk(await c.userRoles('u1')), [{ role: 'kept' }]);
    assert.deepEqual(expectOk(await c.userRoles('u2')), []);
    assert.deepEqual(expectOk(await c.userPermissions('u1')), [{ name: 'p1' }]);
    assert.deepEqual(expectOk(await c.userPermissions('u2')), []);
    assert.deepEqual(expectOk(await c.whichRolesCan('p2')), []);
    assert.deepEqual(expectOk(await c.whichRolesCan('p1')), [{ role: 'kept' }]);
    assert.deepEqual(expectOk(await c.whichUsersCan('p2')), []);
    assert.deepEqual(expectOk(await c.whichUsersCan('p1')), [{ user: 'u1' }]);
    const chk = expectOk(
      await c.check([
        { user: 'u2', permission: 'p1' },
        { user: 'u1', permission: 'p2' },
      ]),
    );
    assert.equal(chk.any, false);
    assert.equal(await revisionOf(c), before + 1);
  });

  test('a re-created role has no permissions and no members', async () => {
    const c = fresh();
    await seedRole(c, 'phoenix', ['fly', 'burn'], ['bird', 'ash']);
    const del = await c.deleteRole('phoenix');
    assert.deepEqual(expectOk(del), { role: 'phoenix', permissions_removed: 2, memberships_removed: 2, revision: 6 });
    const re = await c.createRole('phoenix', { description: 'reborn' });
    assert.deepEqual(expectOk(re, 201), { role: 'phoenix', description: 'reborn', revision: 7 });
    assert.deepEqual(expectOk(await c.rolePermissions('phoenix')), []);
    assert.deepEqual(expectOk(await c.members('phoenix')), []);
    assert.deepEqual(expectOk(await c.roleHasPermission('phoenix', 'fly')), { has_permission: false });
    assert.deepEqual(expectOk(await c.isMember('bird', 'phoenix')), { is_member: false });
    assert.deepEqual(expectOk(await c.hasPermission('bird', 'fly')), { has_permission: false });
    assert.deepEqual(expectOk(await c.userRoles('bird')), []);
    assert.deepEqual(expectOk(await c.whichRolesCan('fly')), []);
    assert.deepEqual(expectOk(await c.whichUsersCan('burn')), []);
    // The old grant and membership can be made again (no hidden leftovers: 201, not 409).
    expectOk(await c.grant('phoenix', 'fly'), 201);
    expectOk(await c.addMember('bird', 'phoenix'), 201);
    const del2 = await c.deleteRole('phoenix');
    assert.deepEqual(expectOk(del2), { role: 'phoenix', permissions_removed: 1, memberships_removed: 1, revision: 10 });
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 100);
