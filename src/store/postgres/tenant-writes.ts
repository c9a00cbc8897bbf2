import type { QueryResult } from 'pg';
import type { Change, ChangeEffect, Window, WriteOutcome } from '../../authz/changes.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { edgeFacts, refusal, refused } from '../../authz/write-rules.ts';
import { auditAsCommitted, type AuditOfWrite } from '../../audit/record.ts';
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
import { run, statement as s, type Db } from './sql.ts';

/** The due bounds of one kind from one table, oldest first, through its partial index: $1 now, $2 the limit. */
const dueOf = (table: 'grants' | 'memberships', bound: 'not_before' | 'expires_at'): string =>
  `(SELECT '${table === 'grants' ? 'permission' : 'membership'}' AS kind, '${bound === 'not_before' ? 'activate' : 'expire'}' AS which,
      client_id, role, ${table === 'grants' ? 'permission' : '"user"'} AS other, ${bound} AS bound
    FROM ${table} WHERE ${bound} IS NOT NULL AND ${bound} <= $1 ORDER BY ${bound} LIMIT $2)`;

export const WRITE_SQL = {
  /** Locks the tenant's row for the rest of the transaction: writers of one tenant queue here. */
  lockTenantRow: s('lock_tenant_row', 'SELECT id, revision FROM clients WHERE hash = $1 FOR UPDATE'),
  lockTenantById: s('lock_tenant_by_id', 'SELECT hash FROM clients WHERE id = $1 FOR UPDATE'),
  insertTenant: s('insert_tenant', 'INSERT INTO clients (hash) VALUES ($1) ON CONFLICT (hash) DO NOTHING'),
  roleExists: s('role_exists', 'SELECT 1 FROM roles WHERE client_id = $1 AND role = $2'),
  insertRole: s('insert_role', 'INSERT INTO roles (client_id, role, description) VALUES ($1, $2, $3::bytea)'),
  /** Removes a role with its grants and memberships (windowed or not); counts what went with it. */
  deleteRole: s(
    'delete_role',
    `WITH g AS (DELETE FROM grants WHERE client_id = $1 AND role = $2 RETURNING 1),
          m AS (DELETE FROM memberships WHERE client_id = $1 AND role = $2 RETURNING 1),
          r AS (DELETE FROM roles WHERE client_id = $1 AND role = $2 RETURNING 1)
     SELECT (SELECT count(*) FROM g)::int AS grants, (SELECT count(*) FROM m)::int AS members, (SELECT count(*) FROM r)::int AS roles`,
  ),
  insertGrant: s(
    'insert_grant',
    'INSERT INTO grants (client_id, role, permission, not_before, expires_at) VALUES ($1, $2, $3, $4::bigint, $5::bigint) ON CONFLICT DO NOTHING',
  ),
  setGrantWindow: s(
    'set_grant_window',
    'UPDATE grants SET not_before = $4::bigint, expires_at = $5::bigint WHERE client_id = $1 AND role = $2 AND permission = $3',
  ),
  deleteGrant: s('delete_grant', 'DELETE FROM grants WHERE client_id = $1 AND role = $2 AND permission = $3'),
  insertMember: s(
    'insert_member',
    'INSERT INTO memberships (client_id, role, "user", not_before, expires_at) VALUES ($1, $2, $3, $4::bigint, $5::bigint) ON CONFLICT DO NOTHING',
  ),
  setMemberWindow: s(
    'set_member_window',
    'UPDATE memberships SET not_before = $4::bigint, expires_at = $5::bigint WHERE client_id = $1 AND role = $2 AND "user" = $3',
  ),
  deleteMember: s('delete_member', 'DELETE FROM memberships WHERE client_id = $1 AND role = $2 AND "user" = $3'),
  /**
   * The request's revision + 1, its changelog rows ($3… one array per column, in order) and, when
   * $10 (the resource) is not null, an audit row per change: one round trip.
   */
  commitRequest: s(
    'commit_request',
    `WITH bumped AS (UPDATE clients SET revision = revision + 1, changed_xid = pg_current_xact_id() WHERE id = $1 RETURNING id, hash, revision),
          c AS (SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bigint[], $9::bigint[])
                  WITH ORDINALITY AS c(op, role, permission, "user", description, not_before, expires_at, n)),
          logged AS (INSERT INTO changelog (client_id, revision, seq, op, role, permission, "user", description, not_before, expires_at, at)
                     SELECT b.id, b.revision, c.n - 1, c.op, c.role, c.permission, c."user", c.description, c.not_before, c.expires_at, $2::text
                     FROM bumped b, c),
          audited AS (INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
                      SELECT b.hash, $2::text, c.op, $10::text, $11::int, b.revision, $12::text, $13::text, $14::text
                      FROM bumped b, c WHERE $10::text IS NOT NULL ORDER BY c.n)
     SELECT revision FROM bumped`,
  ),
  /** The due bounds of every tenant, oldest first, at most $2 (each kind through its index). */
  dueBoundaries: s(
    'due_boundaries',
    `SELECT * FROM (${dueOf('grants', 'not_before')} UNION ALL ${dueOf('grants', 'expires_at')}
                    UNION ALL ${dueOf('memberships', 'not_before')} UNION ALL ${dueOf('memberships', 'expires_at')}) d
     ORDER BY bound, client_id, kind, role, other, which LIMIT $2`,
  ),
  // A boundary applies only while the edge still has that very bound (a replaced window is left
  // alone; another process that committed it first left nothing to find).
  activateGrant: s('activate_grant', 'UPDATE grants SET not_before = NULL WHERE client_id = $1 AND role = $2 AND permission = $3 AND not_before = $4::bigint'),
  expireGrant: s('expire_grant', 'DELETE FROM grants WHERE client_id = $1 AND role = $2 AND permission = $3 AND expires_at = $4::bigint'),
  activateMember: s(
    'activate_member',
    'UPDATE memberships SET not_before = NULL WHERE client_id = $1 AND role = $2 AND "user" = $3 AND not_before = $4::bigint',
  ),
  expireMember: s('expire_member', 'DELETE FROM memberships WHERE client_id = $1 AND role = $2 AND "user" = $3 AND expires_at = $4::bigint'),
} as const;

