import type { AuditRecord } from '../audit/record.ts';
import type { TenantId } from '../authz/tenant.ts';

/**
 * The records of scheduled workflow checks (docs/api.md §16). A workflow is
 * a permission name; a schedule answers, every interval, who can run it and who gained or lost it
 * since the previous run. Shared by the store (which keeps them), the HTTP routes and the
 * scheduler.
 */

/** A schedule as created or replaced by `POST /api/workflow/schedule/{workflow}`. */
export interface ScheduleInput {
  readonly tenant: TenantId;
  readonly workflow: string;
  readonly intervalSeconds: number;
  readonly webhookUrl: string | null;
  /** `whsec_<base64>`: kept to sign deliveries, shown to the client only in the 201. */
  readonly webhookSecret: string;
}

/** A schedule as listed by `GET /api/workflow/schedules`. */
export interface ScheduleEntry {
  readonly workflow: string;
  readonly intervalSeconds: number;
  readonly webhookUrl: string | null;
  /** Wire timestamp of the latest run, null before the first. */
  readonly lastRunAt: string | null;
}

export type DeliveryStatus = 'none' | 'pending' | 'delivered' | 'failed';

/** Where a run's webhook delivery stands. */
export interface Delivery {
  readonly status: DeliveryStatus;
  readonly attempts: number;
  /** The receiver's last HTTP status; null before an answer (or when none came: timeout, refused). */
  readonly lastStatus: number | null;
}

/** One run, as stored and listed (newest first by `id`). */
export interface RunEntry {
  readonly id: number;
  readonly workflow: string;
  /** Wire timestamp (UTC, 6 fractional digits). */
  readonly runAt: string;
  /** The tenant revision the run read. */
  readonly revision: number;
  readonly usersCount: number;
  /** Users who can run the workflow now and could not at the previous run, sorted by code point. */
  readonly added: readonly string[];
  /** Users who could at the previous run and cannot now, sorted by code point. */
  readonly removed: readonly string[];
  readonly delivery: Delivery;
}

/** A schedule whose next run is due, as the scheduler finds it. */
export interface DueSchedule {
  readonly tenant: TenantId;
  readonly workflow: string;
}

/** A webhook delivery attempt to make: the run, where to, and with which secret and id. */
export interface DeliveryJob {
  readonly run: RunEntry;
  readonly tenant: TenantId;
  readonly webhookUrl: string;
  readonly webhookSecret: string;
  /** The Standard Webhooks `webhook-id`: chosen when the run is recorded, the same on every retry. */
  readonly webhookId: string;
}

/** The outcome of one attempt, written on the run. */
export interface DeliveryUpdate {
  readonly runId: number;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly lastStatus: number | null;
  /** Epoch ms of the next attempt while `pending`, else null. */
  readonly nextAttemptAtMs: number | null;
}

/**
 * The store's side of workflows (adapters, the encryption layer, the pool). Failures are thrown
 * like every store call. Times are epoch milliseconds from the caller's clock.
 */
export interface WorkflowStore {
  /**
   * Creates or replaces the tenant's schedule of `workflow`, due at once (`nowMs`); a replaced
   * schedule keeps its runs and the users of its last run (the next diff is against them).
   * `audit` is committed in the same transaction.
   */
  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void>;
  /** Deletes the schedule with its runs; false (and nothing written) when there is none. `audit` commits with the deletion. */
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean>;
  /** Every schedule of the tenant, in no particular order. */
  schedules(tenant: TenantId): Promise<ScheduleEntry[]>;
  /** The schedule's runs with an id below `before` (all when undefined), newest first, at most `limit`; undefined when there is no such schedule. */
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined>;
  /**
   * Takes or renews the scheduler lease for `owner` until `nowMs + ttlMs`: true when `owner` holds
   * it (it was free, expired, or already its own), false when another owner holds it.
   */
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean>;
  /** Gives the lease up (at shutdown) when `owner` holds it. */
  releaseLease(owner: string): Promise<void>;
  /** Schedules due at `nowMs` (their next run time has come), at most `limit`, oldest due first. */
  dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]>;
  /**
   * Makes the schedule's run if it is still due, in one transaction at one revision: who holds
   * the permission through any role, the diff against the previous run's users, the run row
   * (delivery `pending` with `webhookId` when the schedule has a webhook, else `none`), and the
   * next run time: the first multiple of the interval after `nowMs` counted from the time this
   * run was due, so runs missed while nothing ran are not replayed. Undefined when it is not due
   * (another instance ran it, or it was deleted).
   */
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined>;
  /**
   * Pending deliveries whose next attempt is due at `nowMs`, at most `limit`, each claimed (its
   * next attempt moved to `nowMs + claimMs`) so that no other caller takes it meanwhile and a
   * crash mid-attempt leaves it to be tried again.
   */
  claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]>;
  /** Records an attempt's outcome on its run. */
  recordDelivery(update: DeliveryUpdate): Promise<void>;
}
