import type { AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { timestampAt } from '../../time/index.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput, WorkflowStore } from '../../workflow/records.ts';
import { deliveryOf, jobOf, nextRunAt, runOf, scheduleOf, SCHEDULER_LEASE } from '../workflow-rows.ts';
import { auditColumns, INSERT_AUDITS } from './audit.ts';
import { run, statement, type Db, type PostgresAccess, type Statement } from './sql.ts';

/**
 * The statements of workflow schedules and runs, named `rbac_workflow_*` (pg prepares each once
 * per connection). Epoch-ms parameters are bigint.
 */
const wf = (name: string, text: string): Statement => statement(`workflow_${name}`, text);

/** The run's columns as `runOf` (store/workflow-rows.ts) reads them. */
const RUN_COLUMNS = 'r.id, r.workflow, r.run_at, r.revision, r.users_count, r.added, r.removed, r.delivery_status, r.attempts, r.last_status';

/** The names of column `name` of the diff's rows where `when`, as the JSON array a run stores, sorted by code point (COLLATE "C"). */
const jsonNames = (name: string, when: string): string =>
  `coalesce((SELECT array_to_json(array_agg(${name} ORDER BY ${name})) FROM diff WHERE ${when})::text, '[]')`;

/** Whether the edge of table alias `t` is active at $8 (microseconds): `not_before` ≤ now < `expires_at`, NULL open. */
const activeAt = (t: string): string => `(${t}.not_before IS NULL OR ${t}.not_before <= $8) AND (${t}.expires_at IS NULL OR ${t}.expires_at > $8)`;

const WF = {
  /** Creates or replaces the schedule, due at $6; a replaced one keeps `last_run_at` (its runs and holders stay too). */
  upsertSchedule: wf(
    'upsert_schedule',
    `INSERT INTO workflow_schedules (client_hash, workflow, interval_seconds, webhook_url, webhook_secret, next_run_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (client_hash, workflow) DO UPDATE SET interval_seconds = excluded.interval_seconds,
       webhook_url = excluded.webhook_url, webhook_secret = excluded.webhook_secret, next_run_at = excluded.next_run_at`,
  ),
  deleteSchedule: wf('delete_schedule', 'DELETE FROM workflow_schedules WHERE client_hash = $1 AND workflow = $2'),
  deleteRunsAndHolders: wf(
    'delete_runs_and_holders',
    `WITH runs AS (DELETE FROM workflow_runs WHERE client_hash = $1 AND workflow = $2)
     DELETE FROM workflow_holders WHERE client_hash = $1 AND workflow = $2`,
  ),
  schedules: wf('schedules', 'SELECT workflow, interval_seconds, webhook_url, last_run_at FROM workflow_schedules WHERE client_hash = $1'),
  /** No row: no such schedule; one row with a null id: a schedule without runs (in this page). */
  runs: wf(
    'runs',
    `SELECT ${RUN_COLUMNS} FROM workflow_schedules sc
     LEFT JOIN LATERAL (SELECT * FROM workflow_runs x WHERE x.client_hash = sc.client_hash AND x.workflow = sc.workflow AND x.id < $3
                        ORDER BY x.id DESC LIMIT $4) r ON true
     WHERE sc.client_hash = $1 AND sc.workflow = $2 ORDER BY r.id DESC`,
  ),
  /** Answers a row only when $2 holds the lease afterwards (it was free, expired, or $2's). */
  takeLease: wf(
    'take_lease',
    `INSERT INTO workflow_lease (name, owner, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE workflow_lease.owner = excluded.owner OR workflow_lease.expires_at < $4
     RETURNING owner`,
  ),
  releaseLease: wf('release_lease', 'DELETE FROM workflow_lease WHERE name = $1 AND owner = $2'),
  due: wf('due', 'SELECT client_hash, workflow FROM workflow_schedules WHERE next_run_at <= $1 ORDER BY next_run_at LIMIT $2'),
  /**
   * The first statement of a run's REPEATABLE READ transaction (so its snapshot is the run's):
   * the schedule, locked. NOWAIT: a schedule locked by another run, replacement or deletion is
   * not waited for (the waiter would only find it ran, or fail to serialize).
   */
  lockSchedule: wf(
    'lock_schedule',
    `SELECT interval_seconds, webhook_url IS NOT NULL AS hooked, next_run_at, holders_revision, holders_count FROM workflow_schedules
     WHERE client_hash = $1 AND workflow = $2 FOR UPDATE NOWAIT`,
  ),
  /**
   * The client's revision at the run's snapshot (no row: 0), and whether a window's bound has
   * passed by $2 (microseconds) without its change committed yet: then the holders may differ
   * from those of the last run at the same revision.
   */
  tenantRevision: wf(
    'tenant_revision',
    `SELECT c.revision,
            EXISTS (SELECT 1 FROM grants g WHERE g.client_id = c.id AND (g.not_before IS NOT NULL OR g.expires_at IS NOT NULL)
                      AND (g.not_before <= $2 OR g.expires_at <= $2))
         OR EXISTS (SELECT 1 FROM memberships m WHERE m.client_id = c.id AND (m.not_before IS NOT NULL OR m.expires_at IS NOT NULL)
                      AND (m.not_before <= $2 OR m.expires_at <= $2)) AS boundary_passed
     FROM clients c WHERE c.hash = $1`,
  ),
  /**
   * A run at the revision `workflow_holders` was computed at ($8): nothing can have changed, so
   * the run is recorded with the count kept ($9) and empty lists, without reading the holders.
   */
  recordSteadyRun: wf(
    'record_steady_run',
    `WITH advanced AS (UPDATE workflow_schedules SET last_run_at = $3, next_run_at = $7::bigint WHERE client_hash = $1 AND workflow = $2)
     INSERT INTO workflow_runs (client_hash, workflow, run_at, revision, users_count, added, removed, delivery_status, webhook_id, next_attempt_at)
     VALUES ($1, $2, $3::text, $8::bigint, $9::int, '[]', '[]', $4::text, $5::text, $6::bigint)
     RETURNING id, revision, users_count, added, removed`,
  ),
  /**
   * The whole run in one round trip, at the transaction's snapshot: who holds permission $2 now
   * (through any role, `grants_by_permission`; only edges active at $8, in microseconds), the diff against `workflow_holders`, which is
   * brought up to date by that diff alone, the run row, and the schedule's next time ($7).
   * Data-modifying CTEs all see the snapshot, so the insert and the delete touch disjoint users.
   *
   * Written so that no plan can be quadratic, whatever the estimates (`workflow_holders` filled
   * by the previous run may not be analyzed yet, and a CTE has no statistics or index): the diff
   * is a FULL JOIN, which PostgreSQL runs only as a hash or merge join, never a nested loop; the
   * delete finds its rows by their `ctid`s from that join, a TID scan.
   */
  recordRun: wf(
    'record_run',
    `WITH tenant AS (SELECT id, revision FROM clients WHERE hash = $1),
          holders AS (SELECT DISTINCT m."user" FROM tenant t
                        JOIN grants g ON g.client_id = t.id AND g.permission = $2 AND ${activeAt('g')}
                        JOIN memberships m ON m.client_id = g.client_id AND m.role = g.role AND ${activeAt('m')}),
          diff AS (SELECT now."user" AS gained, before."user" AS lost, before.ctid AS lost_at
                   FROM holders now
                   FULL JOIN (SELECT ctid, "user" FROM workflow_holders WHERE client_hash = $1 AND workflow = $2) before
                     ON before."user" = now."user"
                   WHERE now."user" IS NULL OR before."user" IS NULL),
          inserted AS (INSERT INTO workflow_holders (client_hash, workflow, "user") SELECT $1, $2, gained FROM diff WHERE lost IS NULL),
          deleted AS (DELETE FROM workflow_holders WHERE ctid = ANY (ARRAY(SELECT lost_at FROM diff WHERE gained IS NULL))),
          advanced AS (UPDATE workflow_schedules SET last_run_at = $3, next_run_at = $7::bigint,
                         holders_revision = coalesce((SELECT revision FROM tenant), 0), holders_count = (SELECT count(*) FROM holders)
                       WHERE client_hash = $1 AND workflow = $2)
     INSERT INTO workflow_runs (client_hash, workflow, run_at, revision, users_count, added, removed, delivery_status, webhook_id, next_attempt_at)
     SELECT $1, $2, $3::text, coalesce((SELECT revision FROM tenant), 0), (SELECT count(*) FROM holders),
            ${jsonNames('gained', 'lost IS NULL')}, ${jsonNames('lost', 'gained IS NULL')}, $4::text, $5::text, $6::bigint
     RETURNING id, revision, users_count, added, removed`,
  ),
  /**
   * Claims due deliveries: rows another caller is claiming are skipped, not waited for. A run
   * whose schedule has no webhook any more (replaced without one) is marked failed instead, or it
   * would come back at every claim.
   */
  claim: wf(
    'claim',
    `WITH due AS (SELECT id FROM workflow_runs WHERE delivery_status = 'pending' AND next_attempt_at <= $1
                  ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED),
          orphaned AS (UPDATE workflow_runs o SET delivery_status = 'failed', next_attempt_at = NULL FROM due
                       WHERE o.id = due.id AND NOT EXISTS (SELECT 1 FROM workflow_schedules sc WHERE sc.client_hash = o.client_hash
                                                           AND sc.workflow = o.workflow AND sc.webhook_url IS NOT NULL))
     UPDATE workflow_runs r SET next_attempt_at = $2 FROM due, workflow_schedules sc
     WHERE r.id = due.id AND sc.client_hash = r.client_hash AND sc.workflow = r.workflow AND sc.webhook_url IS NOT NULL
     RETURNING ${RUN_COLUMNS}, r.client_hash, r.webhook_id, sc.webhook_url, sc.webhook_secret`,
  ),
  recordDelivery: wf('record_delivery', 'UPDATE workflow_runs SET delivery_status = $2, attempts = $3, last_status = $4, next_attempt_at = $5 WHERE id = $1'),
} as const;

/** A run reads every table at one snapshot, so the users it lists are those of the revision it names. */
const REPEATABLE_READ = 'BEGIN ISOLATION LEVEL REPEATABLE READ';

/**
 * SQLSTATEs that mean another transaction has the schedule: its row is locked (55P03, NOWAIT) or
 * changed since this run's snapshot (40001). Either way someone else runs it now or just did.
 */
const LOST_RACE = new Set(['55P03', '40001']);

/** Epoch ms as a bigint parameter (the columns hold whole milliseconds). */
const ms = (t: number): number => Math.floor(t);

/**
 * The workflow side of the PostgreSQL store (see WorkflowStore in workflow/records.ts). Several
 * instances share the database: runs and claims are made safe against each other by row locks,
 * not by the scheduler's lease alone (a lease can expire while its holder still works).
 */
export class PostgresWorkflows implements WorkflowStore {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  putSchedule(s: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.#db.tx('workflow', 'BEGIN', async (db) => {
      await run(db, WF.upsertSchedule, [s.tenant, s.workflow, s.intervalSeconds, s.webhookUrl, s.webhookSecret, ms(nowMs)]);
      await run(db, INSERT_AUDITS, auditColumns([audit]));
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
      await run(db, INSERT_AUDITS, auditColumns([audit]));
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
  const tenant = (await run(db, WF.tenantRevision, [due.tenant, Math.floor(nowMs * 1000)])).rows[0];
  const revision = Number(tenant?.revision ?? 0);
  // At the revision the holders were computed at, they are still those (unless a window's bound
  // passed since, its change not committed yet): a steady run reads none of them.
  const steady = schedule.holders_revision !== null && Number(schedule.holders_revision) === revision && tenant?.boundary_passed !== true;
  const recorded = steady
    ? run(db, WF.recordSteadyRun, [...values, revision, Number(schedule.holders_count)])
    : run(db, WF.recordRun, [...values, Math.floor(nowMs * 1000)]);
  const row = (await recorded).rows[0];
  if (row === undefined) throw new Error('the run row was not returned'); // unreachable: INSERT … SELECT of one row
  const value = runOf({ ...row, workflow: due.workflow, run_at: runAt, delivery_status: delivery.status, attempts: 0, last_status: null });
  return { commit: true, value };
}
