/**
 * Preconditions (CONTRACT §12.4) against the real server, on every write route (§5, §12.1,
 * /api/writes): `If-Match: "R"` writes when R is the client's revision and is 412 otherwise
 * (`error` naming If-Match and the current revision, nothing written); `*` always matches; a
 * malformed or weak tag is 400 naming If-Match. In the order of checks 412 comes after
 * authentication, names and the body (401/403/400/413/415) and before the operation (404/409).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, seedRole } from '../helpers/envelopes.ts';
import { rememberSecret } from '../helpers/server.ts';
import {
  assertNothingStored,
  dryRun,
  expectError,
  expectPreconditionFailed,
  ifMatch,
  inSeconds,
  sent,
  storedBy,
  writes,
  type Stored,
} from '../helpers/windows.ts';

const MAX_BODY = 4096;
const SECRET = randomBytes(36).toString('base64url');
const api = contractServer({ env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_MAX_BODY_BYTES: String(MAX_BODY) } });
const { fresh } = api;

/** Revision 5: `r` grants `p` to `alice`; `s` is empty. */
async function seeded(): Promise<RbacClient> {
  const c = fresh();
  await seedRole(c, 'r', ['p'], ['alice']);
  expectOk(await c.createRole('s'), 201);
  expectOk(await c.addMember('bob', 's'), 201);
  return c;
}
const REV = 5;

interface Route {
  name: string;
  /** The write, which succeeds on a seeded client with `status`. */
  send: (c: RbacClient, headers: Record<string, string>) => Promise<ApiResult<unknown>>;
  status: number;
}

const body = (c: RbacClient, method: string, path: string, json: unknown, headers: Record<string, string>): Promise<ApiResult<unknown>> =>
  c.request(method, path, { body: json, headers });

/** Every write route, with a request that would succeed. */
const ROUTES: Route[] = [
  { name: 'POST /api/role', status: 201, send: (c, h) => body(c, 'POST', '/api/role/new', { description: 'x' }, h) },
  { name: 'DELETE /api/role', status: 200, send: (c, h) => c.request('DELETE', '/api/role/s', { headers: h }) },
  { name: 'POST /api/permission', status: 201, send: (c, h) => c.request('POST', '/api/permission/r/new', { headers: h }) },
  { name: 'PUT /api/permission', status: 201, send: (c, h) => body(c, 'PUT', '/api/permission/r/new', { expires_at: sent(inSeconds(600)) }, h) },
  { name: 'DELETE /api/permission', status: 200, send: (c, h) => c.request('DELETE', '/api/permission/r/p', { headers: h }) },
  { name: 'POST /api/membership', status: 201, send: (c, h) => body(c, 'POST', '/api/membership/carol/r', { not_before: sent(inSeconds(600)) }, h) },
  { name: 'PUT /api/membership', status: 200, send: (c, h) => body(c, 'PUT', '/api/membership/alice/r', {}, h) },
  { name: 'DELETE /api/membership', status: 200, send: (c, h) => c.request('DELETE', '/api/membership/alice/r', { headers: h }) },
  { name: 'POST /api/writes', status: 200, send: (c, h) => body(c, 'POST', '/api/writes', { writes: [{ op: 'role.create', role: 'new' }] }, h) },
];

const MALFORMED = ['5', `'5'`, '"abc"', '"-1"', '""', '"5.0"', '"+5"', '"0x5"', '"5e0"', '" 5"', '"5', '5"', '"5", "6"', '**', 'W/"5"', 'w/"5"', 'W/*'];

async function refusedAll(
  c: RbacClient,
  before: Stored,
  route: Route,
  values: readonly string[],
  expect: (res: ApiResult<unknown>, value: string) => void,
): Promise<void> {
  for (const value of values) expect(await route.send(c, { 'if-match': value }), value);
  await assertNothingStored(c, before, route.name);
}

describe('every write route', () => {
  for (const route of ROUTES) {
    test(`${route.name}: the current revision and * write; another is 412; a malformed or weak tag 400`, async () => {
      const c = await seeded();
      const before = await storedBy(c);
      await refusedAll(c, before, route, ['"4"', '"6"', '"0"', '"9007199254740991"'], (res, value) =>
        expectPreconditionFailed(res, REV, `${route.name} If-Match ${value}`),
      );
      await refusedAll(c, before, route, MALFORMED, (res, value) => expectError(res, 400, ['If-Match'], REV, `${route.name} If-Match ${value}`));
      const ok = await route.send(c, { 'if-match': `"${REV}"` });
      assert.equal(ok.status, route.status, `${route.name} If-Match "${REV}": ${JSON.stringify(ok.body)}`);
      assert.equal(ok.revision, REV + 1);
      // Again with the now stale revision: 412 naming the new one.
      expectPreconditionFailed(await route.send(c, { 'if-match': `"${REV}"` }), REV + 1, `${route.name} stale`);

      const d = await seeded();
      const star = await route.send(d, { 'if-match': '*' });
      assert.equal(star.status, route.status, `${route.name} If-Match *: ${JSON.stringify(star.body)}`);
      assert.equal(star.revision, REV + 1);
    });
  }

  test('an empty client is at revision 0: If-Match "0" writes, "1" is 412 naming 0', async () => {
    const c = fresh();
    expectPreconditionFailed(await c.request('POST', '/api/role/r', { headers: { 'if-match': '"1"' } }), 0);
    assert.deepEqual(expectOk(await c.request('POST', '/api/role/r', ifMatch(0)), 201), { role: 'r', description: '', revision: 1 });
  });
});

