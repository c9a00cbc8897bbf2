import type { ImportChange, WriteRefused } from '../../authz/changes.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { ExportPage, ExportPosition, ExportRow, ImportDone, ImportEdge } from '../../authz/transfer.ts';
import { timestamp } from '../../time/index.ts';
import { importDescription } from '../changelog.ts';
import { preconditionFailed } from '../edge-windows.ts';
import { planAsChanges, planImport, type ImportPlan, type StoredData } from '../import-plan.ts';
import type { ImportRequest } from '../port.ts';
import { run, statement as s, type Db, type PostgresAccess, type Row } from './sql.ts';
import { WRITE_SQL } from './tenant-writes.ts';

type Bound = number | null;
const bound = (v: unknown): Bound => (v === null || v === undefined ? null : Number(v));

/** Rows of one bulk statement at most: arrays of this many names stay well within a message. */
const CHUNK = 10_000;

const SQL = {
  tenantRow: s('transfer_tenant_row', 'SELECT id, revision FROM clients WHERE hash = $1'),
  rolesAfter: s('export_roles', `SELECT role, description FROM roles WHERE client_id = $1 AND role > $2 ORDER BY role LIMIT $3`),
  grantsAfter: s(
    'export_grants',
    `SELECT role, permission AS other, not_before, expires_at FROM grants
     WHERE client_id = $1 AND (role, permission) > ($2, $3) ORDER BY role, permission LIMIT $4`,
  ),
  membersAfter: s(
    'export_members',
    `SELECT role, "user" AS other, not_before, expires_at FROM memberships
     WHERE client_id = $1 AND (role, "user") > ($2, $3) ORDER BY role, "user" LIMIT $4`,
  ),
  allRoles: s('import_roles', 'SELECT role, description FROM roles WHERE client_id = $1'),
  allGrants: s('import_grants', 'SELECT role, permission AS other, not_before, expires_at FROM grants WHERE client_id = $1'),
  allMembers: s('import_members', 'SELECT role, "user" AS other, not_before, expires_at FROM memberships WHERE client_id = $1'),
  deleteGrants: s(
    'import_delete_grants',
    'DELETE FROM grants g USING unnest($2::text[], $3::text[]) AS d(role, other) WHERE g.client_id = $1 AND g.role = d.role AND g.permission = d.other',
  ),
  deleteMembers: s(
    'import_delete_members',
    'DELETE FROM memberships m USING unnest($2::text[], $3::text[]) AS d(role, other) WHERE m.client_id = $1 AND m.role = d.role AND m."user" = d.other',
  ),
  deleteRoles: s('import_delete_roles', 'DELETE FROM roles WHERE client_id = $1 AND role = ANY($2::text[])'),
  insertRoles: s('import_insert_roles', 'INSERT INTO roles (client_id, role, description) SELECT $1, r, d FROM unnest($2::text[], $3::bytea[]) AS u(r, d)'),
  describeRoles: s(
    'import_describe_roles',
    'UPDATE roles SET description = u.d FROM unnest($2::text[], $3::bytea[]) AS u(r, d) WHERE roles.client_id = $1 AND roles.role = u.r',
  ),
  windowGrants: s(
    'import_window_grants',
    `UPDATE grants SET not_before = u.nb, expires_at = u.exp FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS u(role, other, nb, exp)
     WHERE grants.client_id = $1 AND grants.role = u.role AND grants.permission = u.other`,
  ),
  windowMembers: s(
    'import_window_members',
    `UPDATE memberships SET not_before = u.nb, expires_at = u.exp FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS u(role, other, nb, exp)
     WHERE memberships.client_id = $1 AND memberships.role = u.role AND memberships."user" = u.other`,
  ),
  insertGrants: s(
    'import_insert_grants',
    'INSERT INTO grants (client_id, role, permission, not_before, expires_at) SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[])',
  ),
  insertMembers: s(
    'import_insert_members',
    'INSERT INTO memberships (client_id, role, "user", not_before, expires_at) SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[])',
  ),
  bumpRevision: s('import_bump', 'UPDATE clients SET revision = revision + 1, changed_xid = pg_current_xact_id() WHERE id = $1 RETURNING hash, revision'),
  insertChange: s(
    'import_change',
    `INSERT INTO changelog (client_id, revision, seq, op, role, permission, "user", description, not_before, expires_at, at)
     VALUES ($1, $2, 0, 'client.import', '', NULL, NULL, $3::bytea, NULL, NULL, $4)`,
  ),
  insertAudit: s(
    'import_audit',
    `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
     VALUES ($1, $2, 'client.import', $3, $4, $5, $6, $7, $8)`,
  ),
} as const;

const edgesOf = (rows: Row[]): ImportEdge[] => rows.map((r) => [String(r.role), String(r.other), bound(r.not_before), bound(r.expires_at)]);
const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');

/** Runs `statement` over `items` in chunks, each as column arrays after the tenant's id. */
async function bulk<T>(db: Db, statement: (typeof SQL)[keyof typeof SQL], id: string, items: readonly T[], columns: (item: T) => unknown[]): Promise<void> {
  for (let i = 0; i < items.length; i += CHUNK) {
    const rows = items.slice(i, i + CHUNK).map(columns);
    const width = rows[0]?.length ?? 0;
    const arrays = Array.from({ length: width }, (_, k) => rows.map((r) => r[k]));
    await run(db, statement, [id, ...arrays]);
  }
}

