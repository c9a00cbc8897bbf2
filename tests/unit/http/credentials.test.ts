// Client keys to tenants: the hash is SHA-256 of the lower-case key whichever way Node computes
// it, a key is remembered per header value, and a key of a client that never wrote is not (a
// flood of random keys must not churn the map that spares real clients the hash).
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { bearer, Credentials, isUuidV4, tenantOfKey, UUID_V4 } from '../../../src/http/input/credentials.ts';

test('the tenant of a key is the hex SHA-256 of its lower-case form', () => {
  const key = randomUUID().toUpperCase();
  assert.equal(tenantOfKey(key), createHash('sha256').update(key.toLowerCase()).digest('hex'));
  assert.equal(tenantOfKey(key), tenantOfKey(key.toLowerCase()));
});

test('a key is remembered only when its client may exist', () => {
  const existing = new Set<TenantId>();
  const credentials = new Credentials(undefined, (tenant) => existing.has(tenant));
  const header = `Bearer ${randomUUID()}`;
  const first = credentials.known(header);
  assert.ok(first !== undefined);
  assert.deepEqual(credentials.known(header), first);
  assert.notEqual(credentials.known(header), first, 'never wrote: worked out again, not remembered');
  existing.add(first.tenant);
  const remembered = credentials.known(header);
  assert.equal(credentials.known(header), remembered, 'once it exists, the same principal comes back');
  assert.equal(credentials.known('Bearer not-a-key'), undefined);
});

// The hot path's hand-written forms of the key's shape and of the header's scheme must answer as
// the plain definitions do.
test('isUuidV4 answers as the UUID v4 pattern; bearer as slice, lower-case and trim', () => {
  const reference = (header: string): string | undefined => {
    if (header.length < 7 || header.slice(0, 6).toLowerCase() !== 'bearer' || header[6] !== ' ') return undefined;
    const credential = header.slice(7).trim();
    return credential === '' ? undefined : credential;
  };
  const hex = fc.constantFrom(...'0123456789abcdefABCDEF4-89gG \u00e9');
  const uuidish = fc.array(hex, { minLength: 30, maxLength: 40 }).map((cs) => cs.join(''));
  const shaped = fc.uuid().map((u) => (Math.random() < 0.5 ? u.toUpperCase() : u));
  fc.assert(
    fc.property(fc.oneof(uuidish, shaped, fc.string({ maxLength: 40 })), (s) => {
      assert.equal(isUuidV4(s), UUID_V4.test(s), JSON.stringify(s));
    }),
    { numRuns: 20_000 },
  );
  const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'BeArEr', 'Basic', 'Bearer\t', 'Bearerx', 'bearer ', '');
  const rest = fc.array(fc.constantFrom('a', 'Z', '.', ' ', '\t', '\u00a0', '\n', 'x-1'), { maxLength: 8 }).map((cs) => cs.join(''));
  fc.assert(
    fc.property(scheme, fc.constantFrom(' ', '  ', '\t', ''), rest, (s, gap, r) => {
      const header = `${s}${gap}${r}`;
      assert.equal(bearer(header), reference(header), JSON.stringify(header));
    }),
    { numRuns: 20_000 },
  );
});
