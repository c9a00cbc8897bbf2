/**
 * Clients (docs/api.md §3, §9) against the real server: authentication and key canonicalisation,
 * no key ever echoed, isolation between clients, one revision per successful write and
 * X-Authz-Min-Revision.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiResult } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRoleMissing, expectRev, expectNoRev, revisionOf, assertNoKey, v4Key, seedRole } from '../helpers/envelopes.ts';

const api = contractServer();
const { fresh, anon } = api;

// ---------------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------------

describe('authentication', () => {
  const key = v4Key();
  const badHeaders: string[] = [
    `Basic ${Buffer.from(`user:${key}`).toString('base64')}`,
    `Basic ${key}`,
    'Bearer',
    'Bearer ',
    `Bearer${key}`,
    `Token ${key}`,
    key,
    'Bearer 6ba7b810-9dad-11d1-80b4-00c04fd430c8', // v1
    'Bearer 6ba7b810-9dad-51d1-80b4-00c04fd430c8', // v5
    `Bearer ${key.slice(0, 14)}3${key.slice(15)}`, // version 3
    `Bearer ${key.slice(0, 19)}c${key.slice(20)}`, // variant c
    `Bearer ${key.slice(0, 19)}7${key.slice(20)}`, // variant 7
    `Bearer ${key.replace(/-/g, '')}`,
    `Bearer {${key}}`,
    `Bearer ${key}x`,
    `Bearer ${key.slice(0, -1)}`,
    `Bearer ${key.slice(0, -1)}g`,
    `Bearer ${key} extra`,
    'Bearer not-a-uuid',
    'Bearer 00000000-0000-0000-0000-000000000000',
    `Bearer \u00e9${key}`,
  ];

  test('missing or invalid credentials are 401 with WWW-Authenticate: Bearer', async () => {
    const routes: Array<[string, string]> = [
      ['GET', '/api/roles'],
      ['POST', '/api/role/admin'],
      ['DELETE', '/api/role/admin'],
      ['GET', '/api/has_permission/alice/read'],
      ['POST', '/api/check'],
      ['GET', '/api/members/admin'],
    ];
    for (const [method, path] of routes) {
      const none = await anon().request(method, path);
      expectErr(none, 401);
      assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer\b/i);
      expectNoRev(none);
      for (const h of badHeaders) {
        const res = await anon().request(method, path, { headers: { authorization: h } });
        expectErr(res, 401, undefined, `${method} ${path} with ${JSON.stringify(h)}`);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/i, `${method} ${path} with ${h}`);
        expectNoRev(res);
        assertNoKey(res, key);
      }
    }
  });

  test('a valid key followed by non-ASCII bytes and more is 401 (malformed credential)', async () => {
    const k = v4Key();
    // The HTTP parser (uWebSockets) drops leading and trailing bytes >= 0x80 of a header value as if
    // they were white space, so only non-ASCII bytes inside a value reach the service: refused here.
    for (const h of [`Bearer ${k}\u00e9x`, `Bearer ${k}\u00a0z`, `Bearer ${k}\u00ff0`, `Bearer ${k}\u00bdxyz`]) {
      const res = await anon().request('GET', '/api/roles', { headers: { authorization: h } });
      expectErr(res, 401, undefined, `GET /api/roles with ${JSON.stringify(h)}`);
      expectNoRev(res);
    }
  });

  test('401 comes before name, query and body validation', async () => {
    expectErr(await anon().request('POST', '/api/role/%zz'), 401);
    expectErr(await anon().request('GET', '/api/roles?limit=0'), 401);
    expectErr(await anon().request('GET', '/api/roles?cursor=garbage'), 401);
    expectErr(await anon().request('POST', '/api/role/x', { rawBody: '{', contentType: 'application/json' }), 401);
    expectErr(await anon().request('POST', '/api/role/x', { rawBody: 'hello', contentType: 'text/plain' }), 401);
    expectErr(await anon().request('GET', '/api/roles', { headers: { 'x-authz-min-revision': 'abc' } }), 401);
    expectErr(await anon().request('DELETE', '/api/role/doesnotexist'), 401);
  });

  test('a valid key of a new tenant is accepted: empty lists, revision 0', async () => {
    for (const variant of ['8', '9', 'a', 'b', 'A', 'B']) {
      const c = api.server.client(v4Key(variant));
      const res = await c.listRoles();
      assert.deepEqual(expectOk(res), []);
      expectRev(res, 0);
    }
    const upper = api.server.client(v4Key('a', true));
    const res = await upper.listRoles();
    assert.deepEqual(expectOk(res), []);
    expectRev(res, 0);
  });

  test('the Bearer scheme is case-insensitive', async () => {
    const k = v4Key();
    const c = api.server.client(k);
    expectOk(await c.createRole('scheme'), 201);
    for (const scheme of ['bearer', 'BEARER', 'BeArEr', 'Bearer']) {
      const res = await c.listRoles({ headers: { authorization: `${scheme} ${k}` } });
      assert.deepEqual(expectOk(res), [{ role: 'scheme', description: '' }], scheme);
    }
    const spaced = await c.listRoles({ headers: { authorization: `Bearer   ${k}` } });
    assert.deepEqual(expectOk(spaced), [{ role: 'scheme', description: '' }], 'several spaces after the scheme');
  });

  test('upper- and lower-case forms of a key are one tenant', async () => {
    const k = v4Key('b');
    const lower = api.server.client(k.toLowerCase());
    const upper = api.server.client(k.toUpperCase());
    const mixed = api.server.client(
      k
        .split('')
        .map((ch, i) => (i % 2 === 0 ? ch.toUpperCase() : ch.toLowerCase()))
        .join(''),
    );
    expectOk(await upper.createRole('shared', { description: 'made with upper' }), 201);
    expectErr(await lower.createRole('shared'), 409, 'shared');
    expectOk(await mixed.grant('shared', 'read'), 201);
    expectOk(await lower.addMember('alice', 'shared'), 201);
    for (const c of [lower, upper, mixed]) {
      const roles = await c.listRoles();
      assert.deepEqual(expectOk(roles), [{ role: 'shared', description: 'made with upper' }]);
      expectRev(roles, 3);
      assert.deepEqual(expectOk(await c.hasPermission('alice', 'read')), { has_permission: true });
    }
  });

  test('no response body or header contains the key', async () => {
    const k = v4Key('9');
    for (const c of [api.server.client(k), api.server.client(k.toUpperCase())]) {
      const results = [
        await c.createRole('keyless', { description: 'd' }),
        await c.createRole('keyless'),
        await c.grant('keyless', 'p'),
        await c.addMember('u', 'keyless'),
        await c.listRoles(),
        await c.rolePermissions('keyless', { limit: 1 }),
        await c.members('ghost'),
        await c.request('GET', '/api/members/%zz'),
        await c.check([{ user: 'u', permission: 'p' }]),
        await c.request('GET', '/nope'),
        await c.request('PUT', '/api/roles'),
        await c.ping(),
        await c.listRoles({ headers: { authorization: `Bearer ${k}x` } }),
        await c.listRoles({ headers: { authorization: `Basic ${k}` } }),
      ];
      for (const r of results) assertNoKey(r, k);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Tenant isolation
// ---------------------------------------------------------------------------------------------

describe('tenant isolation', () => {
  test("another client's records are 404 and never show in lists or checks", async () => {
    const a = fresh();
    const b = fresh();
    await seedRole(a, 'secret-role', ['secret-perm'], ['secret-user']);
    await seedRole(a, 'shared-name', ['p'], ['u']);
    const aRev = await revisionOf(a);

    expectRoleMissing(await b.rolePermissions('secret-role'), 'secret-role');
    expectRoleMissing(await b.members('secret-role'), 'secret-role');
    expectRoleMissing(await b.roleHasPermission('secret-role', 'secret-perm'), 'secret-role');
    expectRoleMissing(await b.isMember('secret-user', 'secret-role'), 'secret-role');
    expectRoleMissing(await b.grant('secret-role', 'x'), 'secret-role');
    expectRoleMissing(await b.revoke('secret-role', 'secret-perm'), 'secret-role');
    expectRoleMissing(await b.addMember('intruder', 'secret-role'), 'secret-role');
    expectRoleMissing(await b.removeMember('secret-user', 'secret-role'), 'secret-role');
    const del = await b.deleteRole('secret-role');
    expectRoleMissing(del, 'secret-role');
    expectRev(del, 0);

    const reads: Array<ApiResult<unknown>> = [
      await b.listRoles(),
      await b.userPermissions('secret-user'),
      await b.userRoles('secret-user'),
      await b.whichUsersCan('secret-perm'),
      await b.whichRolesCan('secret-perm'),
      await b.whichUsersCan('p'),
    ];
    for (const r of reads) {
      assert.deepEqual(expectOk(r), []);
      expectRev(r, 0);
    }
    assert.deepEqual(expectOk(await b.hasPermission('secret-user', 'secret-perm')), { has_permission: false });
    const chk = await b.check([
      { user: 'secret-user', permission: 'secret-perm' },
      { user: 'u', permission: 'p' },
    ]);
    assert.deepEqual(expectOk(chk), {
      results: [
        { user: 'secret-user', permission: 'secret-perm', has_permission: false },
        { user: 'u', permission: 'p', has_permission: false },
      ],
      all: false,
      any: false,
    });

    // B can use the same names independently.
    const created = await b.createRole('shared-name', { description: 'b' });
    assert.deepEqual(expectOk(created, 201), { role: 'shared-name', description: 'b', revision: 1 });
    assert.deepEqual(expectOk(await b.rolePermissions('shared-name')), []);
    assert.deepEqual(expectOk(await b.members('shared-name')), []);
    expectOk(await b.deleteRole('shared-name'));

    // A is untouched.
    assert.equal(await revisionOf(a), aRev);
    assert.deepEqual(expectOk(await a.listRoles()), [
      { role: 'secret-role', description: '' },
      { role: 'shared-name', description: '' },
    ]);
    assert.deepEqual(expectOk(await a.rolePermissions('shared-name')), [{ name: 'p' }]);
    assert.deepEqual(expectOk(await a.members('shared-name')), [{ user: 'u' }]);
    assert.deepEqual(expectOk(await a.hasPermission('secret-user', 'secret-perm')), { has_permission: true });
    assert.equal(await revisionOf(b), 2);
  });
});

// ---------------------------------------------------------------------------------------------
// Revisions
// ---------------------------------------------------------------------------------------------

describe('revisions', () => {
  test('+1 per successful write, unchanged by failed writes and reads', async () => {
    const c = fresh();
    let rev = 0;
    const read = async (): Promise<void> => {
      const results: Array<ApiResult<unknown>> = [await c.listRoles(), await c.hasPermission('u', 'p'), await c.check([{ user: 'u', permission: 'p' }])];
      for (const res of results) {
        expectOk(res);
        expectRev(res, rev);
      }
    };
    const write = async (res: ApiResult<{ revision: number }>, status: number): Promise<void> => {
      rev += 1;
      assert.equal(expectOk(res, status).revision, rev);
      expectRev(res, rev);
      await read();
    };
    const fail = async (res: ApiResult<unknown>, status: number): Promise<void> => {
      expectErr(res, status);
      expectRev(res, rev);
      await read();
    };
    await read();
    await write(await c.createRole('r'), 201);
    await fail(await c.createRole('r'), 409);
    await fail(await c.request('POST', '/api/role/%zz'), 400);
    await fail(await c.request('POST', '/api/role/x', { rawBody: '{', contentType: 'application/json' }), 400);
    await fail(await c.request('POST', '/api/role/x', { rawBody: '{}', contentType: 'text/plain' }), 415);
    await write(await c.grant('r', 'p'), 201);
    await fail(await c.grant('r', 'p'), 409);
    await fail(await c.grant('ghost', 'p'), 404);
    await write(await c.addMember('u', 'r'), 201);
    await fail(await c.addMember('u', 'r'), 409);
    await fail(await c.addMember('u', 'ghost'), 404);
    await write(await c.revoke('r', 'p'), 200);
    await fail(await c.revoke('r', 'p'), 404);
    await write(await c.removeMember('u', 'r'), 200);
    await fail(await c.removeMember('u', 'r'), 404);
    await write(await c.deleteRole('r'), 200);
    await fail(await c.deleteRole('r'), 404);
    await fail(await c.request('GET', '/api/roles?limit=0'), 400);
    assert.equal(rev, 6);
  });
});

// ---------------------------------------------------------------------------------------------
// X-Authz-Min-Revision
// ---------------------------------------------------------------------------------------------

describe('X-Authz-Min-Revision', () => {
  test('a revision already reached is answered at once', async (t) => {
    const c = fresh();
    const r0 = await c.listRoles({ minRevision: 0 });
    expectOk(r0);
    expectRev(r0, 0);
    await seedRole(c, 'r', ['p']);
    // A wait for a revision ends in a 503 after a second when it does not come (docs/api.md §9):
    // the 200s say none was needed. How long they took is reported, not held to a figure.
    for (const min of [0, 1, 2]) {
      const t0 = Date.now();
      const res = await c.rolePermissions('r', { minRevision: min });
      assert.deepEqual(expectOk(res), [{ name: 'p' }]);
      expectRev(res, 2);
      t.diagnostic(`X-Authz-Min-Revision ${min} at revision 2: answered in ${Date.now() - t0} ms`);
    }
    const chk = await c.check([{ user: 'u', permission: 'p' }], { minRevision: 2 });
    expectOk(chk);
  });

  test('a revision above anything stored is 400 naming the header and the current revision', async () => {
    const c = fresh();
    expectOk(await c.createRole('r'), 201);
    const answers = [
      await c.listRoles({ minRevision: 1000 }),
      await c.hasPermission('u', 'p', { minRevision: 2 }),
      await c.check([{ user: 'u', permission: 'p' }], { minRevision: 2 }),
    ];
    for (const res of answers) {
      assert.match(expectErr(res, 400, /X-Authz-Min-Revision/), /current revision 1\b/);
      assert.equal(res.headers.get('retry-after'), null, 'a client mistake is not worth a retry');
      expectRev(res, 1);
    }
    expectOk(await c.listRoles({ minRevision: 1 }));
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 300);
