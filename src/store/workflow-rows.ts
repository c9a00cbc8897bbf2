import type { TenantId } from '../authz/tenant.ts';
import type { DeliveryJob, DeliveryStatus, RunEntry, ScheduleEntry } from '../workflow/records.ts';

type Row = Record<string, unknown>;

/** The lease the workflow scheduler takes: one scheduler across every process and instance. */
export const SCHEDULER_LEASE = 'scheduler';

/** A stored run as the port answers it (the same for every adapter); bigint columns come as text from pg. */
export function runOf(r: Row): RunEntry {
  return {
    id: Number(r.id),
    workflow: String(r.workflow),
    runAt: String(r.run_at),
    revision: Number(r.revision),
    usersCount: Number(r.users_count),
    added: JSON.parse(String(r.added)) as string[],
    removed: JSON.parse(String(r.removed)) as string[],
    delivery: {
      status: String(r.delivery_status) as DeliveryStatus,
      attempts: Number(r.attempts),
      lastStatus: r.last_status === null || r.last_status === undefined ? null : Number(r.last_status),
    },
  };
}

/** A claimed run, with its schedule's webhook columns, as a delivery to make. */
export function jobOf(r: Row): DeliveryJob {
  return {
    run: runOf(r),
    // Read back from the database, where only hashed keys are ever written: a TenantId again.
    tenant: String(r.client_hash) as TenantId,
    webhookUrl: String(r.webhook_url),
    webhookSecret: String(r.webhook_secret),
    webhookId: String(r.webhook_id),
  };
}

/** A stored schedule as listed. */
export function scheduleOf(r: Row): ScheduleEntry {
  return {
    workflow: String(r.workflow),
    intervalSeconds: Number(r.interval_seconds),
    webhookUrl: r.webhook_url === null || r.webhook_url === undefined ? null : String(r.webhook_url),
    lastRunAt: r.last_run_at === null || r.last_run_at === undefined ? null : String(r.last_run_at),
  };
}

/**
 * When the schedule runs next: the first time on its grid (its due time plus whole intervals)
 * after `nowMs`, so that runs missed while nothing was running are skipped, not replayed.
 */
export function nextRunAt(dueAtMs: number, intervalSeconds: number, nowMs: number): number {
  const intervalMs = intervalSeconds * 1000;
  return dueAtMs + (Math.floor(Math.max(0, nowMs - dueAtMs) / intervalMs) + 1) * intervalMs;
}

/** Where a new run's delivery starts: pending now when the schedule has a webhook, else none. */
export function deliveryOf(
  hasWebhook: boolean,
  webhookId: string,
  nowMs: number,
): { status: DeliveryStatus; webhookId: string | null; nextAttemptAt: number | null } {
  return hasWebhook ? { status: 'pending', webhookId, nextAttemptAt: nowMs } : { status: 'none', webhookId: null, nextAttemptAt: null };
}
