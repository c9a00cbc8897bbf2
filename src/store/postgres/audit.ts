import type { AuditEntry, AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { AUDIT_TOP, entryOf } from '../audit-rows.ts';
import type { AuditPosition, AuditStore } from '../port.ts';
import { statement as s, type PostgresAccess } from './sql.ts';

/** Many rows in one statement: parallel arrays, one per column (see {@link auditColumns}). */
export const INSERT_AUDITS = s(
  'insert_audits',
  `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
   SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[], $9::text[])`,
);

const SQL = {
  auditPage: s(
    'audit_page',
    `SELECT id, client_hash, at, action, resource, status, revision, credential, request_id, ip FROM audit
     WHERE client_hash = $1 AND (at, id) < ($2, $3) ORDER BY at DESC, id DESC LIMIT $4`,
  ),
  pruneAudit: s('prune_audit', 'DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY at LIMIT $2)'),
} as const;

/** Audit rows as the parameters of {@link INSERT_AUDITS}: one array per column. */
export function auditColumns(rows: readonly AuditRecord[]): unknown[][] {
  const column = <T>(f: (r: AuditRecord) => T): T[] => rows.map(f);
  return [
    column((r) => r.tenant),
    column((r) => r.at),
    column((r) => r.action),
    column((r) => r.resource),
    column((r) => r.status),
    column((r) => r.revision ?? null),
    column((r) => r.credential),
    column((r) => r.requestId),
    column((r) => r.ip),
  ];
}

/** The audit trail on PostgreSQL (see AuditStore). */
export class PostgresAudit implements AuditStore {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  async appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#db.query('audit', INSERT_AUDITS, auditColumns(rows));
  }

  async audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    const from = after ?? AUDIT_TOP;
    const { rows } = await this.#db.query('audit', SQL.auditPage, [tenant, from.at, from.id, limit]);
    return rows.map(entryOf);
  }

  async pruneAudit(before: string, limit: number): Promise<number> {
    return (await this.#db.query('audit', SQL.pruneAudit, [before, limit])).rowCount ?? 0;
  }
}
