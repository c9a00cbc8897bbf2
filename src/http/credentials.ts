import { createHash } from 'node:crypto';
import type { TenantId } from '../authz/tenant.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const MAX_REMEMBERED = 100_000;

/**
 * Turns an `Authorization` header into a tenant id: the hex SHA-256 of the canonical (lower-case)
 * client key. Answers are remembered per header value, so the hot path pays one Map lookup instead
 * of a parse and a hash. Raw keys live only in this process's memory; they are never stored,
 * logged or echoed.
 */
export class Credentials {
  #known = new Map<string, TenantId>();

  /** The tenant of a valid header, or undefined (then the answer is 401). */
  tenantOf(header: string): TenantId | undefined {
    const known = this.#known.get(header);
    if (known !== undefined) return known;
    const tenant = parse(header);
    if (tenant === undefined) return undefined;
    if (this.#known.size >= MAX_REMEMBERED) this.#known = new Map();
    this.#known.set(header, tenant);
    return tenant;
  }
}

/** Tenant id of a client key: the hex SHA-256 of its canonical (lower-case) form. */
export function tenantOfKey(key: string): TenantId {
  // The one place a key becomes a TenantId: its hash is what the brand stands for.
  return createHash('sha256').update(key.toLowerCase()).digest('hex') as TenantId;
}

function parse(header: string): TenantId | undefined {
  // `Bearer <credential>`: scheme case-insensitive, separated by one or more spaces.
  if (header.length < 7 || header.slice(0, 6).toLowerCase() !== 'bearer' || header[6] !== ' ') return undefined;
  const credential = header.slice(7).trim();
  if (!UUID_V4.test(credential)) return undefined;
  return tenantOfKey(credential);
}
