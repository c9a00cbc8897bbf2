import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import { whenFree } from './busy.ts';
import type { Change, ChangeRecord, Snapshot } from '../../authz/changes.ts';
import { timestamp } from '../../time/index.ts';
import { toWire } from '../../errors/index.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { CreatedTenants, PendingWrite, TenantStore, WriteOutcome, WriteSettled } from '../port.ts';
import { changeFromRow } from '../changelog.ts';
import { edgeFacts, refusal, refused } from '../../authz/write-rules.ts';
import { storeFailure } from '../transient.ts';
import type { AuditOfWrite, AuditRecord } from '../../audit/record.ts';
import { imageOfRows, type GraphImage } from '../../authz/graph-image.ts';
import { groupedMemberships, NO_ROWS, snapshotOfRows, type TenantRows } from '../../authz/snapshot-build.ts';

type Row = Record<string, unknown>;

/** Joins a user's roles in one row of a hydration: no name may hold it (docs/api.md §4). */
const ROLE_SEPARATOR = ',';

/**
 * The tenants' graphs on SQLite (see TenantStore): their state, revisions, changelog and writes.
 * better-sqlite3 is synchronous: the async methods of the port do their work before they return
 * (a pool thread runs them). `insertAudit` is the audit trail's insert, so that a write's audit
 * row commits in the write's transaction.
 */
export class SqliteTenants implements TenantStore {
  readonly #stmt: ReturnType<typeof prepare>;
  readonly #insertAudit: (r: AuditRecord) => void;
  readonly #writeMany: (writes: readonly PendingWrite[]) => WriteSettled[];
  readonly #loadRows: (tenant: TenantId) => TenantRows;

