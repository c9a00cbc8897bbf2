import type Database from 'better-sqlite3';
import type { ImportChange, WriteRefused } from '../../authz/changes.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { type ExportPage, type ExportPosition, type ExportRow, type ImportDone, type ImportEdge } from '../../authz/transfer.ts';
import type { AuditRecord } from '../../audit/record.ts';
import { timestamp } from '../../time/index.ts';
import { importDescription } from '../changelog.ts';
import { preconditionFailed } from '../edge-windows.ts';
import { planAsChanges, planImport, type ImportPlan, type StoredData } from '../import-plan.ts';
import type { ImportRequest } from '../port.ts';
import { whenFree } from './busy.ts';
import { prepared } from './prepared.ts';
import type { TenantStatements } from './tenant-sql.ts';

type Row = Record<string, unknown>;
type Bound = number | null;

/** The export's reads: each section by its primary key, after a position (row values compare field by field). */
function prepareTransfer(db: Database.Database) {
  const p = (sql: string): Database.Statement => prepared(db, sql);
  return {
    rolesAfter: p('SELECT role, description FROM roles WHERE client_id = ? AND role > ? ORDER BY role LIMIT ?'),
    grantsAfter: p(
      `SELECT role, permission, not_before, expires_at FROM grants
       WHERE client_id = ? AND (role, permission) > (?, ?) ORDER BY role, permission LIMIT ?`,
    ),
    membersAfter: p(
      `SELECT role, user, not_before, expires_at FROM memberships
       WHERE client_id = ? AND (role, user) > (?, ?) ORDER BY role, user LIMIT ?`,
    ),
    allRoles: p('SELECT role, description FROM roles WHERE client_id = ?'),
    allGrants: p('SELECT role, permission, not_before, expires_at FROM grants WHERE client_id = ?'),
    allMembers: p('SELECT role, user, not_before, expires_at FROM memberships WHERE client_id = ?'),
    describeRole: p('UPDATE roles SET description = ? WHERE client_id = ? AND role = ?'),
  };
}

const bound = (v: unknown): Bound => (v === null || v === undefined ? null : Number(v));

/**
 * A client's data leaving and coming back (docs/api.md §17) on SQLite. An export page is one
 * read transaction: its rows and the tenant's revision agree. An import is one write transaction
 * (the lock taken at once), its plan worked out from the rows it reads inside it.
 */
export class SqliteTransfer {
  readonly #st: TenantStatements;
  readonly #tx: ReturnType<typeof prepareTransfer>;
  readonly #page: (tenant: TenantId, after: ExportPosition | undefined, limit: number) => ExportPage;
  readonly #import: (r: ImportRequest) => ImportDone | WriteRefused;
  readonly #insertAudit: (r: AuditRecord) => void;

