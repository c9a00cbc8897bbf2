import type { AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { TokenStore } from '../port.ts';
import { auditColumns, INSERT_AUDITS } from './audit.ts';
import { run, statement as s, type PostgresAccess } from './sql.ts';

const SQL = {
  record: s('record_token', 'INSERT INTO issued_tokens (jti, client_hash, expires_at) VALUES ($1, $2, $3) ON CONFLICT (jti) DO NOTHING'),
  // The first revocation's time is kept: revoking again changes nothing.
  revoke: s(
    'revoke_token',
    `UPDATE issued_tokens SET revoked_at = COALESCE(revoked_at, $1)
     WHERE jti = $2 AND client_hash = $3 AND expires_at > $1 RETURNING expires_at`,
  ),
  revoked: s('revoked_tokens', 'SELECT jti, expires_at FROM issued_tokens WHERE revoked_at IS NOT NULL AND expires_at > $1'),
  prune: s('prune_tokens', 'DELETE FROM issued_tokens WHERE jti IN (SELECT jti FROM issued_tokens WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)'),
} as const;

/** Issued tokens and their revocation on PostgreSQL (see TokenStore); a revocation commits its audit row with it. */
export class PostgresTokens implements TokenStore {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  async recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void> {
    await this.#db.query('tokens', SQL.record, [jti, tenant, expiresAtMs]);
  }

  revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined> {
    return this.#db.tx('tokens', 'BEGIN', async (db) => {
      const row = (await run(db, SQL.revoke, [nowMs, jti, tenant])).rows[0];
      if (row === undefined) return { commit: false, value: undefined };
      await run(db, INSERT_AUDITS, auditColumns([audit]));
      return { commit: true, value: Number(row.expires_at) };
    });
  }

  async revokedTokens(nowMs: number): Promise<Array<[string, number]>> {
    const { rows } = await this.#db.query('tokens', SQL.revoked, [nowMs]);
    return rows.map((r) => [String(r.jti), Number(r.expires_at)]);
  }

  async pruneTokens(nowMs: number, limit: number): Promise<number> {
    return (await this.#db.query('tokens', SQL.prune, [nowMs, limit])).rowCount ?? 0;
  }
}