  constructor(db: Database.Database, insertAudit: (r: AuditRecord) => void) {
    this.#stmt = prepare(db);
    this.#insertAudit = insertAudit;
    const writeTx = db.transaction((w: PendingWrite) => this.#applyWrite(w.tenant, w.change, w.audit));
    // A batch is one transaction (one lock, one fsync); each write in it runs in a savepoint (a
    // transaction nested in another is one in better-sqlite3), so a write that throws is undone
    // alone and the others still commit.
    const manyTx = db.transaction((writes: readonly PendingWrite[]): WriteSettled[] =>
      writes.map((w) => {
        try {
          return { ok: true, value: writeTx(w) };
        } catch (err) {
          return { ok: false, error: toWire(storeFailure(err, 'write')) };
        }
      }),
    );
    this.#writeMany = (writes) => whenFree(() => manyTx.immediate(writes));
    const rowsTx = db.transaction((tenant: TenantId) => this.#readRows(tenant));
    this.#loadRows = (tenant) => whenFree(() => rowsTx.deferred(tenant));
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
  async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    const rows = whenFree(() => this.#stmt.changes.all(tenant, since, limit)) as Row[];
    return rows.map((r) => ({ revision: Number(r.revision), change: changeOf(r), at: String(r.at) }));
  }

  /** A tenant's rows, the one hydration read: memberships one row per user, roles joined. */
  #readRows(tenant: TenantId): TenantRows {
    const row = this.#stmt.tenantRow.get(tenant) as Row | undefined;
    if (row === undefined) return NO_ROWS;
    const id = row.id;
    return {
      revision: Number(row.revision),
      roles: this.#stmt.roles.raw().all(id) as Array<[string, string]>,
      grants: this.#stmt.grants.raw().all(id) as Array<[string, string]>,
      memberships: groupedMemberships(this.#stmt.rolesOfUsers.raw().all(id) as Array<[string, string]>, ROLE_SEPARATOR),
    };
  }

  /**
   * Runs inside `BEGIN IMMEDIATE`: checks the change against the stored state (authz/write-rules
   * decides), then commits it. A refused write changes nothing: its role check comes before any
   * statement, and the grant or membership check is the no-op insert or delete itself.
   */
  #applyWrite(tenant: TenantId, change: Change, audit: AuditOfWrite | undefined): WriteOutcome {
    const s = this.#stmt;
    const row = s.tenantRow.get(tenant) as Row | undefined;
    const current = row === undefined ? 0 : Number(row.revision);
    const id = row?.id;
    const roleExists = id !== undefined && s.roleExists.get(id, change.role) !== undefined;
    const before = refusal(change, { roleExists });
    if (before !== undefined) return refused(before, current);
    const tenantRowId = id ?? (s.insertTenant.get(tenant) as Row).id;
    const { rowsChanged, ...removed } = this.#applyChange(tenantRowId, change);
    const after = refusal(change, { roleExists, ...edgeFacts(change, rowsChanged) });
    if (after !== undefined) return refused(after, current);
    const revision = Number((s.bumpRevision.get(tenantRowId) as Row).revision);
    const at = timestamp();
    s.insertChange.run(
      tenantRowId,
      revision,
      change.op,
      change.role,
      'permission' in change ? change.permission : null,
      'user' in change ? change.user : null,
      change.op === 'role.create' ? change.description : null,
      at,
    );
    if (audit !== undefined) this.#insertAudit({ ...audit, tenant, at, revision });
    return { ok: true, revision, change, ...removed };
  }

  /**
   * The change's own statements. `rowsChanged` is what its insert-if-absent or delete did (a
   * grant's or membership's existence, see `edgeFacts`); role changes report 1, their check came before.
   */
  #applyChange(tenantRowId: unknown, change: Change): Applied {
    const s = this.#stmt;
    switch (change.op) {
      case 'role.create':
        s.insertRole.run(tenantRowId, change.role, change.description);
        return { rowsChanged: 1 };
      case 'role.delete': {
        const permissionsRemoved = s.deleteGrantsOfRole.run(tenantRowId, change.role).changes;
        const membershipsRemoved = s.deleteMembersOfRole.run(tenantRowId, change.role).changes;
        s.deleteRole.run(tenantRowId, change.role);
        return { rowsChanged: 1, permissionsRemoved, membershipsRemoved };
      }
      case 'permission.grant':
        return { rowsChanged: s.insertGrant.run(tenantRowId, change.role, change.permission).changes };
      case 'permission.revoke':
        return { rowsChanged: s.deleteGrant.run(tenantRowId, change.role, change.permission).changes };
      case 'membership.add':
        return { rowsChanged: s.insertMember.run(tenantRowId, change.role, change.user).changes };
      case 'membership.remove':
        return { rowsChanged: s.deleteMember.run(tenantRowId, change.role, change.user).changes };
    }
  }
}

interface Applied {
  readonly rowsChanged: number;
  /** For role.delete: what went with the role. */
  readonly permissionsRemoved?: number;
  readonly membershipsRemoved?: number;
}

/** Rebuilds a change from its changelog row. */
function changeOf(r: Row): Change {
  return changeFromRow({ op: r.op, role: r.role, permission: r.permission, user: r.user, description: String(r.description ?? '') });
}

function prepare(db: Database.Database) {
  const statements = {
    tenantRow: prepared(db, 'SELECT id, revision FROM clients WHERE hash = ?'),
    revisions: prepared(db, 'SELECT hash, revision FROM clients WHERE hash IN (SELECT value FROM json_each(?))'),
    // One writer at a time, each new row numbered past every committed one: ids grow in commit order.
    tenantsSince: prepared(db, 'SELECT changed_seq, hash, revision FROM clients WHERE changed_seq > ? ORDER BY changed_seq'),
    insertTenant: prepared(db, 'INSERT INTO clients (hash, revision) VALUES (?, 0) RETURNING id'),
    bumpRevision: prepared(
      db,
      'UPDATE clients SET revision = revision + 1, changed_seq = (SELECT coalesce(max(changed_seq), 0) + 1 FROM clients) WHERE id = ? RETURNING revision',
    ),
    roles: prepared(db, 'SELECT role, description FROM roles WHERE client_id = ?'),
    grants: prepared(db, 'SELECT role, permission FROM grants WHERE client_id = ?'),
    // A user's roles in one row, read in user order from the covering index: a fifth of the rows
    // and strings a million memberships would take one row each.
    rolesOfUsers: prepared(
      db,
      `SELECT user, group_concat(role, '${ROLE_SEPARATOR}') FROM memberships INDEXED BY memberships_by_user WHERE client_id = ? GROUP BY user ORDER BY user`,
    ),
    roleExists: prepared(db, 'SELECT 1 FROM roles WHERE client_id = ? AND role = ?'),
    insertRole: prepared(db, 'INSERT INTO roles (client_id, role, description) VALUES (?, ?, ?)'),
    deleteRole: prepared(db, 'DELETE FROM roles WHERE client_id = ? AND role = ?'),
    deleteGrantsOfRole: prepared(db, 'DELETE FROM grants WHERE client_id = ? AND role = ?'),
    deleteMembersOfRole: prepared(db, 'DELETE FROM memberships WHERE client_id = ? AND role = ?'),
    insertGrant: prepared(db, 'INSERT OR IGNORE INTO grants (client_id, role, permission) VALUES (?, ?, ?)'),
    deleteGrant: prepared(db, 'DELETE FROM grants WHERE client_id = ? AND role = ? AND permission = ?'),
    insertMember: prepared(db, 'INSERT OR IGNORE INTO memberships (client_id, role, user) VALUES (?, ?, ?)'),
    deleteMember: prepared(db, 'DELETE FROM memberships WHERE client_id = ? AND role = ? AND user = ?'),
    changes: prepared(
      db,
      `SELECT c.revision, c.op, c.role, c.permission, c.user, c.description, c.at FROM changelog c
       JOIN clients t ON t.id = c.client_id WHERE t.hash = ? AND c.revision > ? ORDER BY c.revision LIMIT ?`,
    ),
    insertChange: prepared(db, 'INSERT INTO changelog (client_id, revision, op, role, permission, user, description, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
  };
  return statements;
}
