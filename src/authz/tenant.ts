/**
 * A tenant: the data behind one client key, identified by the hex SHA-256 of the canonical key.
 * Branded, so that no other string (a raw key, a role name) can be passed where a tenant is
 * expected. Made in two places only, each with one commented cast: `tenantOfKey` in
 * http/input/credentials.ts (hashing a key) and the store adapters (reading ids back from a database).
 */
export type TenantId = string & { readonly __brand: 'TenantId' };
