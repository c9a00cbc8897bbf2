import type { ChangeRecord, LoggedChange, Snapshot, WindowedEdge, WriteOutcome, WriteRefused } from '../../authz/changes.ts';
import type { ExportPage, ExportPosition, ImportDone } from '../../authz/transfer.ts';
import { toWire } from '../../errors/index.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { BoundaryCommitted, CreatedTenants, ImportRequest, PendingWrite, TenantStore, WriteSettled } from '../port.ts';
import { PostgresTransfer } from './transfer.ts';
import { changeFromRow } from '../changelog.ts';
import { dueBoundaryOf, windowedEdge } from '../edge-windows.ts';
import { statement as s, type PostgresAccess, type Row, type Statement } from './sql.ts';
import { applyRequest, commitBoundary, WRITE_SQL } from './tenant-writes.ts';
import { imageOfRows, type GraphImage } from '../../authz/graph-image.ts';
import { joinedMemberships, NO_ROWS, snapshotOfRows, type TenantRows } from '../../authz/snapshot-build.ts';

/** A tenant's roles (descriptions as hex: any text survives JSON) and grants, as two JSON columns of a snapshot. */
const ROLES_AND_GRANTS = `(SELECT json_agg(json_build_array(r.role, encode(r.description, 'hex')) ORDER BY r.role)
          FROM roles r WHERE r.client_id = c.id) AS roles,
       (SELECT json_agg(json_build_array(g.role, g.permission) ORDER BY g.role, g.permission)
          FROM grants g WHERE g.client_id = c.id) AS grants`;

/**
 * A tenant's windowed edges (through the `…_windowed` partial indexes), as two JSON columns of a
 * snapshot: bounds are microseconds, exact as JSON numbers (below 2^53).
 */
const WINDOWS = `(SELECT json_agg(json_build_array(g.role, g.permission, g.not_before, g.expires_at) ORDER BY g.role, g.permission)
          FROM grants g WHERE g.client_id = c.id AND (g.not_before IS NOT NULL OR g.expires_at IS NOT NULL)) AS grant_windows,
       (SELECT json_agg(json_build_array(m."user", m.role, m.not_before, m.expires_at) ORDER BY m."user", m.role)
          FROM memberships m WHERE m.client_id = c.id AND (m.not_before IS NOT NULL OR m.expires_at IS NOT NULL)) AS member_windows`;

const CHANGE_COLUMNS = 'l.revision, l.seq, l.op, l.role, l.permission, l."user", l.description, l.not_before, l.expires_at, l.at';

const SQL = {
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
                  FROM memberships m WHERE m.client_id = c.id GROUP BY m."user" ORDER BY m."user") u) AS memberships,
       ${WINDOWS}
     FROM clients c WHERE c.hash = $1`,
  ),
  changes: s(
    'changes',
    `SELECT ${CHANGE_COLUMNS} FROM changelog l JOIN clients c ON c.id = l.client_id
     WHERE c.hash = $1 AND l.revision > $2 ORDER BY l.revision, l.seq LIMIT $3`,
  ),
  /** The rest of a revision a page of {@link SQL.changes} cut: a page ends at the end of a revision. */
  restOfRevision: s(
    'rest_of_revision',
    `SELECT ${CHANGE_COLUMNS} FROM changelog l JOIN clients c ON c.id = l.client_id
     WHERE c.hash = $1 AND l.revision = $2 AND l.seq > $3 ORDER BY l.seq`,
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

/** The windowed edges of a snapshot row. */
function windowsOf(row: Row): WindowedEdge[] {
  type Bounds = [unknown, unknown];
  const grants = (row.grant_windows ?? []) as Array<[string, string, ...Bounds]>;
  const members = (row.member_windows ?? []) as Array<[string, string, ...Bounds]>;
  return [
    ...grants.map(([role, permission, nb, exp]) => windowedEdge({ kind: 'permission', role, permission }, nb, exp)),
    ...members.map(([user, role, nb, exp]) => windowedEdge({ kind: 'membership', user, role }, nb, exp)),
  ];
}

export class PostgresTenants implements TenantStore {
  readonly #db: PostgresAccess;
  readonly #transfer: PostgresTransfer;

  constructor(db: PostgresAccess) {
    this.#db = db;
    this.#transfer = new PostgresTransfer(db);
  }

  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.#transfer.exportPage(tenant, after, limit);
  }

  importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    return this.#transfer.importData(request);
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
    return { revision: Number(row.revision), roles: rolesOf(row), grants: (row.grants ?? []) as Array<[string, string]>, memberships, windows: windowsOf(row) };
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

  /** One write request, in its own transaction: a refusal rolls it back whole. */
  #writeOne(w: PendingWrite): Promise<WriteOutcome> {
    return this.#db.tx('write', 'BEGIN', async (db) => {
      const outcome = await applyRequest(db, w);
      return { commit: outcome.ok, value: outcome };
    });
  }

  /**
   * Each request is its own transaction. The requests of one tenant run one after the other, in
   * the order given; different tenants run side by side on the pool's connections. (One
   * transaction for the batch would hold every tenant's row lock until the slowest write is done.)
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
          try {
            settled[i] = { ok: true, value: await this.#writeOne(writes[i] as PendingWrite) };
          } catch (err) {
            settled[i] = { ok: false, error: toWire(err) };
          }
        }
      }),
    );
    return settled;
  }

  /**
   * The due boundaries are read outside any transaction, then each is committed in a transaction
   * of its own that finds it again under the tenant's lock (see commitBoundary): a boundary another
   * process committed meanwhile, or whose window was replaced, is skipped.
   */
  async commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]> {
    if (limit <= 0) return [];
    const due = await this.#query('boundaries', WRITE_SQL.dueBoundaries, [nowMicros, limit]);
    const committed: BoundaryCommitted[] = [];
    for (const r of due) {
      const boundary = { ...dueBoundaryOf(r), id: String(r.client_id) };
      const done = await this.#db.tx('boundaries', 'BEGIN', async (db) => {
        const value = await commitBoundary(db, boundary);
        return { commit: value !== undefined, value };
      });
      if (done !== undefined) committed.push(done);
    }
    return committed;
  }

  /** At most `limit` rows, then the rest of the last revision if the limit cut it: a page never ends inside a revision. */
  async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    let rows = await this.#query('changes', SQL.changes, [tenant, since, limit]);
    const last = rows.at(-1);
    if (rows.length >= limit && last !== undefined) rows = rows.concat(await this.#query('changes', SQL.restOfRevision, [tenant, last.revision, last.seq]));
    return rows.map((r) => ({ revision: Number(r.revision), change: changeOf(r), at: String(r.at) }));
  }
}
/** Rebuilds a change from its changelog row. */
function changeOf(r: Row): LoggedChange {
  return changeFromRow({
    op: r.op,
    role: r.role,
    permission: r.permission,
    user: r.user,
    description: r.description instanceof Buffer ? r.description.toString('utf8') : '',
    notBefore: r.not_before,
    expiresAt: r.expires_at,
  });
}