  constructor(db: Database.Database, st: TenantStatements, insertAudit: (r: AuditRecord) => void) {
    this.#st = st;
    this.#tx = prepareTransfer(db);
    this.#insertAudit = insertAudit;
    const pageTx = db.transaction((tenant: TenantId, after: ExportPosition | undefined, limit: number) => this.#readPage(tenant, after, limit));
    this.#page = (tenant, after, limit) => whenFree(() => pageTx.deferred(tenant, after, limit));
    const importTx = db.transaction((r: ImportRequest) => this.#importIn(r));
    // A dry run reads only: no write lock. Its transaction is rolled back all the same (it writes nothing).
    this.#import = (r) => whenFree(() => (r.dry ? importTx.deferred(r) : importTx.immediate(r)));
  }

  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): ExportPage {
    return this.#page(tenant, after, limit);
  }

  importData(request: ImportRequest): ImportDone | WriteRefused {
    return this.#import(request);
  }

  #readPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): ExportPage {
    const row = this.#st.tenantRow.get(tenant) as Row | undefined;
    if (row === undefined) return { revision: 0, rows: [] };
    const id = row.id;
    const rows: ExportRow[] = [];
    let from: ExportPosition = after ?? { kind: 'role', role: '', other: '' };
    const left = (): number => limit - rows.length;
    if (from.kind === 'role') {
      for (const r of this.#tx.rolesAfter.raw().all(id, from.role, left()) as Array<[string, string]>) rows.push(['role', r[0], r[1]]);
      if (left() > 0) from = { kind: 'permission', role: '', other: '' };
    }
    if (from.kind === 'permission' && left() > 0) {
      for (const r of this.#tx.grantsAfter.raw().all(id, from.role, from.other, left()) as Array<[string, string, unknown, unknown]>) {
        rows.push(['permission', r[0], r[1], bound(r[2]), bound(r[3])]);
      }
      if (left() > 0) from = { kind: 'membership', role: '', other: '' };
    }
    if (from.kind === 'membership' && left() > 0) {
      for (const r of this.#tx.membersAfter.raw().all(id, from.role, from.other, left()) as Array<[string, string, unknown, unknown]>) {
        rows.push(['membership', r[0], r[1], bound(r[2]), bound(r[3])]);
      }
    }
    return { revision: Number(row.revision), rows };
  }

  /** Inside the import's transaction: the precondition, the plan, then (unless dry or a no-op) its rows and one revision. */
  #importIn(r: ImportRequest): ImportDone | WriteRefused {
    const row = this.#st.tenantRow.get(r.tenant) as Row | undefined;
    const current = row === undefined ? 0 : Number(row.revision);
    if (r.ifMatch !== undefined && r.ifMatch !== current) return preconditionFailed(r.ifMatch, current);
    const plan = planImport(row === undefined ? { roles: [], grants: [], memberships: [] } : this.#stored(row.id), r.file, r.mode);
    const counts = { roles: plan.roles, permissions: plan.permissions, memberships: plan.memberships, added: plan.added, removed: plan.removed };
    if (r.dry) return { ok: true, revision: current, changed: plan.changed, ...counts, changes: planAsChanges(plan) };
    if (!plan.changed) return { ok: true, revision: current, changed: false, ...counts };
    const id = row?.id ?? (this.#st.insertTenant.get(r.tenant) as Row).id;
    this.#apply(id, plan);
    const revision = Number((this.#st.bumpRevision.get(id) as Row).revision);
    const at = timestamp();
    const change: ImportChange = { op: 'client.import', added: plan.added, removed: plan.removed };
    this.#st.insertChange.run(id, revision, 0, change.op, '', null, null, importDescription(change), null, null, at);
    if (r.audit !== undefined) this.#insertAudit({ ...r.audit, action: change.op, tenant: r.tenant, at, revision });
    return { ok: true, revision, changed: true, ...counts };
  }

  #stored(id: unknown): StoredData {
    const edges = (rows: unknown[]): ImportEdge[] => (rows as Array<[string, string, unknown, unknown]>).map((e) => [e[0], e[1], bound(e[2]), bound(e[3])]);
    return {
      roles: this.#tx.allRoles.raw().all(id) as Array<[string, string]>,
      grants: edges(this.#tx.allGrants.raw().all(id)),
      memberships: edges(this.#tx.allMembers.raw().all(id)),
    };
  }

  /** The plan's rows: removals first (a deleted role's edges are among them), then windows, additions. */
  #apply(id: unknown, plan: ImportPlan): void {
    const st = this.#st;
    for (const e of plan.removeGrants) st.deleteGrant.run(id, e[0], e[1]);
    for (const e of plan.removeMembers) st.deleteMember.run(id, e[0], e[1]);
    for (const role of plan.deleteRoles) st.deleteRole.run(id, role);
    for (const [role, description] of plan.createRoles) st.insertRole.run(id, role, description);
    for (const [role, description] of plan.describeRoles) this.#tx.describeRole.run(description, id, role);
    for (const e of plan.rewindowGrants) st.setGrantWindow.run(e[2], e[3], id, e[0], e[1]);
    for (const e of plan.rewindowMembers) st.setMemberWindow.run(e[2], e[3], id, e[0], e[1]);
    for (const e of plan.addGrants) st.insertGrant.run(id, e[0], e[1], e[2], e[3]);
    for (const e of plan.addMembers) st.insertMember.run(id, e[0], e[1], e[2], e[3]);
  }
}
