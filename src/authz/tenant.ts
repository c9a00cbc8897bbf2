/**
 * A tenant: the data behind one client key, identified by the hex SHA-256 of the canonical key.
 * Branded, so that no other string (a raw key, a role name) can be passed where a tenant is
 * expected. Made in two places only, each with one commented cast: `tenantOfKey` in
 * http/input/credentials.ts (hashing a key) and the store adapters (reading ids back from a
 * database); an id that comes from outside the process (a Redis message, a token's subject) is
 * checked with {@link isTenantId}.
 */
export type TenantId = string & { readonly __brand: 'TenantId' };

/** A TenantId's shape: a SHA-256 in lower-case hex. */
const TENANT_ID = /^[0-9a-f]{64}$/;

/** Whether `x` has a TenantId's shape (64 lower-case hex digits, a key's hash). */
export function isTenantId(x: unknown): x is TenantId {
  return typeof x === 'string' && TENANT_ID.test(x);
}
