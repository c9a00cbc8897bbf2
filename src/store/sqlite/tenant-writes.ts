import type { Change, ChangeEffect, Window, WriteOutcome } from '../../authz/changes.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { edgeFacts, refusal, refused } from '../../authz/write-rules.ts';
import { auditAsCommitted, type AuditRecord } from '../../audit/record.ts';
import { timestamp } from '../../time/index.ts';
import type { BoundaryCommitted, PendingWrite } from '../port.ts';
import {
  boundaryAsked,
  boundaryChangeOf,
  columnsOf,
  edgeResource,
  microsOfWire,
  preconditionFailed,
  settledWindow,
  SYSTEM_CREDENTIAL,
  wireOfMicros,
  type DueBoundary,
} from '../edge-windows.ts';
import type { TenantStatements } from './tenant-sql.ts';

type Row = Record<string, unknown>;

/** A tenant's row id (SQLite's integer key). */
type RowId = unknown;

/** What one change did: itself as committed, the edge fact its statement found, what went with it. */
interface Applied {
  readonly change: Change;
  /** Rows its insert-if-absent or delete changed (see edgeFacts); 1 for the changes checked before. */
  readonly rowsChanged: number;
  readonly effect: ChangeEffect;
}

/**
 * Runs inside the request's savepoint: the precondition, then each change in order, checked
 * against the state the earlier ones left (authz/write-rules decides), then one revision for all
 * with a changelog row and an audit row per change. A refusal is returned as soon as it is known:
 * the caller rolls the savepoint back, so the changes before it are undone.
 */
export function applyRequest(st: TenantStatements, w: PendingWrite, insertAudit: (r: AuditRecord) => void): WriteOutcome {
  if (w.changes.length === 0) throw new Error('a write request without changes');
  const row = st.tenantRow.get(w.tenant) as Row | undefined;
  const current = row === undefined ? 0 : Number(row.revision);
  if (w.ifMatch !== undefined && w.ifMatch !== current) return preconditionFailed(w.ifMatch, current);
  const at = timestamp();
  const now = microsOfWire(at);
  let id: RowId = row?.id;
  const applied: Applied[] = [];
  for (const [index, change] of w.changes.entries()) {
    const roleExists = id !== undefined && st.roleExists.get(id, change.role) !== undefined;
    const before = refusal(change, { roleExists });
    if (before !== undefined) return refused(before, current, index);
    id ??= (st.insertTenant.get(w.tenant) as Row).id;
    const done = applyChange(st, id, change, now);
    const after = refusal(change, { roleExists, ...edgeFacts(change, done.rowsChanged) });
    if (after !== undefined) return refused(after, current, index);
    applied.push(done);
  }
  const revision = Number((st.bumpRevision.get(id) as Row).revision);
  const audit =
    w.audit === undefined
      ? undefined
      : auditAsCommitted(
          w.audit,
          applied.map((a) => a.change),
        );
  applied.forEach(({ change }, seq) => {
    insertChange(st, id, revision, seq, change, at);
    if (audit !== undefined) insertAudit({ ...audit, action: change.op, tenant: w.tenant, at, revision });
  });
  return { ok: true, revision, changes: applied.map((a) => a.change), effects: applied.map((a) => a.effect) };
}

function insertChange(st: TenantStatements, id: RowId, revision: number, seq: number, change: Change, at: string): void {
  const c = columnsOf(change);
  st.insertChange.run(id, revision, seq, c.op, c.role, c.permission, c.user, c.description, c.notBefore, c.expiresAt, at);
}

const bounds = (w: Window): [number | null, number | null] => [w.notBefore ?? null, w.expiresAt ?? null];

/** The change's own statements, on a tenant whose role check passed. */
function applyChange(st: TenantStatements, id: RowId, change: Change, now: number): Applied {
  const done = (c: Change, rowsChanged: number): Applied => ({ change: c, rowsChanged, effect: {} });
  switch (change.op) {
    case 'role.create':
      st.insertRole.run(id, change.role, change.description);
      return done(change, 1);
    case 'role.delete': {
      const permissionsRemoved = st.deleteGrantsOfRole.run(id, change.role).changes;
      const membershipsRemoved = st.deleteMembersOfRole.run(id, change.role).changes;
      st.deleteRole.run(id, change.role);
      return { change, rowsChanged: 1, effect: { permissionsRemoved, membershipsRemoved } };
    }
    case 'permission.grant':
    case 'permission.window': {
      const { role, permission } = change;
      const w = settledWindow(change, now);
      if (change.op === 'permission.window' && st.setGrantWindow.run(...bounds(w), id, role, permission).changes === 1) {
        return done({ op: 'permission.window', role, permission, ...w }, 1);
      }
      // A window set on an absent edge creates it: committed as its grant.
      return done({ op: 'permission.grant', role, permission, ...w }, st.insertGrant.run(id, role, permission, ...bounds(w)).changes);
    }
    case 'membership.add':
    case 'membership.window': {
      const { role, user } = change;
      const w = settledWindow(change, now);
      if (change.op === 'membership.window' && st.setMemberWindow.run(...bounds(w), id, role, user).changes === 1) {
        return done({ op: 'membership.window', role, user, ...w }, 1);
      }
      return done({ op: 'membership.add', role, user, ...w }, st.insertMember.run(id, role, user, ...bounds(w)).changes);
    }
    case 'permission.revoke':
      return done(change, st.deleteGrant.run(id, change.role, change.permission).changes);
    case 'membership.remove':
      return done(change, st.deleteMember.run(id, change.role, change.user).changes);
    default:
      throw boundaryAsked(change);
  }
}

/**
 * Inside the write transaction: commits one due boundary while its edge still has that bound
 * (the statement's condition), as a write of its own: revision + 1, a changelog row timed at the
 * boundary, an audit row by the service. Undefined when the edge no longer has it.
 */
export function commitBoundary(
  st: TenantStatements,
  b: DueBoundary & { readonly id: RowId },
  insertAudit: (r: AuditRecord) => void,
): BoundaryCommitted | undefined {
  const change = boundaryChangeOf(b);
  const statement =
    b.kind === 'permission' ? (b.which === 'activate' ? st.activateGrant : st.expireGrant) : b.which === 'activate' ? st.activateMember : st.expireMember;
  if (statement.run(b.id, b.role, b.other, b.bound).changes === 0) return undefined;
  const tenant = String((st.tenantById.get(b.id) as Row).hash) as TenantId;
  const revision = Number((st.bumpRevision.get(b.id) as Row).revision);
  const at = wireOfMicros(b.bound);
  insertChange(st, b.id, revision, 0, change, at);
  insertAudit({ tenant, at, action: change.op, resource: edgeResource(change), status: 200, revision, credential: SYSTEM_CREDENTIAL, requestId: '', ip: '' });
  return { tenant, revision, change, at };
}
