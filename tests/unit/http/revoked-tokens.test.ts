// Revocation as a worker holds it (docs/api.md §3): a verified token is remembered until it is
// revoked, then forgotten at once (every header spelling of it, the last-header memo included) and
// refused when verified again; keys are never looked up in the revoked set; an entry goes once its
// token has expired.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { TokenAuthority } from '../../../src/crypto/tokens.ts';
import { Credentials, tenantOfKey } from '../../../src/http/input/credentials.ts';
import { RevokedTokens } from '../../../src/http/input/revoked-tokens.ts';
import { decodeJwt } from '../../helpers/jwt.ts';

const authority = new TokenAuthority(randomBytes(32).toString('hex'));

test('a remembered token is forgotten when revoked, under every spelling of its header, and refused from then on', async () => {
  const revoked = new RevokedTokens();
  const credentials = new Credentials(authority, () => true, revoked);
  const tenant = tenantOfKey(randomUUID());
  const { token, jti, expiresAtMs } = await authority.issue(tenant, 'read', 600);
  const other = (await authority.issue(tenant, 'read', 600)).token;
  const headers = [`Bearer ${token}`, `bearer  ${token}`];
  for (const h of headers) assert.equal((await credentials.verify(h))?.credential, `token:${jti}`);
  await credentials.verify(`Bearer ${other}`);
  for (const h of headers) assert.ok(credentials.known(h) !== undefined, 'remembered');

  revoked.add(jti, expiresAtMs);
  for (const h of headers) assert.equal(credentials.known(h), undefined, `forgotten: ${h.slice(0, 8)}`);
  for (const h of headers) assert.equal(await credentials.verify(h), undefined, 'refused when verified again');
  assert.equal(credentials.known(`Bearer ${other}`)?.credential, `token:${decodeJwt(other).payload.jti}`, 'another token stays');
  const key = `Bearer ${randomUUID()}`;
  assert.equal(credentials.known(key)?.scope, 'key', 'keys are not affected');
});

test('the set keeps a revocation until its token expires; one already expired is not kept', () => {
  const revoked = new RevokedTokens();
  const heard: string[] = [];
  revoked.onRevoked((jti) => heard.push(jti));
  revoked.add('live', Date.now() + 60_000);
  revoked.add('live', Date.now() + 60_000);
  revoked.add('gone', Date.now() - 1);
  assert.deepEqual(heard, ['live'], 'told once, and not of an expired token');
  revoked.addAll([
    ['live', Date.now() + 60_000],
    ['read-back', Date.now() + 60_000],
  ]);
  assert.deepEqual(heard, ['live', 'read-back']);
  assert.equal(revoked.has('live') && revoked.has('read-back') && !revoked.has('gone'), true);
  assert.equal(revoked.size, 2);
});
