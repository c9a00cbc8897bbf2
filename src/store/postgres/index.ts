import pg from 'pg';
import type { PoolClient, QueryResult } from 'pg';
import type { Change, ChangeRecord, Snapshot } from '../../authz/changes.ts';
import { appError, toWire } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';
import { MIGRATIONS } from '../migrations.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { AuditPosition, CreatedTenants, PendingWrite, Store, WriteOutcome, WriteSettled } from '../port.ts';
import type { PostgresSettings } from '../settings.ts';
import { storeFailure, transience } from '../transient.ts';
import { MIGRATION_LOCK, SQL, type Statement } from './sql.ts';
import { changeFromRow } from '../changelog.ts';
import { edgeFacts, refusal, refused } from '../../authz/write-rules.ts';
import type { AuditEntry, AuditOfWrite, AuditRecord } from '../../audit/record.ts';
import { AUDIT_TOP, entryOf } from '../audit-rows.ts';
import { PLAINTEXT_MARK } from '../encryption-mark.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../../workflow/records.ts';
import { PostgresWorkflows } from './workflow.ts';

type Row = Record<string, unknown>;
type Db = Pick<PoolClient, 'query'>;

const run = async (db: Db, st: Statement, values: unknown[]): Promise<QueryResult<Row>> =>
  db.query<Row>({ name: st.name, text: st.text, values });

/**
 * The shared store: PostgreSQL through a pg connection pool. Every write is one transaction at
 * READ COMMITTED that first locks the tenant's `clients` row (`SELECT … FOR UPDATE`), so writers
 * of one tenant, from any process or instance, queue there and each sees the state the previous
 * one committed: revisions are unique and gapless. Migrations run on first use, under an
 * advisory lock. Failures are thrown as catalogued errors (see `../transient.ts`).
 */
export class PostgresStore implements Store {
  readonly #pool: pg.Pool;
  #ready: Promise<void> | undefined;
  readonly #workflow: PostgresWorkflows;

