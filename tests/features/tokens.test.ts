/**
 * Signed tokens (docs/api.md §3), black-box against the real service with two workers: issuing
 * (`POST /api/token`: envelope, claims, lifetimes, scopes, bad bodies), use on every worker and
 * connection, client isolation, survival of a restart, every way a token is refused (401), the
 * scopes (403, checked before names and bodies, §2), the service without a secret (501) and the
 * start-up check of the secret's length. Every token made here is remembered for the leak scan.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RbacClient, type ApiResult } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from '../helpers/contract.ts';
import { b64url, decodeJwt, hs256Valid, signJwt, subOf, withPayload, type JsonObject } from '../helpers/jwt.ts';
import { rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { freePort, rememberSecret, runToExit, startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { sleep } from '../helpers/wait.ts';
import { show } from '../helpers/show.ts';

/** A random 48-character secret (36 random bytes, base64url). */
const newSecret = (): string => randomBytes(36).toString('base64url');
const SECRET = newSecret();
const OTHER_SECRET = newSecret();
rememberSecret(OTHER_SECRET, 'AUTH_JWT_SECRET_KEY');

/** The short texts of the statuses this file meets beyond those of tests/helpers/contract.ts. */
const MESSAGE: Readonly<Record<number, string>> = { ...STATUS_TEXT, 403: 'Forbidden', 501: 'Not implemented' };

