import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import { whenFree } from './busy.ts';
import type { AuditEntry, AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { AUDIT_TOP, entryOf } from '../audit-rows.ts';
import type { AuditPosition, AuditStore } from '../port.ts';

type Row = Record<string, unknown>;

/**
 * The audit trail on SQLite (see AuditStore). Its statements are kept for the life of the
 * process (see prepared.ts). {@link SqliteAudit.insert} is also how the other roles write the
 * audit row of a change, inside the change's own transaction.
 */
export class SqliteAudit implements AuditStore {
  readonly #st: ReturnType<typeof prepare>;
  readonly #append: (rows: readonly AuditRecord[]) => void;

  constructor(db: Database.Database) {
    this.#st = prepare(db);
    const tx = db.transaction((rows: readonly AuditRecord[]) => {
      for (const r of rows) this.insert(r);
    });
    this.#append = (rows) => whenFree(() => tx.immediate(rows));
  }

  /** Inserts one row; call inside a transaction to commit it with something else. */
  insert(r: AuditRecord): void {
    this.#st.insert.run({ ...r, revision: r.revision ?? null });
  }

  async appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    if (rows.length === 0) return;
    this.#append(rows);
  }

  async audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    const from = after ?? AUDIT_TOP;
    const rows = whenFree(() => this.#st.page.all(tenant, from.at, from.id, limit)) as Row[];
    return rows.map(entryOf);
  }

  async pruneAudit(before: string, limit: number): Promise<number> {
    return whenFree(() => this.#st.prune.run(before, limit).changes);
  }
}

function prepare(db: Database.Database) {
  return {
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
  };
}
