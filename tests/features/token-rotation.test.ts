/**
 * Token keys that rotate (docs/api.md §3, docs/operations.md "Rotating keys"): issued tokens name
 * their secret in a `kid` header; AUTH_JWT_PREVIOUS_SECRET_KEYS verify and never sign; a token
 * without `kid` (issued before key ids) is tried against every secret; an unknown secret or a
 * `kid` that lies is 401; a bad list stops start-up naming the variable, never a secret.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { loadConfig, redactedConfig } from '../../src/config/index.ts';
import { decodeJwt, hs256Valid, signJwt, subOf } from '../helpers/jwt.ts';
import { freePort, rememberSecret, runToExit, startServer, tempDir } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';
import { newSecret, nowSeconds, tokenFor, withToken, expect401 } from '../helpers/tokens.ts';

/** The `kid` of a secret: the first 16 hex of its SHA-256. */
const kidOf = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16);

/** A token as the service would issue it for `key`, signed with `secret`, with the header given. */
function handMade(key: string, secret: string, header: Record<string, unknown>, scope = 'write'): string {
  const now = nowSeconds();
  const claims = { sub: subOf(key), scope, iat: now, exp: now + 600, jti: randomUUID(), iss: 'rbac-gateway' };
  const token = signJwt({ alg: 'HS256', typ: 'JWT', ...header }, claims, secret);
  rememberSecret(token, 'token');
  return token;
}

const secret = (): string => {
  const s = newSecret();
  rememberSecret(s, 'AUTH_JWT_SECRET_KEY');
  return s;
};

test('issued tokens carry kid = the first 16 hex of SHA-256 of the signing secret', async (t) => {
  const current = secret();
  const server = await startServer({ env: { AUTH_JWT_SECRET_KEY: current, AUTH_JWT_PREVIOUS_SECRET_KEYS: secret() } });
  t.after(() => server.kill());
  const token = await tokenFor(server.client());
  const { header } = decodeJwt(token);
  assert.deepEqual(header, { alg: 'HS256', typ: 'JWT', kid: kidOf(current) });
  assert.match(String(header.kid), /^[0-9a-f]{16}$/);
  assert.ok(hs256Valid(token, current), 'signed with AUTH_JWT_SECRET_KEY, never a previous one');
  assert.equal(await server.stop(), 0);
});

test('rotation: tokens of the previous secrets verify, by kid or without one; unknown secrets and lying kids do not', async (t) => {
  const tmp = tempDir('rbac-rotate-');
  t.after(tmp.cleanup);
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  const [old, older, current, stranger] = [secret(), secret(), secret(), secret()];

  // Before the rotation: tokens issued with the old secret.
  const before = await startServer({ sqlitePath, env: { AUTH_JWT_SECRET_KEY: old } });
  t.after(() => before.kill());
  const key = before.client();
  assert.equal((await key.createRole('kept')).status, 201);
  const issuedBefore = await tokenFor(key, { ttl_seconds: 3600 });
  assert.equal(decodeJwt(issuedBefore).header.kid, kidOf(old));
  assert.equal(await before.stop(), 0);

  // After: a new secret signs, the old ones (with spaces around the commas) only verify.
  const after = await startServer({
    sqlitePath,
    env: { AUTH_JWT_SECRET_KEY: current, AUTH_JWT_PREVIOUS_SECRET_KEYS: `${old} , ${older}`, AUTH_WORKERS: '2' },
  });
  t.after(() => after.kill());
  const k = key.key as string;
  const accepted: Array<[string, string]> = [
    ['issued before the rotation (kid of the old secret)', issuedBefore],
    ['hand-made with the kid of a previous secret', handMade(k, older, { kid: kidOf(older) })],
    ['without kid, signed with a previous secret', handMade(k, older, {})],
    ['without kid, signed with the old secret', handMade(k, old, {})],
    ['without kid, signed with the current secret', handMade(k, current, {})],
  ];
  for (const [what, token] of accepted) {
    const res = await withToken(token, after).listRoles();
    assert.equal(res.status, 200, `${what}: ${show(res)}`);
    assert.deepEqual(res.data, [{ role: 'kept', description: '' }], what);
  }
  const refused: Array<[string, string]> = [
    ['an unknown secret without kid', handMade(k, stranger, {})],
    ['an unknown secret with its own kid', handMade(k, stranger, { kid: kidOf(stranger) })],
    ['an unknown secret claiming the current kid', handMade(k, stranger, { kid: kidOf(current) })],
    ['a previous secret claiming the current kid', handMade(k, old, { kid: kidOf(current) })],
    ['the current secret claiming a previous kid', handMade(k, current, { kid: kidOf(old) })],
    ['a kid that is not a string', handMade(k, current, { kid: 7 })],
  ];
  for (const [what, token] of refused) expect401(await withToken(token, after).listRoles(), token, what);

  const minted = await tokenFor(after.client(k));
  assert.equal(decodeJwt(minted).header.kid, kidOf(current), 'new tokens are signed with the current secret');
  assert.ok(hs256Valid(minted, current));
  assert.equal(await after.stop(), 0);

  // The old secret dropped: its tokens stop, the current one's go on.
  const dropped = await startServer({ sqlitePath, env: { AUTH_JWT_SECRET_KEY: current } });
  t.after(() => dropped.kill());
  expect401(await withToken(issuedBefore, dropped).listRoles(), issuedBefore, 'the old secret dropped');
  assert.equal((await withToken(minted, dropped).listRoles()).status, 200);
  assert.equal(await dropped.stop(), 0);
});

test('a bad AUTH_JWT_PREVIOUS_SECRET_KEYS stops start-up: exit 2, one line naming it, no secret shown', async (t) => {
  const tmp = tempDir('rbac-rotate-');
  t.after(tmp.cleanup);
  const good = secret();
  const short = randomBytes(12).toString('hex');
  rememberSecret(short, 'secret');
  for (const list of [`${good},${short}`, `${good},`, short]) {
    const { code, output } = await runToExit({
      AUTH_SERVER_HOST: '127.0.0.1',
      AUTH_SERVER_PORT: String(await freePort()),
      AUTH_SQLITE_PATH: join(tmp.dir, 'never', 'rbac.sqlite3'),
      AUTH_WORKERS: '1',
      AUTH_JWT_SECRET_KEY: secret(),
      AUTH_JWT_PREVIOUS_SECRET_KEYS: list,
    });
    const lines = output.split('\n').filter((l) => l.trim() !== '' && !/^\(node:\d+\) |^\(Use `node --trace-/.test(l.trim()));
    const context = `exit ${code}: ${lines.length} lines`;
    assert.equal(code, 2, context);
    assert.equal(lines.length, 1, context);
    assert.ok(output.includes('AUTH_JWT_PREVIOUS_SECRET_KEYS'), `${context}: names the variable`);
    for (const s of [good, short]) assert.ok(!output.includes(s) && !output.includes(s.slice(-10)), `${context}: shows a secret`);
  }
});

test('the effective configuration (--check-config, the start-up line) shows AUTH_JWT_PREVIOUS_SECRET_KEYS redacted', () => {
  const previous = `${secret()},${secret()}`;
  const config = loadConfig({ AUTH_JWT_SECRET_KEY: secret(), AUTH_JWT_PREVIOUS_SECRET_KEYS: previous }, '/nonexistent');
  const shown = redactedConfig(config);
  assert.equal(shown.AUTH_JWT_PREVIOUS_SECRET_KEYS, '[redacted]');
  assert.equal(shown.AUTH_JWT_SECRET_KEY, '[redacted]');
  assert.ok(!JSON.stringify(shown).includes(previous.slice(0, 12)));
});
