/**
 * Bad query parameters and headers (docs/api.md §5, §9): limits and cursors that are not, and
 * X-Authz-Min-Revision values that are not non-negative integers, each a 400 naming it; 401 comes
 * first. The seeded client is unchanged afterwards.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { afterTheBadInput, badInputServer, c, rev, assertUnchanged, expectErr } from '../helpers/bad-input.ts';

badInputServer();

// ---------------------------------------------------------------------------------------------
// Query and headers
// ---------------------------------------------------------------------------------------------

const LIST_PATHS = [
  '/api/roles',
  '/api/role_permissions/admin',
  '/api/members/admin',
  '/api/user_permissions/alice@example.com',
  '/api/user_roles/alice@example.com',
  '/api/which_users_can/read',
  '/api/which_roles_can/read',
];

describe('query parameters', () => {
  test('bad limit is 400 naming limit', async () => {
    for (const path of LIST_PATHS) {
      for (const bad of ['0', '10001', '-1', 'abc', '1.5', '1e2', '', '99999999999999999999', '0x10', '%00', '1%20']) {
        const res = await c.request('GET', `${path}?limit=${bad}`);
        expectErr(res, 400, 'limit', `${path}?limit=${bad}`);
      }
    }
    await assertUnchanged();
  });

  test('garbage cursors are 400 naming cursor', async () => {
    const forged = `${Buffer.from('admin').toString('base64url')}.${'A'.repeat(22)}`;
    const garbage = [
      'abc',
      'a.b',
      '.',
      '..',
      'x'.repeat(5000),
      '%00',
      'AAAA.AAAA',
      forged,
      '%F0%9F%99%82',
      'a%20b',
      '%7B%22after%22%3A%22a%22%7D',
      'null',
      '0',
      '-1',
    ];
    for (const path of LIST_PATHS) {
      for (const cursor of garbage) {
        for (const q of [`cursor=${cursor}`, `limit=1&cursor=${cursor}`]) {
          const res = await c.request('GET', `${path}?${q}`);
          expectErr(res, 400, 'cursor', `${path}?${q.slice(0, 60)}`);
        }
      }
    }
    await assertUnchanged();
  });

  test('bad limit or cursor without a valid key is 401', async () => {
    expectErr(await c.withKey(undefined).request('GET', '/api/roles?limit=0'), 401);
    expectErr(await c.withKey(undefined).request('GET', '/api/roles?cursor=garbage'), 401);
  });
});

describe('X-Authz-Min-Revision header', () => {
  test('a value that is not a non-negative integer is 400', async () => {
    for (const bad of ['abc', '-1', '1.5', '1e3', '0x10', '1 2', 'NaN', 'Infinity', '--1', '7a', '1_000']) {
      for (const path of ['/api/roles', '/api/members/admin', '/api/has_permission/bob/read']) {
        const res = await c.request('GET', path, { headers: { 'x-authz-min-revision': bad } });
        expectErr(res, 400, /min-revision/i, `${path} ${JSON.stringify(bad)}`);
      }
      const chk = await c.request('POST', '/api/check', { body: { checks: [{ user: 'bob', permission: 'read' }] }, headers: { 'x-authz-min-revision': bad } });
      expectErr(chk, 400, /min-revision/i, `check ${JSON.stringify(bad)}`);
    }
    expectErr(await c.withKey(undefined).request('GET', '/api/roles', { headers: { 'x-authz-min-revision': 'abc' } }), 401);
    await assertUnchanged();
  });

  test('a value with non-ASCII bytes is 400 (not read as absent or as its ASCII prefix)', async () => {
    // The HTTP parser (uWebSockets) drops leading and trailing bytes >= 0x80 of a header value as if
    // they were white space, so only non-ASCII bytes inside a value reach the service: refused here.
    for (const bad of ['1\u00bd1', '2\u00e90', '0\u00bd0', '1\u00e92']) {
      const t0 = Date.now();
      const res = await c.request('GET', '/api/roles', { headers: { 'x-authz-min-revision': bad } });
      expectErr(res, 400, /min-revision/i, `${JSON.stringify(bad)} after ${Date.now() - t0} ms`);
    }
    await assertUnchanged();
  });

  test('a valid value at or below the revision is answered normally', async () => {
    for (const v of ['0', '1', String(rev)]) {
      const res = await c.request('GET', '/api/roles', { headers: { 'x-authz-min-revision': v } });
      assert.equal(res.status, 200, v);
    }
  });
});

afterTheBadInput(350);
