import type Database from 'better-sqlite3';
import { whenFree } from './busy.ts';
import type { ChangeRecord, LoggedChange, Snapshot, WriteOutcome, WriteRefused } from '../../authz/changes.ts';
import type { ExportPage, ExportPosition, ImportDone } from '../../authz/transfer.ts';
import { toWire } from '../../errors/index.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { BoundaryCommitted, CreatedTenants, ImportRequest, PendingWrite, TenantStore, WriteSettled } from '../port.ts';
import { SqliteTransfer } from './transfer.ts';
import { changeFromRow } from '../changelog.ts';
import { storeFailure } from '../transient.ts';
import type { AuditRecord } from '../../audit/record.ts';
import { imageOfRows, type GraphImage } from '../../authz/graph-image.ts';
import { groupedMemberships, NO_ROWS, snapshotOfRows, type TenantRows } from '../../authz/snapshot-build.ts';
import { dueBoundaryOf, windowedEdge } from '../edge-windows.ts';
import { prepareTenants, ROLE_SEPARATOR, type TenantStatements } from './tenant-sql.ts';
import { applyRequest, commitBoundary } from './tenant-writes.ts';

type Row = Record<string, unknown>;

/** Thrown out of a request's savepoint to undo what its changes before the refused one did. */
class RequestRefused extends Error {
  readonly outcome: WriteOutcome;
  constructor(outcome: WriteOutcome) {
    super('write request refused');
    this.outcome = outcome;
  }
}

/**
 * The tenants' graphs on SQLite (see TenantStore): their state, revisions, changelog and writes.
 * better-sqlite3 is synchronous: the async methods of the port do their work before they return
 * (a pool thread runs them). `insertAudit` is the audit trail's insert, so that a write's audit
 * rows commit in the write's transaction. SQLite has one writer at a time: a boundary committed
 * by one process is found gone by the next.
 */
export class SqliteTenants implements TenantStore {
  readonly #stmt: TenantStatements;
  readonly #writeMany: (writes: readonly PendingWrite[]) => WriteSettled[];
  readonly #commitBoundaries: (nowMicros: number, limit: number) => BoundaryCommitted[];
  readonly #loadRows: (tenant: TenantId) => TenantRows;
  readonly #transfer: SqliteTransfer;

  constructor(db: Database.Database, insertAudit: (r: AuditRecord) => void) {
    const st = (this.#stmt = prepareTenants(db));
    // A request runs in a savepoint (a transaction nested in another is one in better-sqlite3):
    // a refusal or a failure undoes its changes alone, and the other requests still commit.
    const requestTx = db.transaction((w: PendingWrite): WriteOutcome => {
      const outcome = applyRequest(st, w, insertAudit);
      if (!outcome.ok) throw new RequestRefused(outcome);
      return outcome;
    });
    // A batch is one transaction (one lock, one fsync).
    const manyTx = db.transaction((writes: readonly PendingWrite[]): WriteSettled[] =>
      writes.map((w) => {
        try {
          return { ok: true, value: requestTx(w) };
        } catch (err) {
          if (err instanceof RequestRefused) return { ok: true, value: err.outcome };
          return { ok: false, error: toWire(storeFailure(err, 'write')) };
        }
      }),
    );
    this.#writeMany = (writes) => whenFree(() => manyTx.immediate(writes));
    const boundariesTx = db.transaction((nowMicros: number, limit: number): BoundaryCommitted[] => {
      const due = st.dueBoundaries.all(nowMicros, limit, nowMicros, limit, nowMicros, limit, nowMicros, limit, limit) as Row[];
      return due.flatMap((r) => commitBoundary(st, { ...dueBoundaryOf(r), id: r.client_id }, insertAudit) ?? []);
    });
    this.#commitBoundaries = (nowMicros, limit) => whenFree(() => boundariesTx.immediate(nowMicros, limit));
    const rowsTx = db.transaction((tenant: TenantId) => this.#readRows(tenant));
    this.#loadRows = (tenant) => whenFree(() => rowsTx.deferred(tenant));
    this.#transfer = new SqliteTransfer(db, st, insertAudit);
  }

  async exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.#transfer.exportPage(tenant, after, limit);
  }

  async importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    return this.#transfer.importData(request);
  }

