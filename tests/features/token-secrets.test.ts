/**
 * Signed tokens and the service's settings (docs/api.md §3): a token survives a restart on the same
 * file but not another secret, AUTH_JWT_TTL_SECONDS sets the default lifetime, without a secret
 * POST /api/token is 501, and start-up checks the secret's length (in bytes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, hs256Valid, signJwt, subOf } from '../helpers/jwt.ts';
import { freePort, runToExit, startServer, tempDir } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';
import { SECRET, OTHER_SECRET, newSecret, nowSeconds, mint, tokenFor, withToken, expectError, expect401 } from '../helpers/tokens.ts';

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
  for (const [what, text] of [
    ['key', key.key as string],
    ['key upper-cased', (key.key as string).toUpperCase()],
    ['token', token],
    ['signature', signature],
    ['secret', SECRET],
    ['other secret', OTHER_SECRET],
  ] as const) {
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
  const jwt = signJwt(
    { alg: 'HS256', typ: 'JWT' },
    { sub: subOf(key.key ?? ''), scope: 'write', iat: now, exp: now + 600, jti: randomBytes(12).toString('hex'), iss: 'rbac-gateway' },
    SECRET,
  );
  const minted = signJwt(
    { alg: 'HS256', typ: 'JWT' },
    { sub: subOf(key.key ?? ''), scope: 'read', iat: now, exp: now + 600, jti: randomBytes(12).toString('hex'), iss: 'rbac-gateway' },
    OTHER_SECRET,
  );
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
