import type { PoolClient, QueryResult } from 'pg';
import type { AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { timestampAt } from '../../time/index.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../../workflow/records.ts';
import { deliveryOf, jobOf, nextRunAt, runOf, scheduleOf, SCHEDULER_LEASE } from '../workflow-rows.ts';
import { SQL, type Statement } from './sql.ts';
import { WORKFLOW_SQL as WF } from './workflow-sql.ts';

type Row = Record<string, unknown>;
type Db = Pick<PoolClient, 'query'>;
type TxBody<T> = (db: Db) => Promise<{ commit: boolean; value: T }>;

/** What the workflow calls use of the store: its statements outside a transaction, and its transactions. */
export interface PostgresAccess {
  query(what: string, st: Statement, values: unknown[]): Promise<QueryResult<Row>>;
  /** `begin` opens the transaction (`BEGIN` or with an isolation level); see the store's #tx. */
  tx<T>(what: string, begin: string, body: TxBody<T>): Promise<T>;
}

/** A run reads every table at one snapshot, so the users it lists are those of the revision it names. */
const REPEATABLE_READ = 'BEGIN ISOLATION LEVEL REPEATABLE READ';

/**
 * SQLSTATEs that mean another transaction has the schedule: its row is locked (55P03, NOWAIT) or
 * changed since this run's snapshot (40001). Either way someone else runs it now or just did.
 */
const LOST_RACE = new Set(['55P03', '40001']);

const run = (db: Db, st: Statement, values: unknown[]): Promise<QueryResult<Row>> => db.query<Row>({ name: st.name, text: st.text, values });

/** Epoch ms as a bigint parameter (the columns hold whole milliseconds). */
const ms = (t: number): number => Math.floor(t);

/** An audit row as the parallel arrays of `SQL.insertAudits`. */
const auditValues = (r: AuditRecord): unknown[][] =>
  [r.tenant, r.at, r.action, r.resource, r.status, r.revision ?? null, r.credential, r.requestId, r.ip].map((v) => [v]);

/**
 * The workflow side of the PostgreSQL store (see WorkflowStore in workflow/records.ts). Several
 * instances share the database: runs and claims are made safe against each other by row locks,
 * not by the scheduler's lease alone (a lease can expire while its holder still works).
 */
export class PostgresWorkflows {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  putSchedule(s: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.#db.tx('workflow', 'BEGIN', async (db) => {
      await run(db, WF.upsertSchedule, [s.tenant, s.workflow, s.intervalSeconds, s.webhookUrl, s.webhookSecret, ms(nowMs)]);
      await run(db, SQL.insertAudits, auditValues(audit));
      return { commit: true, value: undefined };
    });
  }

  /**
   * The schedule's row goes first: a run holding it is waited for. The runs and holders go in a
   * statement of their own, whose READ COMMITTED snapshot is taken after that wait and so
   * includes the run just made.
   */
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#db.tx('workflow', 'BEGIN', async (db) => {
      if (((await run(db, WF.deleteSchedule, [tenant, workflow])).rowCount ?? 0) === 0) return { commit: false, value: false };
      await run(db, WF.deleteRunsAndHolders, [tenant, workflow]);
      await run(db, SQL.insertAudits, auditValues(audit));
      return { commit: true, value: true };
    });
  }

  async schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return (await this.#db.query('workflow', WF.schedules, [tenant])).rows.map(scheduleOf);
  }

  async runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    const { rows } = await this.#db.query('workflow', WF.runs, [tenant, workflow, before ?? Number.MAX_SAFE_INTEGER, limit]);
    if (rows.length === 0) return undefined;
    return rows.filter((r) => r.id !== null).map(runOf);
  }

  async takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    const { rows } = await this.#db.query('workflow', WF.takeLease, [SCHEDULER_LEASE, owner, ms(nowMs + ttlMs), ms(nowMs)]);
    return rows.length === 1;
  }

  async releaseLease(owner: string): Promise<void> {
    await this.#db.query('workflow', WF.releaseLease, [SCHEDULER_LEASE, owner]);
  }

  async dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    const { rows } = await this.#db.query('workflow', WF.due, [ms(nowMs), limit]);
    // Read back from the database, where only hashed keys are ever written: TenantIds again.
    return rows.map((r) => ({ tenant: String(r.client_hash) as TenantId, workflow: String(r.workflow) }));
  }

  /** One REPEATABLE READ transaction; losing the schedule's row to another run is undefined, not a failure. */
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return this.#db.tx('workflow', REPEATABLE_READ, async (db) => {
      try {
        return await runLocked(db, due, nowMs, webhookId);
      } catch (err) {
        if (LOST_RACE.has(String((err as { code?: unknown } | null)?.code))) return { commit: false, value: undefined };
        throw err;
      }
    });
  }

  async claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    const { rows } = await this.#db.query('workflow', WF.claim, [ms(nowMs), ms(nowMs + claimMs), limit]);
    return rows.map(jobOf).sort((a, b) => a.run.id - b.run.id);
  }

  async recordDelivery(u: DeliveryUpdate): Promise<void> {
    const next = u.nextAttemptAtMs === null ? null : ms(u.nextAttemptAtMs);
    await this.#db.query('workflow', WF.recordDelivery, [u.runId, u.status, u.attempts, u.lastStatus, next]);
  }
}

/** Inside the run's transaction: the schedule locked and still due, the client's revision, then the run in one statement. */
async function runLocked(db: Db, due: DueSchedule, nowMs: number, webhookId: string): Promise<{ commit: boolean; value: RunEntry | undefined }> {
  const schedule = (await run(db, WF.lockSchedule, [due.tenant, due.workflow])).rows[0];
  if (schedule === undefined || Number(schedule.next_run_at) > nowMs) return { commit: false, value: undefined };
  const runAt = timestampAt(nowMs);
  const delivery = deliveryOf(schedule.hooked === true, webhookId, ms(nowMs));
  const next = nextRunAt(Number(schedule.next_run_at), Number(schedule.interval_seconds), nowMs);
  const values = [due.tenant, due.workflow, runAt, delivery.status, delivery.webhookId, delivery.nextAttemptAt, ms(next)];
  const revision = Number((await run(db, WF.tenantRevision, [due.tenant])).rows[0]?.revision ?? 0);
  // At the revision the holders were computed at, they are still those: a steady run reads none of them.
  const steady = schedule.holders_revision !== null && Number(schedule.holders_revision) === revision;
  const recorded = steady ? run(db, WF.recordSteadyRun, [...values, revision, Number(schedule.holders_count)]) : run(db, WF.recordRun, values);
  const row = (await recorded).rows[0];
  if (row === undefined) throw new Error('the run row was not returned'); // unreachable: INSERT … SELECT of one row
  const value = runOf({ ...row, workflow: due.workflow, run_at: runAt, delivery_status: delivery.status, attempts: 0, last_status: null });
  return { commit: true, value };
}
