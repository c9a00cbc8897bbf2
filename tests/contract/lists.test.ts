/**
 * Pagination of every list route (docs/api.md §5) against the real server: limit and next_cursor
 * walk the complete sorted list, cursors are bound to route, parameters and client, tampering
 * and bad limits are 400.
 */
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { asRecord, expectOk, expectErr, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import { sorted } from '../../support/rbac-model.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

describe('pagination', () => {
  const roleNames = [
    '+',
    '-',
    '.x',
    '0',
    '9',
    ':',
    '@',
    'A',
    'Z',
    '_',
    'a',
    'z',
    '|',
    'a.b',
    'a-b',
    'a_b',
    'a:b',
    'a@b',
    'a+b',
    'a|b',
    'ab',
    'aB',
    'Ab',
    'AB',
    'b',
    'B',
    '_a',
    'zz',
    'role.1',
    'role.10',
  ];
  let c: RbacClient;
  let rev = 0;

  before(async () => {
    c = fresh();
    for (const n of roleNames) expectOk(await c.createRole(n), 201);
    rev = await revisionOf(c);
  });

  /** Walks a list with `limit`, checking every page, and returns the concatenation. */
  async function walk<T>(fetchPage: (o: { limit: number; cursor?: string }) => Promise<ApiResult<T[]>>, limit: number, total: number): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (let pages = 0; ; pages += 1) {
      assert.ok(pages <= total + 1, 'pagination does not end');
      const res = await fetchPage(cursor === undefined ? { limit } : { limit, cursor });
      const page = expectOk(res);
      assert.ok(page.length <= limit, `page of ${page.length} > limit ${limit}`);
      out.push(...page);
      if (out.length < total) {
        assert.equal(page.length, limit, `short page before the end (limit ${limit})`);
        assert.ok(typeof res.nextCursor === 'string' && res.nextCursor.length > 0, `no next_cursor after ${out.length}/${total} (limit ${limit})`);
        cursor = res.nextCursor;
      } else {
        assert.equal(res.nextCursor, undefined, `next_cursor on the last page (limit ${limit}, total ${total})`);
        assert.equal('next_cursor' in asRecord(res.body), false);
        return out;
      }
    }
  }

  test('roles: walking with several limits gives the complete sorted list', async () => {
    const expected = sorted(roleNames).map((role) => ({ role, description: '' }));
    const full = await c.listRoles();
    assert.deepEqual(expectOk(full), expected);
    assert.equal(full.nextCursor, undefined);
    for (const limit of [1, 2, 3, 7, 10, 29, 30, 31, 100, 10000]) {
      const got = await walk((o) => c.listRoles(o), limit, roleNames.length);
      assert.deepEqual(got, expected, `limit ${limit}`);
    }
    assert.equal(await revisionOf(c), rev);
  });

  test('every page carries the revision header', async () => {
    const first = await c.listRoles({ limit: 4 });
    expectRev(first, rev);
    assert.ok(first.nextCursor !== undefined);
    const second = await c.listRoles({ limit: 4, cursor: first.nextCursor });
    expectRev(second, rev);
  });

  test('a cursor without limit returns the rest of the list', async () => {
    const expected = sorted(roleNames);
    const first = await c.listRoles({ limit: 7 });
    assert.deepEqual(
      expectOk(first).map((r) => r.role),
      expected.slice(0, 7),
    );
    assert.ok(first.nextCursor !== undefined);
    const rest = await c.listRoles({ cursor: first.nextCursor });
    assert.deepEqual(
      expectOk(rest).map((r) => r.role),
      expected.slice(7),
    );
    assert.equal(rest.nextCursor, undefined);
    // A cursor can be reused.
    const again = await c.listRoles({ cursor: first.nextCursor, limit: 2 });
    assert.deepEqual(
      expectOk(again).map((r) => r.role),
      expected.slice(7, 9),
    );
  });

  test('a cursor is valid for the same tenant under the other key case', async () => {
    const key = c.key;
    assert.ok(key !== undefined);
    const upper = api.server.client(key.toUpperCase());
    const first = await c.listRoles({ limit: 5 });
    assert.ok(first.nextCursor !== undefined);
    const next = await upper.listRoles({ limit: 5, cursor: first.nextCursor });
    assert.deepEqual(
      expectOk(next).map((r) => r.role),
      sorted(roleNames).slice(5, 10),
    );
  });

  test('all list routes page: members, role_permissions, user_*, which_*', async () => {
    const d = fresh();
    const users = ['u+1', 'U2', 'u.3', 'u_4', 'u-5', 'u@6', 'u:7', 'u|8', 'U9', 'u10', 'alice@example.com'];
    const perms = ['p.read', 'p.write', 'P', 'p:x', 'p-y', 'p_z', 'p@a', 'p+b', 'p|c'];
    await seedRole(d, 'big', perms, users);
    await seedRole(d, 'big2', perms.slice(0, 4), users.slice(0, 5));
    const extraRoles = ['r1', 'r2', 'r3', 'r4', 'R5'];
    for (const r of extraRoles) await seedRole(d, r, ['p.read', 'extra'], ['u+1']);

    const checks: Array<[string, (o: { limit: number; cursor?: string }) => Promise<ApiResult<unknown[]>>, unknown[]]> = [
      ['members', (o) => d.members('big', o), sorted(users).map((user) => ({ user }))],
      ['role_permissions', (o) => d.rolePermissions('big', o), sorted(perms).map((name) => ({ name }))],
      ['user_permissions', (o) => d.userPermissions('u+1', o), sorted([...perms, 'extra']).map((name) => ({ name }))],
      ['user_roles', (o) => d.userRoles('u+1', o), sorted(['big', 'big2', ...extraRoles]).map((role) => ({ role }))],
      ['which_users_can', (o) => d.whichUsersCan('p.read', o), sorted(users).map((user) => ({ user }))],
      ['which_roles_can', (o) => d.whichRolesCan('p.read', o), sorted(['big', 'big2', ...extraRoles]).map((role) => ({ role }))],
    ];
    for (const [name, fetchPage, expected] of checks) {
      const full = await fetchPage({ limit: 10000 });
      assert.deepEqual(expectOk(full), expected, `${name} complete`);
      for (const limit of [1, 2, 3, 4, expected.length - 1, expected.length, expected.length + 1]) {
        const got = await walk(fetchPage, limit, expected.length);
        assert.deepEqual(got, expected, `${name} limit ${limit}`);
      }
    }
  });

  test('a cursor is bound to route, path parameters and client: otherwise 400 naming cursor', async () => {
    const d = fresh();
    await seedRole(d, 'g1', ['a', 'b', 'c'], ['x', 'y', 'z']);
    await seedRole(d, 'g2', ['a', 'b', 'c'], ['x', 'y', 'z']);
    const dRev = await revisionOf(d);
    const rolesCursor = (await d.listRoles({ limit: 1 })).nextCursor;
    const membersG1 = (await d.members('g1', { limit: 1 })).nextCursor;
    const permsG1 = (await d.rolePermissions('g1', { limit: 1 })).nextCursor;
    const usersCanA = (await d.whichUsersCan('a', { limit: 1 })).nextCursor;
    const userRolesX = (await d.userRoles('x', { limit: 1 })).nextCursor;
    const userPermsX = (await d.userPermissions('x', { limit: 1 })).nextCursor;
    for (const cur of [rolesCursor, membersG1, permsG1, usersCanA, userRolesX, userPermsX]) assert.ok(cur !== undefined);
    const misuse: Array<[string, Promise<ApiResult<unknown>>]> = [
      ['roles cursor on members', d.members('g1', { limit: 1, cursor: rolesCursor as string })],
      ['members g1 cursor on members g2', d.members('g2', { limit: 1, cursor: membersG1 as string })],
      ['members cursor on role_permissions', d.rolePermissions('g1', { limit: 1, cursor: membersG1 as string })],
      ['role_permissions g1 cursor on g2', d.rolePermissions('g2', { cursor: permsG1 as string })],
      ['role_permissions cursor on roles', d.listRoles({ cursor: permsG1 as string })],
      ['which_users_can cursor on which_roles_can', d.whichRolesCan('a', { limit: 1, cursor: usersCanA as string })],
      ['which_users_can a cursor on b', d.whichUsersCan('b', { limit: 1, cursor: usersCanA as string })],
      ['user_roles x cursor on y', d.userRoles('y', { limit: 1, cursor: userRolesX as string })],
      ['user_roles cursor on user_permissions', d.userPermissions('x', { limit: 1, cursor: userRolesX as string })],
      ['user_permissions x cursor on z', d.userPermissions('z', { cursor: userPermsX as string })],
    ];
    for (const [what, p] of misuse) {
      const res = await p;
      expectErr(res, 400, 'cursor', what);
      expectRev(res, dRev);
    }
    // Another client, same route and parameters.
    const e = fresh();
    await seedRole(e, 'g1', ['a', 'b', 'c'], ['x', 'y', 'z']);
    await seedRole(e, 'g2');
    for (const p of [
      e.listRoles({ limit: 1, cursor: rolesCursor as string }),
      e.members('g1', { limit: 1, cursor: membersG1 as string }),
      e.rolePermissions('g1', { cursor: permsG1 as string }),
      e.whichUsersCan('a', { cursor: usersCanA as string }),
      e.userRoles('x', { cursor: userRolesX as string }),
    ]) {
      expectErr(await p, 400, 'cursor');
    }
    // The genuine use still works.
    assert.deepEqual(expectOk(await d.members('g1', { cursor: membersG1 as string })), [{ user: 'y' }, { user: 'z' }]);
  });

  test('a tampered cursor is 400 naming cursor', async () => {
    const first = await c.listRoles({ limit: 3 });
    const cursor = first.nextCursor;
    assert.ok(cursor !== undefined && cursor.length >= 4);
    const mid = Math.floor(cursor.length / 2);
    const swap = (ch: string | undefined): string => (ch === 'A' ? 'B' : 'A');
    const tampered = [
      swap(cursor[0]) + cursor.slice(1),
      cursor.slice(0, mid) + swap(cursor[mid]) + cursor.slice(mid + 1),
      cursor.slice(0, -4),
      `${cursor}AAAA`,
      cursor.split('').reverse().join(''),
      `x${cursor}`,
    ];
    for (const t of tampered) {
      if (t === cursor) continue;
      const res = await c.listRoles({ limit: 3, cursor: t });
      expectErr(res, 400, 'cursor');
      expectRev(res, rev);
    }
  });

  test('limit bounds: 1 and 10000 accepted; 0, 10001, -1, abc are 400 naming limit', async () => {
    expectOk(await c.listRoles({ limit: 1 }));
    expectOk(await c.listRoles({ limit: 10000 }));
    for (const bad of ['0', '10001', '-1', 'abc']) {
      const res = await c.request('GET', `/api/roles?limit=${bad}`);
      expectErr(res, 400, 'limit');
      expectRev(res, rev);
      expectErr(await c.request('GET', `/api/members/A?limit=${bad}`), 400, 'limit');
    }
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 350);
