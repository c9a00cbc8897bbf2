import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import { whenFree } from './busy.ts';
import type { AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { TokenStore } from '../port.ts';

type Row = Record<string, unknown>;

/**
 * Issued tokens and their revocation on SQLite (see TokenStore). A revocation commits its audit
 * row in its own transaction, through the audit role's insert (`insertAudit`).
 */
export class SqliteTokens implements TokenStore {
  readonly #st: ReturnType<typeof prepare>;
  readonly #revoke: (tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord) => number | undefined;

  constructor(db: Database.Database, insertAudit: (row: AuditRecord) => void) {
    const st = prepare(db);
    this.#st = st;
    const tx = db.transaction((tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): number | undefined => {
      const row = st.revoke.get(nowMs, jti, tenant, nowMs) as Row | undefined;
      if (row === undefined) return undefined;
      insertAudit(audit);
      return Number(row.expires_at);
    });
    this.#revoke = (tenant, jti, nowMs, audit) => whenFree(() => tx.immediate(tenant, jti, nowMs, audit));
  }

  async recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void> {
    whenFree(() => this.#st.record.run(jti, tenant, expiresAtMs));
  }

  async revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined> {
    return this.#revoke(tenant, jti, nowMs, audit);
  }

  async revokedTokens(nowMs: number): Promise<Array<[string, number]>> {
    const rows = whenFree(() => this.#st.revoked.all(nowMs)) as Row[];
    return rows.map((r) => [String(r.jti), Number(r.expires_at)]);
  }

  async pruneTokens(nowMs: number, limit: number): Promise<number> {
    return whenFree(() => this.#st.prune.run(nowMs, limit).changes);
  }
}

function prepare(db: Database.Database) {
  return {
    record: prepared(db, 'INSERT OR IGNORE INTO issued_tokens (jti, client_hash, expires_at) VALUES (?, ?, ?)'),
    // The first revocation's time is kept: revoking again changes nothing.
    revoke: prepared(
      db,
      `UPDATE issued_tokens SET revoked_at = COALESCE(revoked_at, ?)
       WHERE jti = ? AND client_hash = ? AND expires_at > ? RETURNING expires_at`,
    ),
    // Word for word the partial index's condition, so that SQLite reads only the revoked rows.
    revoked: prepared(db, 'SELECT jti, expires_at FROM issued_tokens WHERE revoked_at IS NOT NULL AND expires_at > ?'),
    prune: prepared(db, 'DELETE FROM issued_tokens WHERE jti IN (SELECT jti FROM issued_tokens WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)'),
  };
}