interface TokenData {
  token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

let server: RunningServer;

// ---- helpers ------------------------------------------------------------------------------------

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** `POST /api/token` as `c`; a token in the answer is remembered for the leak scan. */
async function mint(c: RbacClient, body?: unknown, raw?: { rawBody: string; contentType: string }): Promise<ApiResult<TokenData>> {
  const res = await c.request<TokenData>('POST', '/api/token', raw ?? (body === undefined ? {} : { body }));
  const token: unknown = (res.data as { token?: unknown } | undefined)?.token;
  if (typeof token === 'string') rememberSecret(token, 'token');
  return res;
}

/** A token for `c`'s key; fails the test unless the answer is 201. */
async function tokenFor(c: RbacClient, body?: { scope?: string; ttl_seconds?: number }): Promise<string> {
  const res = await mint(c, body);
  assert.equal(res.status, 201, `POST /api/token ${JSON.stringify(body ?? {})}: ${show(res)}`);
  assert.ok(res.data !== undefined && typeof res.data.token === 'string', show(res));
  return res.data.token;
}

/** A client of `server` (default: the main one) whose credential is `token`. */
function withToken(token: string, on: RunningServer = server): RbacClient {
  rememberSecret(token);
  return new RbacClient({ baseUrl: on.baseUrl, key: token });
}

/** A request on a brand-new TCP connection (so the kernel picks the worker). */
function fresh<T = unknown>(credential: string, method: string, path: string, body?: unknown): Promise<RawResult<T>> {
  rememberSecret(credential);
  return rawRequest<T>({ port: server.port, key: credential, method, path, ...(body === undefined ? {} : { body }), timeoutMs: 10_000 });
}

/** The worker-unique prefix of a generated X-Request-Id (diagnostics only). */
function answeredBy(res: RawResult): string {
  const id = res.headers['x-request-id'];
  return typeof id === 'string' ? (id.split('-')[0] ?? id) : '?';
}

/** An error envelope of `status`, with its message, a detailed error and X-Authz-Revision when asked. */
function expectError(res: ApiResult<unknown>, status: number, context = '', revision?: number): string {
  const where = `${context}: ${show(res)}`;
  assert.equal(res.status, status, where);
  const body = res.body as Record<string, unknown> | undefined;
  assert.ok(body !== undefined, `no JSON body; ${where}`);
  assert.equal(body.success, false, where);
  assert.equal(body.code, status, where);
  assert.equal(body.message, MESSAGE[status], where);
  assert.ok(typeof body.error === 'string' && body.error.length > 0, `no detailed error; ${where}`);
  assert.match(String(body.timestamp), TIMESTAMP_RE, where);
  assert.ok((res.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json'), where);
  if (revision !== undefined) assert.equal(res.revision, revision, `X-Authz-Revision; ${where}`);
  return body.error;
}

/** 401 with `WWW-Authenticate: Bearer`, and no part of the credential in the answer. */
function expect401(res: ApiResult<unknown>, credential: string, context: string): void {
  expectError(res, 401, context);
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/i, `WWW-Authenticate; ${context}`);
  const answer = `${JSON.stringify(res.body)} ${[...res.headers].map(([k, v]) => `${k}: ${v}`).join(' ')}`;
  for (const part of credential.split('.').filter((p) => p.length >= 8)) {
    assert.ok(!answer.includes(part), `the answer contains part of the credential; ${context}`);
  }
}

function expectRevisionHeader(res: ApiResult<unknown> | RawResult, context: string): number {
  assert.ok(res.revision !== undefined && Number.isInteger(res.revision) && res.revision >= 0, `X-Authz-Revision missing or not an integer; ${context}: ${show(res)}`);
  return res.revision;
}

/** A client with a role `editors` granting `docs.write` to `alice`, and its revision (3). */
async function seeded(): Promise<{ key: RbacClient; revision: number }> {
  const key = server.client();
  assert.equal((await key.createRole('editors', { description: 'can edit' })).status, 201);
  assert.equal((await key.grant('editors', 'docs.write')).status, 201);
  const added = await key.addMember('alice', 'editors');
  assert.equal(added.status, 201, show(added));
  return { key, revision: expectRevisionHeader(added, 'seeding') };
}

// The main server: two workers, so that a token must hold on every one of them. The tests that
// need their own server (another secret, none, a restart) come after this block.
describe('with AUTH_JWT_SECRET_KEY, on two workers', () => {
  before(async () => {
    server = await startServer({ env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_WORKERS: '2' } });
  });

  after(async () => {
    if (server !== undefined) assert.equal(await server.stop(), 0, `exit code after SIGTERM\n${server.output().slice(-2000)}`);
  });

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
    assert.ok(Number.isInteger(payload.iat) && (payload.iat as number) >= from - 1 && (payload.iat as number) <= to + 1, `iat ${String(payload.iat)} not now (${from})`);
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
    const cases: Array<{ scope?: string; ttl_seconds?: number }> = [{ ttl_seconds: 1 }, { ttl_seconds: 60, scope: 'read' }, { ttl_seconds: 86400, scope: 'write' }, { scope: 'read' }, { scope: 'write' }];
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

  test('client isolation: a token sees its own client only; another client\'s role is 404', async () => {
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

  // ---- scopes -------------------------------------------------------------------------------------

  /** Every write route, with names that exist (so only the scope can refuse it), then bad names. */
  const WRITES: ReadonlyArray<readonly [string, string]> = [
    ['POST', '/api/role/new-role'],
    ['DELETE', '/api/role/editors'],
    ['POST', '/api/permission/editors/new.perm'],
    ['DELETE', '/api/permission/editors/docs.write'],
    ['POST', '/api/membership/bob/editors'],
    ['DELETE', '/api/membership/alice/editors'],
    // Would be 409 and 404 with a write credential.
    ['POST', '/api/role/editors'],
    ['DELETE', '/api/role/missing'],
    // Would be 400: the scope is checked before names.
    ['POST', '/api/role/bad%20name'],
    ['DELETE', '/api/permission/%zz/docs.write'],
    ['POST', '/api/membership/bad%20user/editors'],
    ['POST', `/api/role/${'x'.repeat(129)}`],
  ];

  const WRITE_TEMPLATES = new Set(
    ['role/{role}', 'permission/{role}/{permission}', 'membership/{user}/{role}'].flatMap((p) => [`POST /api/${p}`, `DELETE /api/${p}`]),
  );

  /** The other write routes the service documents (OpenAPI), beyond {@link WRITES}, with names filled in. */
  async function documentedWrites(): Promise<Array<readonly [string, string]>> {
    const doc = (await server.client().openapi()).body as unknown as { paths?: Record<string, Record<string, unknown>> } | undefined;
    const out: Array<readonly [string, string]> = [];
    for (const [path, ops] of Object.entries(doc?.paths ?? {})) {
      if (!path.startsWith('/api/') || path === '/api/check' || path === '/api/token') continue;
      for (const method of ['POST', 'DELETE', 'PUT', 'PATCH'].filter((m) => m.toLowerCase() in ops)) {
        if (!WRITE_TEMPLATES.has(`${method} ${path}`)) out.push([method, path.replace(/\{[^}]+\}/g, 'editors')]);
      }
    }
    return out;
  }

  test('a read token is 403 on every write, before names and bodies are looked at, and changes nothing', async () => {
    const { key, revision } = await seeded();
    const read = withToken(await tokenFor(key, { scope: 'read' }));
    const before = { roles: (await key.listRoles()).data, perms: (await key.rolePermissions('editors')).data, members: (await key.members('editors')).data };
    for (const [method, path] of [...WRITES, ...(await documentedWrites())]) {
      expectError(await read.request(method, path), 403, `${method} ${path}`, revision);
    }
    // Bodies are looked at after the scope: bad JSON (400) and a non-JSON type (415) are 403 too.
    expectError(await read.request('POST', '/api/role/new-role', { rawBody: '{', contentType: 'application/json' }), 403, 'bad JSON body', revision);
    expectError(await read.request('POST', '/api/role/new-role', { rawBody: 'x', contentType: 'text/plain' }), 403, 'text body', revision);
    expectError(await read.request('POST', '/api/role/new-role', { body: { description: 'd', unknown: 1 } }), 403, 'unknown body key', revision);
    // Unknown paths and wrong methods come first (§2).
    expectError(await read.request('PUT', '/api/role/new-role'), 405, 'PUT');
    expectError(await read.request('POST', '/api/no-such-route'), 404, 'unknown path');
    assert.deepEqual({ roles: (await key.listRoles()).data, perms: (await key.rolePermissions('editors')).data, members: (await key.members('editors')).data }, before);
    assert.equal((await key.listRoles()).revision, revision, 'nothing was written');
  });

  test('a token cannot mint tokens: 403 for read and write tokens, whatever the body', async () => {
    const { key, revision } = await seeded();
    for (const scope of ['read', 'write']) {
      const token = withToken(await tokenFor(key, { scope }));
      expectError(await mint(token), 403, `${scope} token`, revision);
      expectError(await mint(token, { scope: 'read', ttl_seconds: 60 }), 403, `${scope} token, good body`, revision);
      expectError(await mint(token, { scope: 'admin' }), 403, `${scope} token, bad body`, revision);
    }
  });

  /** Every GET route with names of {@link seeded}; more from the OpenAPI document. */
  async function readRoutes(): Promise<string[]> {
    const paths = new Set([
      '/api/roles', '/api/permission/editors/docs.write', '/api/role_permissions/editors', '/api/membership/alice/editors',
      '/api/members/editors', '/api/has_permission/alice/docs.write', '/api/user_permissions/alice', '/api/user_roles/alice',
      '/api/which_users_can/docs.write', '/api/which_roles_can/docs.write', '/api/changes', '/api/changes?since=1',
    ]);
    const doc = (await server.client().openapi()).body as unknown as { paths?: Record<string, Record<string, unknown>> } | undefined;
    const fill: Record<string, string> = { role: 'editors', permission: 'docs.write', user: 'alice', workflow: 'docs.write' };
    for (const [path, ops] of Object.entries(doc?.paths ?? {})) {
      if (path.startsWith('/api/') && 'get' in ops) paths.add(path.replace(/\{([^}]+)\}/g, (_, p: string) => fill[p] ?? 'x'));
    }
    return [...paths];
  }

  test('a read token may GET every route and POST /api/check, with the answers of its key', async () => {
    const { key, revision } = await seeded();
    const read = withToken(await tokenFor(key, { scope: 'read' }));
    const known = await readRoutes();
    for (const path of known) {
      const [byKey, byToken] = [await key.request('GET', path), await read.request('GET', path)];
      assert.ok(byToken.status !== 401 && byToken.status !== 403, `GET ${path}: ${show(byToken)}`);
      assert.equal(byToken.status, byKey.status, `GET ${path}: key ${show(byKey)}, token ${show(byToken)}`);
      if (!path.startsWith('/api/audit')) assert.deepEqual(byToken.data, byKey.data, `GET ${path}`);
      assert.equal(byToken.revision, revision, `X-Authz-Revision of GET ${path}`);
    }
    const check = await read.check([{ user: 'alice', permission: 'docs.write' }, { user: 'bob', permission: 'docs.write' }]);
    assert.equal(check.status, 200, show(check));
    assert.deepEqual(check.data, {
      results: [{ user: 'alice', permission: 'docs.write', has_permission: true }, { user: 'bob', permission: 'docs.write', has_permission: false }],
      all: false,
      any: true,
    });
    assert.equal(check.revision, revision);
  });

  test('every answer to a token carries X-Authz-Revision: successes, 400, 403, 404, 409', async () => {
    const { key, revision } = await seeded();
    const write = withToken(await tokenFor(key));
    const read = withToken(await tokenFor(key, { scope: 'read' }));
    const created = await write.createRole('more');
    assert.equal(created.status, 201, show(created));
    const rev = revision + 1;
    assert.equal(created.revision, rev);
    assert.equal((await read.listRoles()).revision, rev);
    expectError(await write.createRole('more'), 409, 'exists', rev);
    expectError(await write.request('POST', '/api/role/bad%20name'), 400, 'bad name', rev);
    expectError(await write.deleteRole('missing'), 404, 'missing role', rev);
    expectError(await read.createRole('other'), 403, 'read token', rev);
    expectError(await write.request('GET', '/api/changes?since=abc'), 400, 'bad query', rev);
  });

  // ---- refusals -----------------------------------------------------------------------------------

  test('401 with WWW-Authenticate: Bearer for every invalid token, on reads and writes', async () => {
    const { key } = await seeded();
    const real = await tokenFor(key, { scope: 'read' });
    const other = await tokenFor(key, { scope: 'read' });
    const { header, payload, signature } = decodeJwt(real);
    const [h, p] = real.split('.') as [string, string];
    const now = nowSeconds();
    const claims: JsonObject = { sub: subOf(key.key ?? ''), scope: 'read', iat: now, exp: now + 600, jti: randomBytes(12).toString('hex'), iss: 'rbac-gateway' };
    const without = (name: string): JsonObject => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== name));
    const made = (c: JsonObject, alg = 'HS256', secret = SECRET, signAs?: string): string => signJwt({ ...header, alg }, c, secret, signAs);
    // The control: a token made here with the same secret and claims is a valid token.
    const control = await withToken(made(claims)).listRoles();
    assert.equal(control.status, 200, `a well-formed token signed with the secret must be accepted, or the cases below prove nothing: ${show(control)}`);

    const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    const cases: Record<string, string> = {
      'expired (exp in the past)': made({ ...claims, iat: now - 120, exp: now - 60 }),
      'wrong issuer': made({ ...claims, iss: 'someone-else' }),
      'no issuer': made(without('iss')),
      'alg none, unsigned': made(payload, 'none'),
      'alg none, the real signature kept': `${b64url({ ...header, alg: 'none' })}.${p}.${signature}`,
      'HS512 with the same secret': made(payload, 'HS512'),
      'HS384 with the same secret': made(payload, 'HS384'),
      'header HS512, signed HS256': made(payload, 'HS512', SECRET, 'HS256'),
      'header RS256, signed HS256 with the secret': made(payload, 'RS256', SECRET, 'HS256'),
      'HS256 with another secret': made(payload, 'HS256', OTHER_SECRET),
      'payload scope read→write, signature kept': withPayload(real, { ...payload, scope: 'write' }),
      'payload exp extended, signature kept': withPayload(real, { ...payload, exp: (payload.exp as number) + 3600 }),
      'payload sub changed, signature kept': withPayload(real, { ...payload, sub: subOf(randomUUID()) }),
      'signature tampered': `${h}.${p}.${flipped}`,
      'signature of another token': `${h}.${p}.${other.split('.')[2] ?? ''}`,
      'signature removed': `${h}.${p}.`,
      'truncated to two parts': `${h}.${p}`,
      'truncated by 10 characters': real.slice(0, -10),
      'a fourth part': `${real}.${signature}`,
      'scope admin, correctly signed': made({ ...claims, scope: 'admin' }),
      'scope missing': made(without('scope')),
      'scope a list': made({ ...claims, scope: ['read', 'write'] }),
      'no jti': made(without('jti')),
      'no sub': made(without('sub')),
      'no exp': made(without('exp')),
      'not JSON inside': `eyJub3Q.eyJub3Q.${signature}`,
    };
    for (const [name, token] of Object.entries(cases)) {
      const c = withToken(token);
      expect401(await c.listRoles(), token, `${name}, GET /api/roles`);
      expect401(await c.createRole('must-not-exist'), token, `${name}, POST /api/role`);
      expect401(await c.check([{ user: 'alice', permission: 'docs.write' }]), token, `${name}, POST /api/check`);
    }
    assert.ok(!(await key.listRoles()).data?.some((r) => r.role === 'must-not-exist'), 'no refused token wrote anything');
  });

