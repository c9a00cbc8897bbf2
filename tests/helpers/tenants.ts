// Tenant ids for tests. In src/ a TenantId is only made by hashing a client key
// (src/http/input/credentials.ts) or read back from a store; tests name theirs directly.
import { randomBytes } from 'node:crypto';
import type { TenantId } from '../../src/authz/tenant.ts';

/** A tenant id with a readable name (the unit tests never reach a database). */
export const tenantId = (name: string): TenantId => name as TenantId;

/** A fresh tenant id shaped like a real one (64 hex digits), for tests against a database. */
export const randomTenant = (): TenantId => tenantId(randomBytes(32).toString('hex'));
