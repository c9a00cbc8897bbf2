// Client keys to tenants: the hash is SHA-256 of the lower-case key whichever way Node computes
// it, a key is remembered per header value, and a key of a client that never wrote is not (a
// flood of random keys must not churn the map that spares real clients the hash).
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { Credentials, tenantOfKey } from '../../../src/http/input/credentials.ts';

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
