import type { QueryResult } from 'pg';
import type { Change, ChangeRecord, Snapshot } from '../../authz/changes.ts';
import { toWire } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { CreatedTenants, PendingWrite, TenantStore, WriteOutcome, WriteSettled } from '../port.ts';
import { changeFromRow } from '../changelog.ts';
import { edgeFacts, refusal, refused } from '../../authz/write-rules.ts';
import type { AuditOfWrite } from '../../audit/record.ts';
import { run, statement as s, type Db, type PostgresAccess, type Row, type Statement } from './sql.ts';
import { imageOfRows, type GraphImage } from '../../authz/graph-image.ts';
import { joinedMemberships, NO_ROWS, snapshotOfRows, type TenantRows } from '../../authz/snapshot-build.ts';

/** A tenant's roles (descriptions as hex: any text survives JSON) and grants, as two JSON columns of a snapshot. */
const ROLES_AND_GRANTS = `(SELECT json_agg(json_build_array(r.role, encode(r.description, 'hex')) ORDER BY r.role)
          FROM roles r WHERE r.client_id = c.id) AS roles,
       (SELECT json_agg(json_build_array(g.role, g.permission) ORDER BY g.role, g.permission)
          FROM grants g WHERE g.client_id = c.id) AS grants`;

const SQL = {
  /** Locks the tenant's row for the rest of the transaction: writers of one tenant queue here. */
  lockTenantRow: s('lock_tenant_row', 'SELECT id, revision FROM clients WHERE hash = $1 FOR UPDATE'),
  insertTenant: s('insert_tenant', 'INSERT INTO clients (hash) VALUES ($1) ON CONFLICT (hash) DO NOTHING'),
  revision: s('revision', 'SELECT revision FROM clients WHERE hash = $1 FOR UPDATE'),
  revisions: s('revisions', 'SELECT hash, revision FROM clients WHERE hash = ANY($1::text[])'),
  /**
   * Clients created by transactions from `$1` on, and where to go on from next: the oldest
   * transaction still running in this statement's snapshot. Every creating transaction older
   * than that has ended, so its row (if it committed) is in this answer or an earlier one.
   */
  tenantsSince: s(
    'tenants_since',
    `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS next,
            coalesce(array_agg(hash), '{}') AS hashes, coalesce(array_agg(revision), '{}') AS revisions
     FROM clients WHERE changed_xid >= $1::xid8`,
  ),
  roleExists: s('role_exists', 'SELECT 1 FROM roles WHERE client_id = $1 AND role = $2'),
  insertRole: s('insert_role', 'INSERT INTO roles (client_id, role, description) VALUES ($1, $2, $3::bytea)'),
  /** Removes a role with its grants and memberships; counts what went with it. */
  deleteRole: s(
    'delete_role',
    `WITH g AS (DELETE FROM grants WHERE client_id = $1 AND role = $2 RETURNING 1),
          m AS (DELETE FROM memberships WHERE client_id = $1 AND role = $2 RETURNING 1),
          r AS (DELETE FROM roles WHERE client_id = $1 AND role = $2 RETURNING 1)
     SELECT (SELECT count(*) FROM g)::int AS grants, (SELECT count(*) FROM m)::int AS members, (SELECT count(*) FROM r)::int AS roles`,
  ),
  insertGrant: s('insert_grant', 'INSERT INTO grants (client_id, role, permission) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING'),
  deleteGrant: s('delete_grant', 'DELETE FROM grants WHERE client_id = $1 AND role = $2 AND permission = $3'),
  insertMember: s('insert_member', 'INSERT INTO memberships (client_id, role, "user") VALUES ($1, $2, $3) ON CONFLICT DO NOTHING'),
  deleteMember: s('delete_member', 'DELETE FROM memberships WHERE client_id = $1 AND role = $2 AND "user" = $3'),
  /** The tenant's revision + 1 and the changelog row, in one statement. */
  commitChange: s(
    'commit_change',
    `WITH bumped AS (UPDATE clients SET revision = revision + 1, changed_xid = pg_current_xact_id() WHERE id = $1 RETURNING id, revision)
     INSERT INTO changelog (client_id, revision, op, role, permission, "user", description, at)
     SELECT id, revision, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::text FROM bumped
     RETURNING revision`,
  ),
  /** {@link SQL.commitChange} and the request's audit row ($8…$13), still one round trip. */
  commitChangeAudited: s(
    'commit_change_audited',
    `WITH bumped AS (UPDATE clients SET revision = revision + 1, changed_xid = pg_current_xact_id() WHERE id = $1 RETURNING id, hash, revision),
          logged AS (INSERT INTO changelog (client_id, revision, op, role, permission, "user", description, at)
                     SELECT id, revision, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::text FROM bumped)
     INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
     SELECT hash, $7::text, $8::text, $9::text, $10::int, revision, $11::text, $12::text, $13::text FROM bumped
     RETURNING revision`,
  ),
  /**
   * A whole tenant in one statement, so one snapshot with no transaction: the one hydration read
   * (rows in primary-key order, as from SQLite). Memberships come as one text (see
   * joinedMemberships): a line per user, `user,role,role…`, lines joined by spaces. Commas and
   * spaces are in no name (nor in a sealed name: base64). The lines come in user order from the memberships_by_user index: ordering them in the subquery
   * costs nothing, where an ORDER BY inside string_agg sorts them again (spilling to disk at a
   * million). The builder checks the order and sorts only if it is not so.
   */
  loadGraph: s(
    'loadGraph',
    `SELECT c.revision, ${ROLES_AND_GRANTS},
       (SELECT string_agg(u.line, ' ')
          FROM (SELECT m."user" || ',' || string_agg(m.role, ',') AS line
                  FROM memberships m WHERE m.client_id = c.id GROUP BY m."user" ORDER BY m."user") u) AS memberships
     FROM clients c WHERE c.hash = $1`,
  ),
  changes: s(
    'changes',
    `SELECT l.revision, l.op, l.role, l.permission, l."user", l.description, l.at
     FROM changelog l JOIN clients c ON c.id = l.client_id
     WHERE c.hash = $1 AND l.revision > $2 ORDER BY l.revision LIMIT $3`,
  ),
} as const;

