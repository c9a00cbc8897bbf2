import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import { whenFree } from './busy.ts';
import type { AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { timestampAt } from '../../time/index.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput, WorkflowStore } from '../../workflow/records.ts';
import { deliveryOf, jobOf, nextRunAt, runOf, scheduleOf, SCHEDULER_LEASE } from '../workflow-rows.ts';

type Row = Record<string, unknown>;

/** Whether the edge of table alias `t` is active at `now` (a parameter): `not_before` ≤ now < `expires_at`, NULL open. */
const activeAt = (t: string, now: string): string =>
  `(${t}.not_before IS NULL OR ${t}.not_before <= ${now}) AND (${t}.expires_at IS NULL OR ${t}.expires_at > ${now})`;

/** The run's columns as {@link runOf} reads them. */
const RUN_COLUMNS = 'r.id, r.workflow, r.run_at, r.revision, r.users_count, r.added, r.removed, r.delivery_status, r.attempts, r.last_status';

function prepareAll(db: Database.Database) {
  const p = (sql: string): Database.Statement => prepared(db, sql);
  return {
    upsert: p(
      `INSERT INTO workflow_schedules (client_hash, workflow, interval_seconds, webhook_url, webhook_secret, next_run_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (client_hash, workflow) DO UPDATE SET interval_seconds = excluded.interval_seconds,
         webhook_url = excluded.webhook_url, webhook_secret = excluded.webhook_secret, next_run_at = excluded.next_run_at`,
    ),
    deleteSchedule: p('DELETE FROM workflow_schedules WHERE client_hash = ? AND workflow = ?'),
    deleteRuns: p('DELETE FROM workflow_runs WHERE client_hash = ? AND workflow = ?'),
    deleteHolders: p('DELETE FROM workflow_holders WHERE client_hash = ? AND workflow = ?'),
    schedules: p('SELECT workflow, interval_seconds, webhook_url, last_run_at FROM workflow_schedules WHERE client_hash = ?'),
    schedule: p(
      `SELECT interval_seconds, webhook_url IS NOT NULL AS hooked, next_run_at, holders_revision, holders_count
       FROM workflow_schedules WHERE client_hash = ? AND workflow = ?`,
    ),
    runs: p(`SELECT ${RUN_COLUMNS} FROM workflow_runs r WHERE r.client_hash = ? AND r.workflow = ? AND r.id < ? ORDER BY r.id DESC LIMIT ?`),
    takeLease: p(
      `INSERT INTO workflow_lease (name, owner, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE workflow_lease.owner = excluded.owner OR workflow_lease.expires_at < ?
       RETURNING owner`,
    ),
    releaseLease: p('DELETE FROM workflow_lease WHERE name = ? AND owner = ?'),
    due: p('SELECT client_hash, workflow FROM workflow_schedules WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?'),
    tenant: p('SELECT id, revision FROM clients WHERE hash = ?'),
    // Binary collation: sorted by code point, as a run lists its users.
    // Only the edges active at the run's time (docs/api.md §12.1): `@now` in microseconds.
    holdersNow: p(
      `SELECT DISTINCT m.user FROM grants g JOIN memberships m ON m.client_id = g.client_id AND m.role = g.role
       WHERE g.client_id = @client AND g.permission = @permission AND ${activeAt('g', '@now')} AND ${activeAt('m', '@now')} ORDER BY m.user`,
    ).pluck(),
    // A bound passed and not yet committed as its change: holders may differ at one revision.
    boundaryPassed: p(
      `SELECT 1 FROM grants WHERE client_id = @client AND (not_before IS NOT NULL OR expires_at IS NOT NULL) AND (not_before <= @now OR expires_at <= @now)
       UNION ALL
       SELECT 1 FROM memberships WHERE client_id = @client AND (not_before IS NOT NULL OR expires_at IS NOT NULL) AND (not_before <= @now OR expires_at <= @now)
       LIMIT 1`,
    ),
    holdersBefore: p('SELECT user FROM workflow_holders WHERE client_hash = ? AND workflow = ? ORDER BY user').pluck(),
    // A diff goes in as the JSON array the run row stores: one statement, however many names.
    addHolders: p('INSERT INTO workflow_holders (client_hash, workflow, user) SELECT ?, ?, value FROM json_each(?)'),
    dropHolders: p('DELETE FROM workflow_holders WHERE client_hash = ? AND workflow = ? AND user IN (SELECT value FROM json_each(?))'),
    insertRun: p(
      `INSERT INTO workflow_runs (client_hash, workflow, run_at, revision, users_count, added, removed, delivery_status, webhook_id, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    advance: p(
      `UPDATE workflow_schedules SET last_run_at = ?, next_run_at = ?, holders_revision = ?, holders_count = ?
       WHERE client_hash = ? AND workflow = ?`,
    ),
    // The partial index `workflow_runs_pending` serves this, its condition repeated word for word.
    claimable: p(
      `SELECT ${RUN_COLUMNS}, r.client_hash, r.webhook_id, s.webhook_url, s.webhook_secret FROM workflow_runs r
       LEFT JOIN workflow_schedules s ON s.client_hash = r.client_hash AND s.workflow = r.workflow
       WHERE r.delivery_status = 'pending' AND r.next_attempt_at <= ? ORDER BY r.next_attempt_at LIMIT ?`,
    ),
    claim: p('UPDATE workflow_runs SET next_attempt_at = ? WHERE id = ?'),
    orphan: p(`UPDATE workflow_runs SET delivery_status = 'failed', next_attempt_at = NULL WHERE id = ?`),
    recordDelivery: p('UPDATE workflow_runs SET delivery_status = ?, attempts = ?, last_status = ?, next_attempt_at = ? WHERE id = ?'),
  };
}

type Statements = ReturnType<typeof prepareAll>;

/**
 * The workflow side of the SQLite store (see WorkflowStore in workflow/records.ts). Statements
 * and transaction functions are made once, here; each statement is kept for the life of
 * the process (see prepared.ts), and `insertAudit` is the audit trail's insert, so a
 * schedule's audit row commits in its transaction. Each call runs through the busy-retry and
 * takes the write lock where it writes.
 */
export class SqliteWorkflows implements WorkflowStore {
  readonly #st: Statements;
  readonly #put: (s: ScheduleInput, nowMs: number, audit: AuditRecord) => void;
  readonly #remove: (tenant: TenantId, workflow: string, audit: AuditRecord) => boolean;
  readonly #runs: (tenant: TenantId, workflow: string, before: number | undefined, limit: number) => RunEntry[] | undefined;
  readonly #read: (due: DueSchedule, nowMs: number) => RunPlan | undefined;
  readonly #write: (due: DueSchedule, plan: RunPlan, nowMs: number, webhookId: string) => RunEntry | undefined;
  readonly #claim: (nowMs: number, claimMs: number, limit: number) => DeliveryJob[];

  constructor(db: Database.Database, insertAudit: (r: AuditRecord) => void) {
    const st = (this.#st = prepareAll(db));
    const put = db.transaction((s: ScheduleInput, nowMs: number, audit: AuditRecord) => {
      st.upsert.run(s.tenant, s.workflow, s.intervalSeconds, s.webhookUrl, s.webhookSecret, nowMs);
      insertAudit(audit);
    });
    const remove = db.transaction((tenant: TenantId, workflow: string, audit: AuditRecord): boolean => {
      if (st.deleteSchedule.run(tenant, workflow).changes === 0) return false;
      st.deleteRuns.run(tenant, workflow);
      st.deleteHolders.run(tenant, workflow);
      insertAudit(audit);
      return true;
    });
    const runs = db.transaction((tenant: TenantId, workflow: string, before: number | undefined, limit: number): RunEntry[] | undefined => {
      if (st.schedule.get(tenant, workflow) === undefined) return undefined;
      return (st.runs.all(tenant, workflow, before ?? Number.MAX_SAFE_INTEGER, limit) as Row[]).map(runOf);
    });
    const read = db.transaction((due: DueSchedule, nowMs: number) => readRun(st, due, nowMs));
    const write = db.transaction((due: DueSchedule, plan: RunPlan, nowMs: number, webhookId: string) => writeRun(st, due, plan, nowMs, webhookId));
    const claim = db.transaction((nowMs: number, claimMs: number, limit: number) => claimDue(st, nowMs, claimMs, limit));
    this.#put = (s, nowMs, audit) => put.immediate(s, nowMs, audit);
    this.#remove = (tenant, workflow, audit) => remove.immediate(tenant, workflow, audit);
    this.#runs = (tenant, workflow, before, limit) => runs.deferred(tenant, workflow, before, limit);
    this.#read = (due, nowMs) => read.deferred(due, nowMs);
    this.#write = (due, plan, nowMs, webhookId) => write.immediate(due, plan, nowMs, webhookId);
    this.#claim = (nowMs, claimMs, limit) => claim.immediate(nowMs, claimMs, limit);
  }

  async putSchedule(s: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    whenFree(() => this.#put(s, nowMs, audit));
  }
  async deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return whenFree(() => this.#remove(tenant, workflow, audit));
  }
  async schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return whenFree(() => (this.#st.schedules.all(tenant) as Row[]).map(scheduleOf));
  }
  async runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return whenFree(() => this.#runs(tenant, workflow, before, limit));
  }
  async takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return whenFree(() => this.#st.takeLease.get(SCHEDULER_LEASE, owner, nowMs + ttlMs, nowMs) !== undefined);
  }
  async releaseLease(owner: string): Promise<void> {
    whenFree(() => this.#st.releaseLease.run(SCHEDULER_LEASE, owner));
  }
  async dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    // Read back from the database, where only hashed keys are ever written: TenantIds again.
    const rows = whenFree(() => this.#st.due.all(nowMs, limit)) as Row[];
    return rows.map((r) => ({ tenant: String(r.client_hash) as TenantId, workflow: String(r.workflow) }));
  }
  /**
   * Reads in a snapshot (WAL: writers go on meanwhile), then writes the run in a short write
   * transaction that first checks the schedule is as read: the write lock is held for the
   * diff's rows, not for reading the holders.
   */
  async runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return whenFree(() => {
      const plan = this.#read(due, nowMs);
      return plan === undefined ? undefined : this.#write(due, plan, nowMs, webhookId);
    });
  }
  async claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    return whenFree(() => this.#claim(nowMs, claimMs, limit));
  }
  async recordDelivery(u: DeliveryUpdate): Promise<void> {
    whenFree(() => this.#st.recordDelivery.run(u.status, u.attempts, u.lastStatus, u.nextAttemptAtMs, u.runId));
  }
}

/** What a run read in its snapshot: the schedule as it was, the revision, and the diff to record. */
interface RunPlan {
  readonly nextRunAt: number;
  readonly holdersRevision: number | null;
  readonly intervalSeconds: number;
  readonly hooked: boolean;
  readonly revision: number;
  readonly added: string[];
  readonly removed: string[];
  readonly count: number;
}

/**
 * Inside a read transaction (one snapshot): the run of a schedule still due. Who holds the
 * permission now is read from the grants, who held it at the last run from `workflow_holders`.
 * At the revision of the last run nothing can have changed (unless a window's bound passed
 * since), and nothing is read: a steady schedule costs a few row look-ups per run.
 */
function readRun(st: Statements, due: DueSchedule, nowMs: number): RunPlan | undefined {
  const schedule = st.schedule.get(due.tenant, due.workflow) as Row | undefined;
  if (schedule === undefined || Number(schedule.next_run_at) > nowMs) return undefined;
  const tenant = st.tenant.get(due.tenant) as Row | undefined;
  const revision = tenant === undefined ? 0 : Number(tenant.revision);
  const holdersRevision = schedule.holders_revision === null ? null : Number(schedule.holders_revision);
  // At the revision of the last run the holders are the same, unless a window's bound has passed
  // and its change is not committed yet (it will be, within seconds, at a new revision).
  const steady = holdersRevision === revision && (tenant === undefined || st.boundaryPassed.get({ client: tenant.id, now: nowMs * 1000 }) === undefined);
  const { added, removed, count } = steady ? { added: [], removed: [], count: Number(schedule.holders_count) } : diffHolders(st, due, tenant, nowMs);
  const hooked = Number(schedule.hooked) === 1;
  return {
    nextRunAt: Number(schedule.next_run_at),
    holdersRevision,
    intervalSeconds: Number(schedule.interval_seconds),
    hooked,
    revision,
    added,
    removed,
    count,
  };
}

/**
 * Inside `BEGIN IMMEDIATE`: records the run read by {@link readRun}, unless the schedule changed
 * since (another run advanced it, or it was replaced or deleted: then the next tick reads again).
 * Its holders are still those the diff was made against: only runs change them, and every run
 * moves the schedule's time.
 */
function writeRun(st: Statements, due: DueSchedule, plan: RunPlan, nowMs: number, webhookId: string): RunEntry | undefined {
  const now = st.schedule.get(due.tenant, due.workflow) as Row | undefined;
  if (now === undefined || Number(now.next_run_at) !== plan.nextRunAt) return undefined;
  if ((now.holders_revision === null ? null : Number(now.holders_revision)) !== plan.holdersRevision) return undefined;
  const [addedJson, removedJson] = [JSON.stringify(plan.added), JSON.stringify(plan.removed)];
  if (plan.added.length > 0) st.addHolders.run(due.tenant, due.workflow, addedJson);
  if (plan.removed.length > 0) st.dropHolders.run(due.tenant, due.workflow, removedJson);
  const runAt = timestampAt(nowMs);
  const delivery = deliveryOf(plan.hooked, webhookId, nowMs);
  const values = [
    due.tenant,
    due.workflow,
    runAt,
    plan.revision,
    plan.count,
    addedJson,
    removedJson,
    delivery.status,
    delivery.webhookId,
    delivery.nextAttemptAt,
  ];
  const id = Number((st.insertRun.get(...values) as Row).id);
  st.advance.run(runAt, nextRunAt(plan.nextRunAt, plan.intervalSeconds, nowMs), plan.revision, plan.count, due.tenant, due.workflow);
  const { revision, added, removed, count } = plan;
  return {
    id,
    workflow: due.workflow,
    runAt,
    revision,
    usersCount: count,
    added,
    removed,
    delivery: { status: delivery.status, attempts: 0, lastStatus: null },
  };
}

/** Who holds the workflow now (active edges only), diffed against `workflow_holders` (the users of the last run). */
function diffHolders(st: Statements, due: DueSchedule, tenant: Row | undefined, nowMs: number): { added: string[]; removed: string[]; count: number } {
  const now = tenant === undefined ? [] : (st.holdersNow.all({ client: tenant.id, permission: due.workflow, now: nowMs * 1000 }) as string[]);
  return { ...diff(now, st.holdersBefore.all(due.tenant, due.workflow) as string[]), count: now.length };
}

/**
 * Who is in `now` and not in `before`, and the reverse, each in the order given. The database
 * answers both sorted by code point, which for the ASCII names of the contract is JavaScript's
 * order too: then one merge pass does it. Lists in any other order (they should not be, but a
 * diff must never be wrong) are compared through sets.
 */
function diff(now: readonly string[], before: readonly string[]): { added: string[]; removed: string[] } {
  if (!ascending(now) || !ascending(before)) {
    const [nowSet, beforeSet] = [new Set(now), new Set(before)];
    return { added: now.filter((u) => !beforeSet.has(u)), removed: before.filter((u) => !nowSet.has(u)) };
  }
  const added: string[] = [];
  const removed: string[] = [];
  let [i, j] = [0, 0];
  while (i < now.length && j < before.length) {
    const [a, b] = [now[i] as string, before[j] as string];
    if (a === b) [i, j] = [i + 1, j + 1];
    else if (a < b) added.push(now[i++] as string);
    else removed.push(before[j++] as string);
  }
  return { added: added.concat(now.slice(i)), removed: removed.concat(before.slice(j)) };
}

function ascending(list: readonly string[]): boolean {
  for (let k = 1; k < list.length; k++) if ((list[k - 1] as string) >= (list[k] as string)) return false;
  return true;
}

/**
 * Inside `BEGIN IMMEDIATE`: the pending deliveries due, each claimed for `claimMs`. A run whose
 * schedule no longer has a webhook (replaced without one) can never be delivered: it is marked
 * failed here rather than left pending, where it would come back at every claim.
 */
function claimDue(st: Statements, nowMs: number, claimMs: number, limit: number): DeliveryJob[] {
  const jobs: DeliveryJob[] = [];
  for (const r of st.claimable.all(nowMs, limit) as Row[]) {
    if (r.webhook_url === null || r.webhook_url === undefined) {
      st.orphan.run(r.id);
      continue;
    }
    st.claim.run(nowMs + claimMs, r.id);
    jobs.push(jobOf(r));
  }
  return jobs;
}