const SQL = WRITE_SQL;

/** The tenant's row, locked; created first when `create` (a request that creates a role). */
async function lockTenantRow(db: Db, tenant: TenantId, create: boolean): Promise<{ id: string; revision: number } | undefined> {
  let locked = (await run(db, SQL.lockTenantRow, [tenant])).rows[0];
  if (locked === undefined && create) {
    // Concurrent creators of one tenant: one inserts, the others wait on the unique key, then
    // find the row and queue on its lock.
    await run(db, SQL.insertTenant, [tenant]);
    locked = (await run(db, SQL.lockTenantRow, [tenant])).rows[0];
  }
  return locked === undefined ? undefined : { id: String(locked.id), revision: Number(locked.revision) };
}

/** What one change did: itself as committed, the edge fact its statement found, what went with it. */
interface Applied {
  readonly change: Change;
  /** Rows its insert-if-absent or delete changed (see edgeFacts); 1 for the changes checked before. */
  readonly rowsChanged: number;
  readonly effect: ChangeEffect;
}

/**
 * Inside the request's transaction: locks the tenant, checks the precondition, then each change
 * in order against the state the earlier ones left (authz/write-rules decides), then commits one
 * revision for all. A refusal rolls the whole transaction back.
 */
export async function applyRequest(db: Db, w: PendingWrite): Promise<WriteOutcome> {
  if (w.changes.length === 0) throw new Error('a write request without changes');
  const row = await lockTenantRow(
    db,
    w.tenant,
    w.changes.some((c) => c.op === 'role.create'),
  );
  const current = row?.revision ?? 0;
  if (w.ifMatch !== undefined && w.ifMatch !== current) return preconditionFailed(w.ifMatch, current);
  const at = timestamp();
  const now = microsOfWire(at);
  const applied: Applied[] = [];
  for (const [index, change] of w.changes.entries()) {
    const roleExists = row !== undefined && (await run(db, SQL.roleExists, [row.id, change.role])).rowCount === 1;
    const before = refusal(change, { roleExists });
    if (before !== undefined) return refused(before, current, index);
    if (row === undefined) throw new Error('tenant row missing after lock'); // unreachable: a role exists only in a tenant
    const done = await applyChange(db, row.id, change, now);
    const after = refusal(change, { roleExists, ...edgeFacts(change, done.rowsChanged) });
    if (after !== undefined) return refused(after, current, index);
    applied.push(done);
  }
  if (row === undefined) throw new Error('tenant row missing after lock');
  const changes = applied.map((a) => a.change);
  const revision = await commitRequest(db, row.id, changes, at, w.audit === undefined ? undefined : auditAsCommitted(w.audit, changes));
  return { ok: true, revision, changes, effects: applied.map((a) => a.effect) };
}