/**
 * The tenants' graphs on PostgreSQL (see TenantStore). Every write is one transaction at READ
 * COMMITTED that first locks the tenant's `clients` row (`SELECT … FOR UPDATE`), so writers of
 * one tenant, from any process or instance, queue there and each sees the state the previous one
 * committed: revisions are unique and gapless.
 */
/** The roles of a snapshot row, descriptions decoded (they travel as hex: any text survives JSON). */
function rolesOf(row: Row): Array<[string, string]> {
  return ((row.roles ?? []) as Array<[string, string]>).map(([role, hex]) => [role, Buffer.from(hex, 'hex').toString('utf8')]);
}

export class PostgresTenants implements TenantStore {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  /** One statement outside a transaction: its rows. */
  async #query(what: string, st: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.#db.query(what, st, values)).rows;
  }

  async loadGraph(tenant: TenantId): Promise<GraphImage> {
    return imageOfRows(await this.#loadRows(tenant));
  }

  /** The same read as {@link loadGraph}'s (the one a hydration runs), as rows. */
  async load(tenant: TenantId): Promise<Snapshot> {
    return snapshotOfRows(await this.#loadRows(tenant));
  }

  async #loadRows(tenant: TenantId): Promise<TenantRows> {
    const row = (await this.#query('loadGraph', SQL.loadGraph, [tenant]))[0];
    if (row === undefined) return NO_ROWS;
    const memberships = joinedMemberships(String(row.memberships ?? ''), ' ', ',');
    return { revision: Number(row.revision), roles: rolesOf(row), grants: (row.grants ?? []) as Array<[string, string]>, memberships };
  }

  async revision(tenant: TenantId): Promise<number> {
    const row = (await this.#query('revision', SQL.revision, [tenant]))[0];
    return row === undefined ? 0 : Number(row.revision);
  }

  async revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    if (tenants.length === 0) return [];
    const rows = await this.#query('revisions', SQL.revisions, [tenants]);
    // Read back from the database, where only hashed keys are ever written: a TenantId again.
    return rows.map((r) => [String(r.hash) as TenantId, Number(r.revision)]);
  }

  async tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    const row = (await this.#query('tenantsSince', SQL.tenantsSince, [cursor ?? '0']))[0];
    // Read back from the database, where only hashed keys are ever written: TenantIds again.
    const revisions = ((row?.revisions ?? []) as Array<string | number>).map(Number);
    return { tenants: (row?.hashes ?? []) as TenantId[], revisions, cursor: String(row?.next ?? cursor ?? '0') };
  }

  /** One write, in its own transaction. */
  #writeOne(tenant: TenantId, change: Change, audit: AuditOfWrite | undefined): Promise<WriteOutcome> {
    return this.#db.tx('write', 'BEGIN', async (db) => {
      const outcome = await applyWrite(db, tenant, change, audit);
      return { commit: outcome.ok, value: outcome };
    });
  }

  /**
   * Each write is its own transaction. The writes of one tenant run one after the other, in the
   * order given; different tenants run side by side on the pool's connections. (One transaction
   * for the batch would hold every tenant's row lock until the slowest write is done.)
   */
  async writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    const settled: WriteSettled[] = new Array<WriteSettled>(writes.length);
    const byTenant = new Map<TenantId, number[]>();
    writes.forEach((w, i) => {
      const list = byTenant.get(w.tenant);
      if (list === undefined) byTenant.set(w.tenant, [i]);
      else list.push(i);
    });
    await Promise.all(
      [...byTenant.values()].map(async (indexes) => {
        for (const i of indexes) {
          const w = writes[i] as PendingWrite;
          try {
            settled[i] = { ok: true, value: await this.#writeOne(w.tenant, w.change, w.audit) };
          } catch (err) {
            settled[i] = { ok: false, error: toWire(err) };
          }
        }
      }),
    );
    return settled;
  }

  async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    const rows = await this.#query('changes', SQL.changes, [tenant, since, limit]);
    return rows.map((r) => ({ revision: Number(r.revision), change: changeOf(r), at: String(r.at) }));
  }
}