  test('a token is refused once expired (ttl_seconds 1), by every worker', async () => {
    const key = server.client();
    const token = await tokenFor(key, { ttl_seconds: 1, scope: 'read' });
    await sleep(2200);
    for (let i = 0; i < 8; i++) {
      const res = await fresh(token, 'GET', '/api/roles');
      assert.equal(res.status, 401, `request ${i}: ${show(res)}`);
      assert.match(String(res.headers['www-authenticate'] ?? ''), /^Bearer\b/i);
    }
    assert.equal((await key.listRoles()).status, 200, 'the key itself still works');
  });
});

// ---- other servers ------------------------------------------------------------------------------

test('after a restart on the same SQLite file a token still works; with another secret it is 401', async (t) => {
  const tmp = tempDir('rbac-tokens-');
  t.after(tmp.cleanup);
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  const first = await startServer({ sqlitePath, env: { AUTH_JWT_SECRET_KEY: SECRET } });
  t.after(() => first.kill());
  const key = first.client();
  assert.equal((await key.createRole('kept')).status, 201);
  const token = await tokenFor(key, { scope: 'read', ttl_seconds: 3600 });
  assert.equal(await first.stop(), 0);

  const second = await startServer({ sqlitePath, env: { AUTH_JWT_SECRET_KEY: SECRET } });
  t.after(() => second.kill());
  const again = await withToken(token, second).listRoles();
  assert.equal(again.status, 200, `same secret after a restart: ${show(again)}`);
  assert.deepEqual(again.data, [{ role: 'kept', description: '' }]);
  assert.equal(again.revision, 1);
  assert.equal(await second.stop(), 0);

  const third = await startServer({ sqlitePath, env: { AUTH_JWT_SECRET_KEY: OTHER_SECRET } });
  t.after(() => third.kill());
  expect401(await withToken(token, third).listRoles(), token, 'another secret after a restart');
  assert.deepEqual((await third.client(key.key).listRoles()).data, [{ role: 'kept', description: '' }], 'the key still works');
  assert.equal(await third.stop(), 0);

  // At rest: the database files (the WAL too) hold the key's hash, never the key, a token, its
  // signature or the secret (audit rows name a token by its jti).
  const stored = Buffer.concat(readdirSync(tmp.dir).map((f) => readFileSync(join(tmp.dir, f))));
  const signature = token.split('.')[2] as string;
  for (const [what, text] of [['key', key.key as string], ['key upper-cased', (key.key as string).toUpperCase()], ['token', token], ['signature', signature], ['secret', SECRET], ['other secret', OTHER_SECRET]] as const) {
    assert.ok(!stored.includes(Buffer.from(text)), `the database files do not hold the ${what}`);
  }
  assert.ok(stored.includes(Buffer.from(subOf(key.key as string))), 'they do hold the key hash (the client id)');
});

