import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import type { AuditEntry, AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { AUDIT_TOP, entryOf } from '../audit-rows.ts';
import type { AuditPosition } from '../port.ts';
import { PLAINTEXT_MARK } from '../encryption-mark.ts';

type Row = Record<string, unknown>;

/**
 * The audit trail's and the encryption mark's statements, each kept alive for the life of the
 * process (see prepared.ts).
 */
export function auditStatements(db: Database.Database) {
  const st = {
    insert: prepared(
      db,
      `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
       VALUES (@tenant, @at, @action, @resource, @status, @revision, @credential, @requestId, @ip)`,
    ),
    page: prepared(
      db,
      `SELECT id, client_hash, at, action, resource, status, revision, credential, request_id, ip FROM audit
       WHERE client_hash = ? AND (at, id) < (?, ?) ORDER BY at DESC, id DESC LIMIT ?`,
    ),
    prune: prepared(db, 'DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ? ORDER BY at LIMIT ?)'),
    mark: prepared(db, `SELECT value FROM meta WHERE key = 'encryption'`),
    anyClient: prepared(db, 'SELECT 1 FROM clients LIMIT 1'),
    setMark: prepared(db, `INSERT OR IGNORE INTO meta (key, value) VALUES ('encryption', ?)`),
  };
  return {
    /** Inserts one row; call inside a transaction to commit it with something else. */
    insert(r: AuditRecord): void {
      st.insert.run({ ...r, revision: r.revision ?? null });
    },
    page(tenant: TenantId, after: AuditPosition | undefined, limit: number): AuditEntry[] {
      const from = after ?? AUDIT_TOP;
      const rows = st.page.all(tenant, from.at, from.id, limit) as Row[];
      return rows.map(entryOf);
    },
    prune(before: string, limit: number): number {
      return st.prune.run(before, limit).changes;
    },
    /** See StoreAdapter.claimEncryption; run inside a write transaction. */
    claimEncryption(mark: string): string {
      const known = st.mark.get() as Row | undefined;
      if (known !== undefined) return String(known.value);
      st.setMark.run(st.anyClient.get() === undefined ? mark : PLAINTEXT_MARK);
      return String((st.mark.get() as Row).value);
    },
  };
}