/** The tenant's row, locked; created first when `create` (a role.create on a new tenant). */
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

/**
 * Inside the transaction: locks the tenant, checks the change against its state (authz/write-rules
 * decides), applies it. A refusal rolls the transaction back.
 */
async function applyWrite(db: Db, tenant: TenantId, change: Change, audit: AuditOfWrite | undefined): Promise<WriteOutcome> {
  const row = await lockTenantRow(db, tenant, change.op === 'role.create');
  const current = row?.revision ?? 0;
  const roleExists = row !== undefined && (await run(db, SQL.roleExists, [row.id, change.role])).rowCount === 1;
  const before = refusal(change, { roleExists });
  if (before !== undefined) return refused(before, current);
  if (row === undefined) throw new Error('tenant row missing after lock'); // unreachable: created above
  const { rowsChanged, ...removed } = await applyChange(db, row.id, change);
  const after = refusal(change, { roleExists, ...edgeFacts(change, rowsChanged) });
  if (after !== undefined) return refused(after, current);
  const at = timestamp();
  const values = [
    row.id,
    change.op,
    change.role,
    'permission' in change ? change.permission : null,
    'user' in change ? change.user : null,
    change.op === 'role.create' ? Buffer.from(change.description, 'utf8') : null,
    at,
  ];
  const committed =
    audit === undefined
      ? await run(db, SQL.commitChange, values)
      : await run(db, SQL.commitChangeAudited, [...values, audit.action, audit.resource, audit.status, audit.credential, audit.requestId, audit.ip]);
  const revision = Number(committed.rows[0]?.revision);
  return { ok: true, revision, change, ...removed };
}

interface Applied {
  /** Rows the grant's or membership's insert-if-absent or delete changed; 1 for role changes (checked before). */
  readonly rowsChanged: number;
  readonly permissionsRemoved?: number;
  readonly membershipsRemoved?: number;
}

/** The change itself, on a tenant whose role check passed. */
async function applyChange(db: Db, id: string, change: Change): Promise<Applied> {
  // pg counts every INSERT and DELETE; a null count is taken as done, as it always was.
  const rows = (r: QueryResult): Applied => ({ rowsChanged: r.rowCount ?? 1 });
  switch (change.op) {
    case 'role.create':
      await run(db, SQL.insertRole, [id, change.role, Buffer.from(change.description, 'utf8')]);
      return { rowsChanged: 1 };
    case 'role.delete': {
      const counts = (await run(db, SQL.deleteRole, [id, change.role])).rows[0];
      return { rowsChanged: 1, permissionsRemoved: Number(counts?.grants), membershipsRemoved: Number(counts?.members) };
    }
    case 'permission.grant':
      return rows(await run(db, SQL.insertGrant, [id, change.role, change.permission]));
    case 'permission.revoke':
      return rows(await run(db, SQL.deleteGrant, [id, change.role, change.permission]));
    case 'membership.add':
      return rows(await run(db, SQL.insertMember, [id, change.role, change.user]));
    case 'membership.remove':
      return rows(await run(db, SQL.deleteMember, [id, change.role, change.user]));
  }
}

/** Rebuilds a change from its changelog row. */
function changeOf(r: Row): Change {
  return changeFromRow({
    op: r.op,
    role: r.role,
    permission: r.permission,
    user: r.user,
    description: r.description instanceof Buffer ? r.description.toString('utf8') : '',
  });
}
