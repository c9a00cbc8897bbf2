/**
 * Signed tokens (docs/api.md §3), black-box against the real service with two workers: issuing
 * (`POST /api/token`: envelope, claims, lifetimes, scopes, bad bodies), use on every worker and
 * connection like the key, and client isolation. Every token made here is remembered for the
 * leak scan.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeJwt, hs256Valid, subOf } from '../helpers/jwt.ts';
import { answeredBy } from '../helpers/raw-http.ts';
import { TIMESTAMP_RE } from '../helpers/contract.ts';
import { show } from '../helpers/show.ts';
import {
  SECRET,
  nowSeconds,
  mint,
  tokenFor,
  withToken,
  fresh,
  expectError,
  expect401,
  expectRevisionHeader,
  seeded,
  server,
  tokenServer,
} from '../helpers/tokens.ts';

describe('with AUTH_JWT_SECRET_KEY, on two workers', () => {
  tokenServer();

  // ---- issuing ------------------------------------------------------------------------------------

  test('POST /api/token with a client key: 201, an HS256 Bearer token of scope write for 900 s', async () => {
    const rawKey = randomUUID().toUpperCase();
    const c = server.client(rawKey);
    const from = nowSeconds();
    const res = await mint(c);
    const to = nowSeconds();
    assert.equal(res.status, 201, show(res));
    const body = res.body as unknown as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['code', 'data', 'message', 'success', 'timestamp']);
    assert.equal(body.success, true);
    assert.equal(body.code, 201);
    assert.match(String(body.timestamp), TIMESTAMP_RE);
    expectRevisionHeader(res, 'POST /api/token');
    const data = body.data as Record<string, unknown>;
    assert.deepEqual(Object.keys(data).sort(), ['expires_in', 'scope', 'token', 'token_type']);
    assert.equal(data.token_type, 'Bearer');
    assert.equal(data.expires_in, 900);
    assert.equal(data.scope, 'write');
    const token = String(data.token);

    const { header, payload } = decodeJwt(token);
    assert.equal(header.alg, 'HS256');
    assert.ok(hs256Valid(token, SECRET), 'the signature is HMAC-SHA256 with AUTH_JWT_SECRET_KEY');
    assert.equal(payload.sub, subOf(rawKey), 'sub: hex SHA-256 of the lower-cased key');
    assert.equal(payload.scope, 'write');
    assert.equal(payload.iss, 'rbac-gateway');
    assert.ok(typeof payload.jti === 'string' && payload.jti.length > 0, `jti: ${JSON.stringify(payload.jti)}`);
    assert.ok(
      Number.isInteger(payload.iat) && (payload.iat as number) >= from - 1 && (payload.iat as number) <= to + 1,
      `iat ${String(payload.iat)} not now (${from})`,
    );
    assert.equal((payload.exp as number) - (payload.iat as number), 900, 'exp - iat');
    const shown = `${JSON.stringify(res.body)} ${JSON.stringify(payload)}`.toLowerCase();
    assert.ok(!shown.includes(rawKey.toLowerCase()), 'neither the answer nor the token holds the key');

    const again = decodeJwt(await tokenFor(c)).payload;
    assert.notEqual(again.jti, payload.jti, 'every token has its own jti');
    assert.equal(again.sub, payload.sub);
    // An empty body is no body: the defaults.
    const empty = await mint(c, undefined, { rawBody: '', contentType: 'application/json' });
    assert.equal(empty.status, 201, show(empty));
    assert.equal(empty.data?.scope, 'write');
    assert.equal(empty.data?.expires_in, 900);
  });

  test('ttl_seconds from 1 to 86400 and scope read or write are granted as asked', async () => {
    const c = server.client();
    const cases: Array<{ scope?: string; ttl_seconds?: number }> = [
      { ttl_seconds: 1 },
      { ttl_seconds: 60, scope: 'read' },
      { ttl_seconds: 86400, scope: 'write' },
      { scope: 'read' },
      { scope: 'write' },
    ];
    for (const body of cases) {
      const res = await mint(c, body);
      const context = `${JSON.stringify(body)}: ${show(res)}`;
      assert.equal(res.status, 201, context);
      const want = { ttl: body.ttl_seconds ?? 900, scope: body.scope ?? 'write' };
      assert.equal(res.data?.expires_in, want.ttl, context);
      assert.equal(res.data?.scope, want.scope, context);
      const { payload } = decodeJwt(res.data?.token ?? '');
      assert.equal((payload.exp as number) - (payload.iat as number), want.ttl, `exp - iat; ${context}`);
      assert.equal(payload.scope, want.scope, context);
    }
  });

  test('a bad token request is 400 naming what is wrong (415 without a JSON type), and issues nothing', async () => {
    const c = server.client();
    const bad: Array<{ body: unknown; names: string }> = [
      ...[0, 86401, 1.5, '60', -1, null, true, 1e100].map((ttl) => ({ body: { ttl_seconds: ttl }, names: 'ttl_seconds' })),
      ...['admin', 'READ', '', null, ['read'], 'read write'].map((scope) => ({ body: { scope }, names: 'scope' })),
      { body: { audience: 'x' }, names: 'audience' },
      { body: { scope: 'read', ttl_seconds: 60, sub: 'someone-else' }, names: 'sub' },
    ];
    for (const { body, names } of bad) {
      const res = await mint(c, body);
      const error = expectError(res, 400, JSON.stringify(body));
      assert.ok(error.includes(names), `error ${JSON.stringify(error)} should name ${names}`);
    }
    for (const rawBody of ['[]', '"read"', '{', '{"scope":"read",}']) {
      expectError(await mint(c, undefined, { rawBody, contentType: 'application/json' }), 400, rawBody);
    }
    expectError(await mint(c, undefined, { rawBody: 'scope=read', contentType: 'application/x-www-form-urlencoded' }), 415, 'form body');
  });

  // ---- use ----------------------------------------------------------------------------------------

  test('a token works like its key on every worker: reads and writes on new connections', async (t) => {
    const { key, revision } = await seeded();
    const write = await tokenFor(key);
    const read = await tokenFor(key, { scope: 'read' });
    const workers = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const res = await fresh<Array<{ name: string }>>(i % 2 === 0 ? write : read, 'GET', '/api/user_permissions/alice');
      assert.equal(res.status, 200, `request ${i}: ${show(res)}`);
      assert.deepEqual(res.data, [{ name: 'docs.write' }], `request ${i}`);
      assert.equal(res.revision, revision, `X-Authz-Revision, request ${i}`);
      workers.add(answeredBy(res));
    }
    let rev = revision;
    for (let i = 0; i < 10; i++) {
      const created = await fresh<{ revision: number }>(write, 'POST', `/api/role/by-token-${i}`);
      assert.equal(created.status, 201, `create ${i}: ${show(created)}`);
      assert.equal(created.data?.revision, ++rev);
      assert.equal(created.revision, rev);
      workers.add(answeredBy(created));
      // Read-your-writes on another new connection, whichever worker takes it.
      const seen = await fresh<Array<{ user: string }>>(read, 'GET', `/api/members/by-token-${i}`);
      assert.equal(seen.status, 200, `read after create ${i}: ${show(seen)}`);
      assert.equal(seen.revision, rev);
      workers.add(answeredBy(seen));
    }
    const byKey = await key.listRoles();
    const byToken = await fresh<unknown>(read, 'GET', '/api/roles');
    assert.deepEqual(byToken.data, byKey.data, 'the token lists what the key lists');
    assert.equal(byKey.data?.length, 11);
    const check = await fresh<{ all: boolean }>(read, 'POST', '/api/check', { checks: [{ user: 'alice', permission: 'docs.write' }] });
    assert.equal(check.status, 200, show(check));
    assert.equal(check.data?.all, true);
    const deleted = await fresh<{ revision: number }>(write, 'DELETE', '/api/role/by-token-0');
    assert.equal(deleted.status, 200, show(deleted));
    assert.equal(deleted.revision, rev + 1);
    t.diagnostic(`answered by ${workers.size} worker processes`);
  });

  test('case-insensitive scheme and several spaces work for tokens too; another scheme is 401', async () => {
    const { key } = await seeded();
    const read = await tokenFor(key, { scope: 'read' });
    for (const header of [`bearer ${read}`, `BEARER   ${read}`]) {
      const res = await key.request('GET', '/api/roles', { headers: { authorization: header } });
      assert.equal(res.status, 200, `${header.slice(0, 10)}…: ${show(res)}`);
    }
    for (const header of [`Token ${read}`, `Basic ${read}`, `Bearer${read}`, read]) {
      expect401(await key.request('GET', '/api/roles', { headers: { authorization: header } }), read, `${header.slice(0, 10)}…`);
    }
  });

  test("client isolation: a token sees its own client only; another client's role is 404", async () => {
    const a = server.client();
    const b = server.client();
    assert.equal((await a.createRole('a-only')).status, 201);
    assert.equal((await b.createRole('b-only')).status, 201);
    assert.equal((await b.grant('b-only', 'b.perm')).status, 201);
    assert.equal((await b.addMember('bob', 'b-only')).status, 201);
    const aWrite = withToken(await tokenFor(a));
    const aRead = withToken(await tokenFor(a, { scope: 'read' }));
    const aRev = (await a.listRoles()).revision;
    assert.deepEqual((await aRead.listRoles()).data, [{ role: 'a-only', description: '' }]);
    expectError(await aRead.rolePermissions('b-only'), 404, 'role_permissions of b-only', aRev);
    expectError(await aRead.members('b-only'), 404, 'members of b-only', aRev);
    expectError(await aRead.roleHasPermission('b-only', 'b.perm'), 404, 'permission of b-only', aRev);
    expectError(await aWrite.deleteRole('b-only'), 404, 'delete b-only', aRev);
    expectError(await aWrite.grant('b-only', 'x'), 404, 'grant on b-only', aRev);
    expectError(await aWrite.addMember('eve', 'b-only'), 404, 'membership in b-only', aRev);
    assert.deepEqual((await aRead.hasPermission('bob', 'b.perm')).data, { has_permission: false });
    assert.deepEqual((await aRead.userRoles('bob')).data, []);
    assert.equal((await aWrite.createRole('b-only')).status, 201, 'a name taken by another client is free here');
    assert.deepEqual((await b.listRoles()).data, [{ role: 'b-only', description: '' }], "B's data is untouched");
    assert.deepEqual((await b.members('b-only')).data, [{ user: 'bob' }]);
    const bToken = await tokenFor(b, { scope: 'read' });
    assert.notEqual(decodeJwt(bToken).payload.sub, decodeJwt(aWrite.key ?? '').payload.sub);
  });
});
