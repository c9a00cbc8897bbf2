/**
 * The scopes and refusals of signed tokens (docs/api.md §2, §3), black-box against the real service
 * with two workers: a read token is 403 on every write (before names and bodies are looked at)
 * and may read everything, no token mints tokens, every answer carries X-Authz-Revision, and every
 * way a token can be wrong, expiry included, is 401.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { b64url, decodeJwt, signJwt, subOf, withPayload, type JsonObject } from '../helpers/jwt.ts';
import { show } from '../helpers/show.ts';
import { SECRET, OTHER_SECRET, nowSeconds, mint, tokenFor, withToken, fresh, expectError, expect401, seeded, server, tokenServer } from '../helpers/tokens.ts';
import { sleep } from '../helpers/wait.ts';

describe('with AUTH_JWT_SECRET_KEY, on two workers', () => {
  tokenServer();

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
      // The POST routes that only read (batch checks, previews) and token minting are not writes.
      if (!path.startsWith('/api/') || path === '/api/check' || path === '/api/dry-run' || path === '/api/token') continue;
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
    assert.deepEqual(
      { roles: (await key.listRoles()).data, perms: (await key.rolePermissions('editors')).data, members: (await key.members('editors')).data },
      before,
    );
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
      '/api/roles',
      '/api/permission/editors/docs.write',
      '/api/role_permissions/editors',
      '/api/membership/alice/editors',
      '/api/members/editors',
      '/api/has_permission/alice/docs.write',
      '/api/user_permissions/alice',
      '/api/user_roles/alice',
      '/api/which_users_can/docs.write',
      '/api/which_roles_can/docs.write',
      '/api/changes',
      '/api/changes?since=1',
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
    const check = await read.check([
      { user: 'alice', permission: 'docs.write' },
      { user: 'bob', permission: 'docs.write' },
    ]);
    assert.equal(check.status, 200, show(check));
    assert.deepEqual(check.data, {
      results: [
        { user: 'alice', permission: 'docs.write', has_permission: true },
        { user: 'bob', permission: 'docs.write', has_permission: false },
      ],
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
    const claims: JsonObject = {
      sub: subOf(key.key ?? ''),
      scope: 'read',
      iat: now,
      exp: now + 600,
      jti: randomBytes(12).toString('hex'),
      iss: 'rbac-gateway',
    };
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
