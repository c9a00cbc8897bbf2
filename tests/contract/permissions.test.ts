/**
 * Permissions of a role (docs/api.md §2) against the real server: grant, check, list and revoke,
 * 409 and 404 naming the permission, 404 naming a missing role.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRoleMissing, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Permissions
// ---------------------------------------------------------------------------------------------

describe('permissions', () => {
  test('grant, check, list, revoke', async () => {
    const c = fresh();
    expectOk(await c.createRole('editor'), 201);
    const g = await c.grant('editor', 'write');
    assert.deepEqual(expectOk(g, 201), { role: 'editor', permission: 'write', revision: 2 });
    expectRev(g, 2);
    const g2 = await c.request('POST', '/api/permission/editor/read', { body: {} });
    assert.deepEqual(expectOk(g2, 201), { role: 'editor', permission: 'read', revision: 3 });
    const g3 = await c.request('POST', '/api/permission/editor/Read', { rawBody: '', contentType: 'text/plain' });
    assert.deepEqual(expectOk(g3, 201), { role: 'editor', permission: 'Read', revision: 4 });

    const has = await c.roleHasPermission('editor', 'write');
    assert.deepEqual(expectOk(has), { has_permission: true });
    expectRev(has, 4);
    assert.deepEqual(expectOk(await c.roleHasPermission('editor', 'delete')), { has_permission: false });
    assert.deepEqual(expectOk(await c.roleHasPermission('editor', 'WRITE')), { has_permission: false });

    const list = await c.rolePermissions('editor');
    assert.deepEqual(expectOk(list), [{ name: 'Read' }, { name: 'read' }, { name: 'write' }]);
    expectRev(list, 4);
    assert.equal(list.nextCursor, undefined);

    const r = await c.revoke('editor', 'write');
    assert.deepEqual(expectOk(r), { role: 'editor', permission: 'write', revision: 5 });
    expectRev(r, 5);
    assert.deepEqual(expectOk(await c.roleHasPermission('editor', 'write')), { has_permission: false });
    assert.deepEqual(expectOk(await c.rolePermissions('editor')), [{ name: 'Read' }, { name: 'read' }]);
  });

  test('granting twice is 409 naming the permission; revoking twice is 404 naming it', async () => {
    const c = fresh();
    expectOk(await c.createRole('editor'), 201);
    expectOk(await c.grant('editor', 'write'), 201);
    const dup = await c.grant('editor', 'write');
    expectErr(dup, 409, 'write');
    expectRev(dup, 2);
    expectOk(await c.revoke('editor', 'write'));
    const again = await c.revoke('editor', 'write');
    expectErr(again, 404, 'write');
    expectRev(again, 3);
    const never = await c.revoke('editor', 'never-granted');
    expectErr(never, 404, 'never-granted');
    assert.notEqual(never.error, `Role 'editor' does not exist`);
    expectOk(await c.grant('editor', 'write'), 201);
    assert.equal(await revisionOf(c), 4);
  });

  test('every permission route on a missing role is 404 naming the role', async () => {
    const c = fresh();
    expectOk(await c.createRole('present'), 201);
    for (const res of [
      await c.grant('ghost', 'read'),
      await c.revoke('ghost', 'read'),
      await c.roleHasPermission('ghost', 'read'),
      await c.rolePermissions('ghost'),
      await c.rolePermissions('ghost', { limit: 5 }),
    ]) {
      expectRoleMissing(res, 'ghost');
      expectRev(res, 1);
    }
  });

  test('list items have exactly the key name', async () => {
    const c = fresh();
    await seedRole(c, 'r', ['p1', 'p2']);
    for (const item of expectOk(await c.rolePermissions('r'))) assert.deepEqual(Object.keys(item), ['name']);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 25);