/** The revision bump, changelog rows and audit rows of a request, in one statement. */
async function commitRequest(db: Db, id: string, changes: readonly Change[], at: string, audit: AuditOfWrite | undefined): Promise<number> {
  const cols = changes.map(columnsOf);
  const column = <K extends keyof (typeof cols)[number]>(k: K): Array<(typeof cols)[number][K]> => cols.map((c) => c[k]);
  const descriptions = column('description').map((d) => (d === null ? null : Buffer.from(d, 'utf8')));
  const values = [id, at, column('op'), column('role'), column('permission'), column('user'), descriptions, column('notBefore'), column('expiresAt')];
  const auditValues = audit === undefined ? [null, null, null, null, null] : [audit.resource, audit.status, audit.credential, audit.requestId, audit.ip];
  const committed = await run(db, SQL.commitRequest, [...values, ...auditValues]);
  return Number(committed.rows[0]?.revision);
}

const bounds = (w: Window): [number | null, number | null] => [w.notBefore ?? null, w.expiresAt ?? null];

/** The change itself, on a tenant whose role check passed. */
async function applyChange(db: Db, id: string, change: Change, now: number): Promise<Applied> {
  // pg counts every INSERT, UPDATE and DELETE; a null count is taken as done, as it always was.
  const count = (r: QueryResult): number => r.rowCount ?? 1;
  const done = (c: Change, rowsChanged: number): Applied => ({ change: c, rowsChanged, effect: {} });
  switch (change.op) {
    case 'role.create':
      await run(db, SQL.insertRole, [id, change.role, Buffer.from(change.description, 'utf8')]);
      return done(change, 1);
    case 'role.delete': {
      const counts = (await run(db, SQL.deleteRole, [id, change.role])).rows[0];
      return { change, rowsChanged: 1, effect: { permissionsRemoved: Number(counts?.grants), membershipsRemoved: Number(counts?.members) } };
    }
    case 'permission.grant':
    case 'permission.window': {
      const { role, permission } = change;
      const w = settledWindow(change, now);
      if (change.op === 'permission.window' && count(await run(db, SQL.setGrantWindow, [id, role, permission, ...bounds(w)])) === 1) {
        return done({ op: 'permission.window', role, permission, ...w }, 1);
      }
      // A window set on an absent edge creates it: committed as its grant.
      return done({ op: 'permission.grant', role, permission, ...w }, count(await run(db, SQL.insertGrant, [id, role, permission, ...bounds(w)])));
    }
    case 'membership.add':
    case 'membership.window': {
      const { role, user } = change;
      const w = settledWindow(change, now);
      if (change.op === 'membership.window' && count(await run(db, SQL.setMemberWindow, [id, role, user, ...bounds(w)])) === 1) {
        return done({ op: 'membership.window', role, user, ...w }, 1);
      }
      return done({ op: 'membership.add', role, user, ...w }, count(await run(db, SQL.insertMember, [id, role, user, ...bounds(w)])));
    }
    case 'permission.revoke':
      return done(change, count(await run(db, SQL.deleteGrant, [id, change.role, change.permission])));
    case 'membership.remove':
      return done(change, count(await run(db, SQL.deleteMember, [id, change.role, change.user])));
    default:
      throw boundaryAsked(change);
  }
}

/**
 * Inside a transaction of its own: commits one due boundary as a write. The tenant's row is
 * locked first, as by every write (writers of a tenant queue there, and no two lock an edge then
 * the tenant the other way round); then the conditional statement finds the edge only if it still
 * has that bound, which at READ COMMITTED it reads as the last writer committed it: of two
 * processes committing the same boundary, the second finds nothing. Undefined then.
 */
export async function commitBoundary(db: Db, b: DueBoundary & { readonly id: string }): Promise<BoundaryCommitted | undefined> {
  const locked = (await run(db, SQL.lockTenantById, [b.id])).rows[0];
  if (locked === undefined) return undefined;
  const statement =
    b.kind === 'permission' ? (b.which === 'activate' ? SQL.activateGrant : SQL.expireGrant) : b.which === 'activate' ? SQL.activateMember : SQL.expireMember;
  if ((await run(db, statement, [b.id, b.role, b.other, b.bound])).rowCount !== 1) return undefined;
  const change = boundaryChangeOf(b);
  const tenant = String(locked.hash) as TenantId;
  const at = wireOfMicros(b.bound);
  const audit: AuditOfWrite = { action: change.op, resource: edgeResource(change), status: 200, credential: SYSTEM_CREDENTIAL, requestId: '', ip: '' };
  const revision = await commitRequest(db, b.id, [change], at, audit);
  return { tenant, revision, change, at };
}