test('AUTH_JWT_TTL_SECONDS sets the default lifetime; ttl_seconds may still ask up to 86400', async (t) => {
  const other = await startServer({ env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_JWT_TTL_SECONDS: '120' } });
  t.after(() => other.kill());
  const key = other.client();
  const byDefault = await mint(key);
  assert.equal(byDefault.status, 201, show(byDefault));
  assert.equal(byDefault.data?.expires_in, 120);
  const p = decodeJwt(byDefault.data?.token ?? '').payload;
  assert.equal((p.exp as number) - (p.iat as number), 120);
  assert.equal((await mint(key, { ttl_seconds: 86400 })).data?.expires_in, 86400);
  expectError(await mint(key, { ttl_seconds: 86401 }), 400, 'over 86400');
  assert.equal(await other.stop(), 0);
});

test('without AUTH_JWT_SECRET_KEY: POST /api/token is 501 naming it, and a JWT is 401', async (t) => {
  const plain = await startServer();
  t.after(() => plain.kill());
  const key = plain.client();
  assert.equal((await key.createRole('r')).status, 201);
  const res = await mint(key);
  const error = expectError(res, 501, 'POST /api/token', 1);
  assert.ok(error.includes('AUTH_JWT_SECRET_KEY'), `error ${JSON.stringify(error)} should name AUTH_JWT_SECRET_KEY`);
  const now = nowSeconds();
  const jwt = signJwt({ alg: 'HS256', typ: 'JWT' }, { sub: subOf(key.key ?? ''), scope: 'write', iat: now, exp: now + 600, jti: randomBytes(12).toString('hex'), iss: 'rbac-gateway' }, SECRET);
  const minted = signJwt({ alg: 'HS256', typ: 'JWT' }, { sub: subOf(key.key ?? ''), scope: 'read', iat: now, exp: now + 600, jti: randomBytes(12).toString('hex'), iss: 'rbac-gateway' }, OTHER_SECRET);
  for (const token of [jwt, minted]) {
    const c = withToken(token, plain);
    expect401(await c.listRoles(), token, 'GET /api/roles with a JWT');
    expect401(await c.createRole('x'), token, 'POST /api/role with a JWT');
    expect401(await mint(c), token, 'POST /api/token with a JWT');
  }
  assert.equal(await plain.stop(), 0);
});