describe('412 in the order of checks', () => {
  test('401, 403, a bad name, a bad body (400, 413, 415) come before 412', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const stale = ifMatch(1).headers ?? {};
    expectError(await c.withKey(undefined).request('POST', '/api/role/new', { headers: stale }), 401);
    const token = expectOk(await c.request<{ token: string }>('POST', '/api/token', { body: { scope: 'read' } }), 201).token;
    rememberSecret(token, 'token');
    const reader = c.withKey(token);
    expectError(await reader.request('POST', '/api/role/new', { headers: stale }), 403);
    expectError(await writes(reader, [{ op: 'role.create', role: 'x' }], { headers: stale }), 403);

    const huge = `{"description":"${'x'.repeat(MAX_BODY)}"}`;
    const cases: Array<[string, string, { rawBody?: string; contentType?: string; body?: unknown }, number, string[]]> = [
      ['POST', '/api/role/bad%20name', {}, 400, ['role']],
      ['PUT', '/api/membership/a%2Fb/r', { body: {} }, 400, ['user']],
      ['DELETE', '/api/permission/r/%zz', {}, 400, ['permission']],
      ['POST', '/api/role/new', { rawBody: '{', contentType: 'application/json' }, 400, []],
      ['POST', '/api/role/new', { body: { colour: 'red' } }, 400, []],
      ['PUT', '/api/permission/r/x', { body: { expires_at: 'soon' } }, 400, ['expires_at']],
      ['POST', '/api/membership/u/r', { body: { not_before: 'later' } }, 400, ['not_before']],
      ['POST', '/api/role/new', { rawBody: huge, contentType: 'application/json' }, 413, []],
      ['PUT', '/api/membership/u/r', { rawBody: '{}', contentType: 'text/plain' }, 415, []],
      ['POST', '/api/writes', { body: { writes: [] } }, 400, ['writes']],
      ['POST', '/api/writes', { body: {} }, 400, ['writes']],
      [
        'POST',
        '/api/writes',
        {
          body: {
            writes: [
              { op: 'role.create', role: 'x' },
              { op: 'role.create', role: 'a b' },
            ],
          },
        },
        400,
        ['writes[1]'],
      ],
      ['POST', '/api/writes', { rawBody: `{"writes":[],"pad":"${'x'.repeat(MAX_BODY)}"}`, contentType: 'application/json' }, 413, []],
      ['POST', '/api/writes', { rawBody: '{"writes":[]}', contentType: 'text/plain' }, 415, []],
    ];
    for (const [method, path, options, status, names] of cases) {
      expectError(await c.request(method, path, { ...options, headers: stale }), status, names, REV, `${method} ${path} with a stale If-Match`);
    }
    await assertNothingStored(c, before, 'refused before the precondition');
  });

  test('412 comes before 404 and 409', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const stale = ifMatch(REV - 1);
    const requests: Array<[string, string, unknown]> = [
      ['DELETE', '/api/role/ghost', undefined],
      ['POST', '/api/role/r', undefined],
      ['POST', '/api/permission/ghost/p', undefined],
      ['PUT', '/api/permission/ghost/p', {}],
      ['POST', '/api/permission/r/p', undefined],
      ['DELETE', '/api/permission/r/never', undefined],
      ['POST', '/api/membership/alice/r', { expires_at: sent(inSeconds(60)) }],
      ['PUT', '/api/membership/alice/ghost', {}],
      ['DELETE', '/api/membership/nobody/r', undefined],
      ['POST', '/api/writes', { writes: [{ op: 'role.create', role: 'r' }] }],
      ['POST', '/api/writes', { writes: [{ op: 'role.delete', role: 'ghost' }] }],
    ];
    for (const [method, path, json] of requests) {
      const res = await c.request(method, path, json === undefined ? stale : { ...stale, body: json });
      expectPreconditionFailed(res, REV, `${method} ${path}`);
    }
    await assertNothingStored(c, before, '412 before the operation');
  });

  test('a matching tag lets the operation answer: 404 and 409 as without it', async () => {
    const c = await seeded();
    const current = ifMatch(REV);
    expectError(await c.request('DELETE', '/api/role/ghost', current), 404, ['ghost'], REV);
    expectError(await c.request('POST', '/api/permission/r/p', current), 409, ['p'], REV);
    expectError(await writes(c, [{ op: 'membership.add', user: 'alice', role: 'r' }], current), 409, ['writes[0]', 'alice'], REV);
  });

  test('a malformed tag is 400 even where the operation would be 404', async () => {
    const c = await seeded();
    expectError(await c.request('DELETE', '/api/role/ghost', { headers: { 'if-match': 'W/"5"' } }), 400, ['If-Match'], REV);
    expectError(await c.request('PUT', '/api/permission/ghost/p', { body: {}, headers: { 'if-match': 'five' } }), 400, ['If-Match'], REV);
  });
});

describe('preview then apply', () => {
  test('a write between the preview and the batch makes the batch 412: nothing applied', async () => {
    const c = await seeded();
    const items = [{ op: 'membership.add', user: 'dan', role: 'r' }];
    const preview = expectOk(await dryRun(c, items));
    assert.equal(preview.revision, REV);
    expectOk(await c.createRole('between'), 201);
    const before = await storedBy(c);
    expectPreconditionFailed(await writes(c, items, ifMatch(preview.revision)), REV + 1);
    await assertNothingStored(c, before, 'a stale batch');
    assert.equal(expectOk(await c.hasPermission('dan', 'p')).has_permission, false);
    const again = expectOk(await dryRun(c, items));
    assert.equal(expectOk(await writes(c, items, ifMatch(again.revision))).revision, REV + 2);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 200);