  /** Read in one transaction, built after it: memberships come one row per user (see groupedMemberships). */
  async loadGraph(tenant: TenantId): Promise<GraphImage> {
    return imageOfRows(this.#loadRows(tenant));
  }

  /** The same read as {@link loadGraph}'s (the one a hydration runs), as rows. */
  async load(tenant: TenantId): Promise<Snapshot> {
    return snapshotOfRows(this.#loadRows(tenant));
  }

  async revision(tenant: TenantId): Promise<number> {
    const row = whenFree(() => this.#stmt.tenantRow.get(tenant)) as Row | undefined;
    return row === undefined ? 0 : Number(row.revision);
  }

  async writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    if (writes.length === 0) return [];
    try {
      return this.#writeMany(writes);
    } catch (err) {
      // The shared commit (or the lock) failed: none of the writes is in.
      const error = toWire(storeFailure(err, 'write'));
      return writes.map(() => ({ ok: false, error }));
    }
  }

  /** All in one write transaction: one writer at a time, so each boundary is found once. */
  async commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]> {
    if (limit <= 0) return [];
    return this.#commitBoundaries(nowMicros, limit);
  }

  async revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    if (tenants.length === 0) return [];
    // Read back from the database, where only hashed keys are ever written: TenantIds again.
    const rows = whenFree(() => this.#stmt.revisions.all(JSON.stringify(tenants))) as Array<{ hash: TenantId; revision: number }>;
    return rows.map((r) => [r.hash, r.revision]);
  }
  async tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    // Rows from before the sequence carry 0: the first look reads them too.
    const after = cursor === undefined ? -1 : Number(cursor);
    // Read back from the database, where only hashed keys are ever written: TenantIds again.
    const rows = whenFree(() => this.#stmt.tenantsSince.all(after)) as Array<{ changed_seq: number; hash: TenantId; revision: number }>;
    return { tenants: rows.map((r) => r.hash), revisions: rows.map((r) => Number(r.revision)), cursor: String(rows.at(-1)?.changed_seq ?? after) };
  }

  /** At most `limit` rows, then the rest of the last revision if the limit cut it: a page never ends inside a revision. */
  async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    const rows = whenFree(() => {
      const page = this.#stmt.changes.all(tenant, since, limit) as Row[];
      const last = page.at(-1);
      if (page.length < limit || last === undefined) return page;
      return page.concat(this.#stmt.restOfRevision.all(tenant, last.revision, last.seq) as Row[]);
    });
    return rows.map((r) => ({ revision: Number(r.revision), change: changeOf(r), at: String(r.at) }));
  }

  /** A tenant's rows, the one hydration read: memberships one row per user, roles joined; the windowed edges. */
  #readRows(tenant: TenantId): TenantRows {
    const row = this.#stmt.tenantRow.get(tenant) as Row | undefined;
    if (row === undefined) return NO_ROWS;
    const id = row.id;
    return {
      revision: Number(row.revision),
      roles: this.#stmt.roles.raw().all(id) as Array<[string, string]>,
      grants: this.#stmt.grants.raw().all(id) as Array<[string, string]>,
      memberships: groupedMemberships(this.#stmt.rolesOfUsers.raw().all(id) as Array<[string, string]>, ROLE_SEPARATOR),
      windows: [
        ...(this.#stmt.windowedGrants.all(id) as Row[]).map((r) =>
          windowedEdge({ kind: 'permission', role: String(r.role), permission: String(r.permission) }, r.not_before, r.expires_at),
        ),
        ...(this.#stmt.windowedMembers.all(id) as Row[]).map((r) =>
          windowedEdge({ kind: 'membership', user: String(r.user), role: String(r.role) }, r.not_before, r.expires_at),
        ),
      ],
    };
  }
}

/** Rebuilds a change from its changelog row. */
function changeOf(r: Row): LoggedChange {
  return changeFromRow({
    op: r.op,
    role: r.role,
    permission: r.permission,
    user: r.user,
    description: String(r.description ?? ''),
    notBefore: r.not_before,
    expiresAt: r.expires_at,
  });
}
