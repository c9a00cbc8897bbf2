import { createHmac, timingSafeEqual } from 'node:crypto';
import { appError } from '../../errors/index.ts';
import type { TenantId } from '../../authz/tenant.ts';

/**
 * Opaque pagination cursors: the key the next page starts after, signed with a secret kept in the
 * database, so a cursor is valid on every worker and instance and cannot be forged or moved. The
 * signature binds the tenant, the route and its path parameters.
 */
export class Cursors {
  readonly #secret: Buffer;

  constructor(secret: Buffer) {
    this.#secret = secret;
  }

  sign(tenant: TenantId, route: string, params: readonly string[], after: string): string {
    return `${Buffer.from(after).toString('base64url')}.${this.#mac(tenant, route, params, after).toString('base64url')}`;
  }

  /** The key a cursor starts after; 400 when it was not issued for this tenant, route and params. */
  open(tenant: TenantId, route: string, params: readonly string[], cursor: string): string {
    const dot = cursor.indexOf('.');
    const invalid = appError('ERR_VALIDATION_CURSOR');
    if (dot <= 0 || cursor.length > 1024) throw invalid;
    const after = Buffer.from(cursor.slice(0, dot), 'base64url').toString();
    const given = Buffer.from(cursor.slice(dot + 1), 'base64url');
    const expected = this.#mac(tenant, route, params, after);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
    return after;
  }

  #mac(tenant: TenantId, route: string, params: readonly string[], after: string): Buffer {
    const h = createHmac('sha256', this.#secret);
    h.update(`${tenant}\n${route}\n${params.join('\n')}\n${after}`);
    return h.digest().subarray(0, 16);
  }
}