/** Output lines that are the service's own (Node's own warnings aside). */
const ownLines = (output: string): string[] =>
  output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !/^\(node:\d+\) /.test(l) && !l.startsWith('(Use `node --trace-'));

test('start-up refuses a secret under 32 bytes: exit 2, one line naming AUTH_JWT_SECRET_KEY, not the secret', async (t) => {
  const tmp = tempDir('rbac-tokens-');
  t.after(tmp.cleanup);
  const shortOnes = [newSecret().slice(0, 31), `${'é'.repeat(15)}${newSecret().slice(0, 1)}`];
  for (const secret of shortOnes) {
    const { code, output } = await runToExit({
      AUTH_SERVER_HOST: '127.0.0.1',
      AUTH_SERVER_PORT: String(await freePort()),
      AUTH_SQLITE_PATH: join(tmp.dir, 'never', 'rbac.sqlite3'),
      AUTH_WORKERS: '1',
      AUTH_JWT_SECRET_KEY: secret,
    });
    const context = `${Buffer.byteLength(secret)}-byte secret: exit code ${code}, ${ownLines(output).length} lines`;
    assert.equal(code, 2, context);
    assert.equal(ownLines(output).length, 1, context);
    assert.ok(output.includes('AUTH_JWT_SECRET_KEY'), `${context}: should name AUTH_JWT_SECRET_KEY`);
    assert.ok(!output.includes(secret) && !output.includes(secret.slice(-12)), `${context}: the output shows the secret`);
  }
});

test('a secret of exactly 32 bytes is enough, counted in bytes (16 × "é" is 32 bytes)', async (t) => {
  for (const secret of [newSecret().slice(0, 32), 'é'.repeat(16)]) {
    const s = await startServer({ env: { AUTH_JWT_SECRET_KEY: secret } });
    t.after(() => s.kill());
    const token = await tokenFor(s.client());
    assert.ok(hs256Valid(token, secret), `signed with the ${Buffer.byteLength(secret)}-byte secret`);
    assert.equal((await withToken(token, s).listRoles()).status, 200);
    assert.equal(await s.stop(), 0);
  }
});