  constructor(settings: PostgresSettings) {
    this.#pool = new pg.Pool({
      connectionString: settings.url,
      max: settings.poolMax,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      statement_timeout: settings.statementTimeoutMs,
      // The server cancels at statement_timeout; this catches a server or network that went silent.
      query_timeout: settings.statementTimeoutMs + 1000,
      idle_in_transaction_session_timeout: settings.statementTimeoutMs * 2,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'rbac-gateway',
    });
    // An idle connection that dies (server restart, network) is dropped by the pool; without a
    // listener the 'error' event would kill the process. The next call connects anew.
    this.#pool.on('error', () => undefined);
    this.#workflow = new PostgresWorkflows({
      query: (what, st, values) => this.#result(what, st, values),
      tx: async (what, begin, body) => {
        await this.#migrated();
        return this.#tx(what, body, begin);
      },
    });
  }

  /** Migrates once per store; a failed attempt is retried by the next call. */
  #migrated(): Promise<void> {
    this.#ready ??= this.#tx('migrate', migrate).catch((err: unknown) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }

  /** One statement outside a transaction: its rows. */
  async #query(what: string, st: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.#result(what, st, values)).rows;
  }

  async #result(what: string, st: Statement, values: unknown[]): Promise<QueryResult<Row>> {
    await this.#migrated();
    try {
      return await run(this.#pool, st, values);
    } catch (err) {
      throw storeFailure(err, what);
    }
  }

  /**
   * Runs `body` in a transaction on one connection, opened by `begin` (an isolation level may
   * follow BEGIN). `body` answers whether to commit. A connection lost while COMMIT was in flight
   * is ERR_STORE_COMMIT_UNKNOWN (never retried: the transaction may be in); any failure before it
   * means nothing was committed.
   */
  async #tx<T>(what: string, body: (db: Db) => Promise<{ commit: boolean; value: T }>, begin = 'BEGIN'): Promise<T> {
    let db: PoolClient;
    try {
      db = await this.#pool.connect();
    } catch (err) {
      throw storeFailure(err, what);
    }
    // A connection that breaks between two statements emits 'error' on the checked-out connection,
    // which the pool does not listen to: without this the error would take the thread down. The
    // next statement fails on its own and is handled below.
    const ignore = (): void => undefined;
    db.on('error', ignore);
    let committing = false;
    try {
      await db.query(begin);
      const { commit, value } = await body(db);
      committing = commit;
      await db.query(commit ? 'COMMIT' : 'ROLLBACK');
      db.off('error', ignore);
      db.release();
      return value;
    } catch (err) {
      db.off('error', ignore);
      db.release(true); // unknown state: close the connection rather than reuse it
      if (committing && transience(err) === 'unavailable') {
        throw appError('ERR_STORE_COMMIT_UNKNOWN', { what });
      }
      throw storeFailure(err, what);
    }
  }

  async load(tenant: TenantId): Promise<Snapshot> {
    const row = (await this.#query('load', SQL.load, [tenant]))[0];
    if (row === undefined) return { revision: 0, roles: [], grants: [], memberships: [] };
    const roles = (row.roles ?? []) as Array<[string, string]>;
    return {
      revision: Number(row.revision),
      roles: roles.map(([role, hex]) => [role, Buffer.from(hex, 'hex').toString('utf8')] as const),
      grants: (row.grants ?? []) as Array<[string, string]>,
      memberships: (row.memberships ?? []) as Array<[string, string]>,
    };
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
    return { tenants: (row?.hashes ?? []) as TenantId[], cursor: String(row?.next ?? cursor ?? '0') };
  }

  /** One write, in its own transaction. */
  async #writeOne(tenant: TenantId, change: Change, audit: AuditOfWrite | undefined): Promise<WriteOutcome> {
    await this.#migrated();
    return this.#tx('write', async (db) => {
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

  async appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const column = <T>(f: (r: AuditRecord) => T): T[] => rows.map(f);
    await this.#query('audit', SQL.insertAudits, [
      column((r) => r.tenant), column((r) => r.at), column((r) => r.action), column((r) => r.resource), column((r) => r.status),
      column((r) => r.revision ?? null), column((r) => r.credential), column((r) => r.requestId), column((r) => r.ip),
    ]);
  }

  async audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    const from = after ?? AUDIT_TOP;
    const rows = await this.#query('audit', SQL.auditPage, [tenant, from.at, from.id, limit]);
    return rows.map(entryOf);
  }

  async pruneAudit(before: string, limit: number): Promise<number> {
    return (await this.#result('audit', SQL.pruneAudit, [before, limit])).rowCount ?? 0;
  }

  async claimEncryption(mark: string): Promise<string> {
    await this.#query('encryption', SQL.claimEncryption, [mark, PLAINTEXT_MARK]);
    const row = (await this.#query('encryption', SQL.encryptionMark, []))[0];
    return String(row?.value);
  }

  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.#workflow.putSchedule(schedule, nowMs, audit);
  }
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#workflow.deleteSchedule(tenant, workflow, audit);
  }
  schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return this.#workflow.schedules(tenant);
  }
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return this.#workflow.runs(tenant, workflow, before, limit);
  }
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return this.#workflow.takeLease(owner, nowMs, ttlMs);
  }
  releaseLease(owner: string): Promise<void> {
    return this.#workflow.releaseLease(owner);
  }
  dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return this.#workflow.dueSchedules(nowMs, limit);
  }
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return this.#workflow.runSchedule(due, nowMs, webhookId);
  }
  claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    return this.#workflow.claimDeliveries(nowMs, claimMs, limit);
  }
  recordDelivery(update: DeliveryUpdate): Promise<void> {
    return this.#workflow.recordDelivery(update);
  }

  async cursorSecret(): Promise<Buffer> {
    const row = (await this.#query('cursorSecret', SQL.cursorSecret, []))[0];
    if (row === undefined) throw appError('ERR_INTERNAL', 'cursor secret missing from meta');
    return Buffer.from(String(row.value), 'hex');
  }

  async ping(): Promise<void> {
    await this.#query('ping', { name: 'rbac_ping', text: 'SELECT 1' }, []);
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
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
  return changeFromRow({ op: r.op, role: r.role, permission: r.permission, user: r.user, description: r.description instanceof Buffer ? r.description.toString('utf8') : '' });
}

/**
 * Applies pending migrations in one transaction under a transaction-scoped advisory lock: a
 * process that starts while another migrates waits, then finds the versions recorded and applies
 * nothing. PostgreSQL's DDL is transactional, so a failed migration leaves no half-made schema.
 */
async function migrate(db: Db): Promise<{ commit: boolean; value: undefined }> {
  await db.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const applied = new Set((await db.query<Row>('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)));
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    for (const sql of m.postgresql) await db.query(sql);
    await db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, timestamp()]);
  }
  return { commit: true, value: undefined };
}