/**
 * A client's data leaving and coming back (docs/api.md §17) on PostgreSQL. An export page is
 * one REPEATABLE READ read-only transaction: its rows and the tenant's revision agree. An import
 * is one transaction under the tenant's row lock (the writers' queue), its plan worked out from
 * the rows it reads inside it; rows go in and out in bulk statements.
 */
export class PostgresTransfer {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.#db.tx('export', 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (db) => ({
      commit: true,
      value: await readPage(db, tenant, after, limit),
    }));
  }

  importData(r: ImportRequest): Promise<ImportDone | WriteRefused> {
    return this.#db.tx('import', 'BEGIN', async (db) => {
      const value = await importIn(db, r);
      return { commit: !r.dry && value.ok && value.changed, value };
    });
  }
}

async function readPage(db: Db, tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
  const row = (await run(db, SQL.tenantRow, [tenant])).rows[0];
  if (row === undefined) return { revision: 0, rows: [] };
  const id = String(row.id);
  const rows: ExportRow[] = [];
  let from: ExportPosition = after ?? { kind: 'role', role: '', other: '' };
  const left = (): number => limit - rows.length;
  if (from.kind === 'role') {
    for (const r of (await run(db, SQL.rolesAfter, [id, from.role, left()])).rows) {
      rows.push(['role', String(r.role), (r.description as Buffer).toString('utf8')]);
    }
    if (left() > 0) from = { kind: 'permission', role: '', other: '' };
  }
  if (from.kind === 'permission' && left() > 0) {
    for (const e of edgesOf((await run(db, SQL.grantsAfter, [id, from.role, from.other, left()])).rows)) rows.push(['permission', ...e]);
    if (left() > 0) from = { kind: 'membership', role: '', other: '' };
  }
  if (from.kind === 'membership' && left() > 0) {
    for (const e of edgesOf((await run(db, SQL.membersAfter, [id, from.role, from.other, left()])).rows)) rows.push(['membership', ...e]);
  }
  return { revision: Number(row.revision), rows };
}

/** Inside the import's transaction: the tenant's row locked (created when the import adds to a new client), the plan, its rows. */
async function importIn(db: Db, r: ImportRequest): Promise<ImportDone | WriteRefused> {
  let row = (await run(db, WRITE_SQL.lockTenantRow, [r.tenant])).rows[0];
  const current = row === undefined ? 0 : Number(row.revision);
  if (r.ifMatch !== undefined && r.ifMatch !== current) return preconditionFailed(r.ifMatch, current);
  const stored: StoredData =
    row === undefined
      ? { roles: [], grants: [], memberships: [] }
      : {
          roles: (await run(db, SQL.allRoles, [row.id])).rows.map((x) => [String(x.role), (x.description as Buffer).toString('utf8')] as const),
          grants: edgesOf((await run(db, SQL.allGrants, [row.id])).rows),
          memberships: edgesOf((await run(db, SQL.allMembers, [row.id])).rows),
        };
  const plan = planImport(stored, r.file, r.mode);
  const counts = { roles: plan.roles, permissions: plan.permissions, memberships: plan.memberships, added: plan.added, removed: plan.removed };
  if (r.dry) return { ok: true, revision: current, changed: plan.changed, ...counts, changes: planAsChanges(plan) };
  if (!plan.changed) return { ok: true, revision: current, changed: false, ...counts };
  if (row === undefined) {
    await run(db, WRITE_SQL.insertTenant, [r.tenant]);
    row = (await run(db, WRITE_SQL.lockTenantRow, [r.tenant])).rows[0] as Row;
  }
  const id = String(row.id);
  await applyPlan(db, id, plan);
  const bumped = (await run(db, SQL.bumpRevision, [id])).rows[0] as Row;
  const revision = Number(bumped.revision);
  const at = timestamp();
  const change: ImportChange = { op: 'client.import', added: plan.added, removed: plan.removed };
  await run(db, SQL.insertChange, [id, revision, utf8(importDescription(change)), at]);
  const a = r.audit;
  if (a !== undefined) await run(db, SQL.insertAudit, [bumped.hash, at, a.resource, a.status, revision, a.credential, a.requestId, a.ip]);
  return { ok: true, revision, changed: true, ...counts };
}

/** The plan's rows: removals first (a deleted role's edges are among them), then windows, additions. */
async function applyPlan(db: Db, id: string, plan: ImportPlan): Promise<void> {
  const pair = (e: ImportEdge): unknown[] => [e[0], e[1]];
  const edge = (e: ImportEdge): unknown[] => [e[0], e[1], e[2], e[3]];
  await bulk(db, SQL.deleteGrants, id, plan.removeGrants, pair);
  await bulk(db, SQL.deleteMembers, id, plan.removeMembers, pair);
  await bulk(db, SQL.deleteRoles, id, plan.deleteRoles, (role) => [role]);
  await bulk(db, SQL.insertRoles, id, plan.createRoles, ([role, d]) => [role, utf8(d)]);
  await bulk(db, SQL.describeRoles, id, plan.describeRoles, ([role, d]) => [role, utf8(d)]);
  await bulk(db, SQL.windowGrants, id, plan.rewindowGrants, edge);
  await bulk(db, SQL.windowMembers, id, plan.rewindowMembers, edge);
  await bulk(db, SQL.insertGrants, id, plan.addGrants, edge);
  await bulk(db, SQL.insertMembers, id, plan.addMembers, edge);
}
