import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { PrimaryMetrics } from '../metrics/primary.ts';
import { PooledStore } from '../pool/index.ts';
import { storeSettings, type StoreSettings } from '../store/settings.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { WebhookHosts } from '../workflow/allowed-hosts.ts';
import { Scheduler } from '../workflow/scheduler.ts';
import type { ChangeMessage } from '../invalidation/messages.ts';
import { newWebhookId } from '../workflow/secrets.ts';
import { afterAttempt, deliverOnce, webhookBody } from '../workflow/webhook.ts';
import type { Tracer } from '../trace/index.ts';

/** How often the leader looks for due runs: the first run of a new schedule comes within this (and a lease renewal). */
const TICK_MS = 250;
/** The scheduler's connections on PostgreSQL: runs one at a time, and deliveries record their outcome. */
const SCHEDULER_CONNECTIONS = 2;

export interface RunningScheduler {
  stop(): Promise<void>;
}

/**
 * The workflow scheduler of this instance (docs/api.md §16): its own store thread (so a run, which
 * reads a whole permission's holders, never runs on an HTTP worker's event loop or pool) and the
 * webhook sender, under the lease every instance of one database competes for.
 */
export function startWorkflowScheduler(
  config: Config,
  log: Logger,
  metrics: PrimaryMetrics,
  publish: (msgs: readonly ChangeMessage[]) => void,
  tracer: Tracer,
  clock: Clock = systemClock,
): RunningScheduler {
  const store = new PooledStore(schedulerSettings(config), 1, (err) => log.warn('workflow store thread failed; replaced', { err }), tracer);
  const hosts = WebhookHosts.parse(config.AUTH_WEBHOOK_ALLOWED_HOSTS);
  const scheduler = new Scheduler({
    store,
    deliver: async (job) => {
      const target = { url: job.webhookUrl, secret: job.webhookSecret, webhookId: job.webhookId, body: webhookBody(job.run) };
      // A span per attempt (traces on): the receiver's answer or the reason, never the URL (it may hold a secret).
      const result = await tracer.span('webhook.deliver', () => deliverOnce(target, hosts), { kind: 'client', attributes: { 'rbac.run': job.run.id } });
      const update = afterAttempt(job, result, clock.now());
      // The reason names no URL, secret or client data: an error code or the receiver's status.
      if (update.status === 'failed') log.warn('webhook delivery failed; no retry left', { run: job.run.id, attempts: update.attempts, reason: result.reason });
      else if (update.status === 'pending')
        log.debug('webhook delivery failed; retrying', { run: job.run.id, attempts: update.attempts, reason: result.reason });
      return update;
    },
    owner: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    leaseMs: leaseMsFor(config.AUTH_WORKFLOW_MIN_INTERVAL_SECONDS),
    tickMs: TICK_MS,
    newWebhookId,
    log,
    events: {
      ran: (seconds, ok) => metrics.workflowRun(seconds, ok),
      delivered: (update) => metrics.webhookDelivery(update.status),
      leading: (leader) => metrics.schedulerLeader(leader),
      boundaries: (committed) => {
        // To every cache, like a worker's write (the commit time for the invalidation delay is now).
        const at = Date.now();
        publish(committed.map(({ tenant, revision, change }) => ({ v: 1, tenant, revision, changes: [change], at })));
        for (const c of committed) metrics.boundaryChange(c.change.op);
      },
    },
    clock,
  });
  scheduler.start();
  return {
    async stop() {
      await scheduler.stop();
      await store.close();
    },
  };
}

/**
 * The lease lasts as long as the shortest interval allowed, between 1 and 5 s: a dead leader's
 * schedules are taken over within one interval, and renewals (every quarter) stay cheap.
 */
export function leaseMsFor(minIntervalSeconds: number): number {
  return Math.min(5_000, Math.max(1_000, minIntervalSeconds * 1000));
}

/** The instance's store, as background work (a lower CPU priority), with few connections. */
function schedulerSettings(config: Config): StoreSettings {
  const settings: StoreSettings = { ...storeSettings(config), background: true };
  if (settings.type !== 'postgresql') return settings;
  const pg = settings.postgresql;
  return { ...settings, postgresql: { ...pg, poolMax: Math.min(SCHEDULER_CONNECTIONS, pg.poolMax) } };
}
