/**
 * Issued tokens and their revocation at the store port, on SQLite and PostgreSQL alike (docs/api.md
 * §3): a revocation of the tenant's own live token commits with its audit row and answers the
 * token's expiry, once or again; anything else stores nothing; the revoked tokens are listed until
 * they expire; expired tokens are pruned; an EncryptedStore seals the row's resource.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditRecord } from '../../../../src/audit/record.ts';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import { FieldCipher } from '../../../../src/crypto/field-cipher.ts';
import { EncryptedStore } from '../../../../src/store/wrappers/encrypted.ts';
import { rawCells } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant as tenant } from '../../../helpers/tenants.ts';
import { timestamp } from '../../../../src/time/index.ts';

/** The audit row a revocation of `jti` commits with. */
const rowOf = (t: TenantId, jti: string): AuditRecord => ({
  tenant: t,
  at: timestamp(),
  action: 'token.revoke',
  resource: `/api/token/${jti}`,
  status: 200,
  credential: 'key:0123456789ab',
  requestId: randomBytes(8).toString('hex'),
  ip: '127.0.0.1',
});

export function tokensCases(topic: StoreTopic): void {
  const { backend, it } = topic;

  it('revokeToken: the tenant’s live token, with its audit row, answering its expiry; again the same; else nothing stored', async () => {
    const store = await topic.alone();
    const [t, other] = [tenant(), tenant()];
    const now = Date.now();
    const [live, expired, theirs] = [randomUUID(), randomUUID(), randomUUID()];
    await store.recordToken(t, live, now + 60_000);
    await store.recordToken(t, live, now + 99_000); // recorded once: the first record stands
    await store.recordToken(t, expired, now - 1);
    await store.recordToken(other, theirs, now + 60_000);
    assert.deepEqual(await store.revokedTokens(now), []);

    assert.equal(await store.revokeToken(t, randomUUID(), now, rowOf(t, 'x')), undefined, 'unknown jti');
    assert.equal(await store.revokeToken(t, theirs, now, rowOf(t, theirs)), undefined, "another tenant's token");
    assert.equal(await store.revokeToken(t, expired, now, rowOf(t, expired)), undefined, 'an expired token');
    assert.deepEqual(await store.audit(t, undefined, 10), [], 'a refusal leaves no audit row');

    assert.equal(await store.revokeToken(t, live, now, rowOf(t, live)), now + 60_000);
    assert.equal(await store.revokeToken(t, live, now + 5, rowOf(t, live)), now + 60_000, 'again: the same answer');
    assert.deepEqual(await store.revokedTokens(now), [[live, now + 60_000]]);
    assert.deepEqual(await store.revokedTokens(now + 60_000), [], 'listed until it expires');
    const rows = await store.audit(t, undefined, 10);
    assert.deepEqual(
      rows.map((r) => [r.action, r.resource, r.status]),
      [
        ['token.revoke', `/api/token/${live}`, 200],
        ['token.revoke', `/api/token/${live}`, 200],
      ],
    );
    assert.equal(await store.revision(t), 0, 'no revision taken');

    assert.equal(await store.pruneTokens(now + 60_000, 1000), 3, 'every token expired by then, revoked or not');
    assert.equal(await store.revokeToken(t, live, now, rowOf(t, live)), undefined, 'pruned: unknown');
    assert.equal(await store.pruneTokens(now + 60_000, 1000), 0);
  });

  it('under encryption the revocation’s audit row is sealed, and read back in plaintext', async () => {
    const settings = await backend.fresh();
    const store = new EncryptedStore(topic.open(settings), new FieldCipher('test-encryption-password'));
    const t = tenant();
    const jti = randomUUID();
    await store.recordToken(t, jti, Date.now() + 60_000);
    assert.ok((await store.revokeToken(t, jti, Date.now(), rowOf(t, jti))) !== undefined);
    assert.equal((await store.audit(t, undefined, 10))[0]?.resource, `/api/token/${jti}`);
    const cells = await rawCells(backend, settings);
    assert.ok(![...(cells.get('audit') ?? [])].some((cell) => cell.includes('/api/token/')), 'no resource in plaintext');
  });
}
