/**
 * Every line the service logs, by its `event`: a stable, machine-readable name (`area.what`) that
 * log queries, alerts and tests match, and the human `msg` written beside it, which may be
 * reworded without breaking them. A logger call names the message; the line carries both
 * (see index.ts). A message that is not here does not compile, so every line has its event.
 * docs/operations.md §8 lists them (a test holds the table equal to this one).
 */
export const LOG_EVENTS = {
  // The primary: start-up, its workers, the drain.
  'primary.starting': 'starting',
  'primary.http_engine': 'http engine',
  'primary.listening': 'listening',
  'primary.draining': 'draining',
  'primary.workers_killed': 'workers did not stop in time; killing them',
  'primary.worker_start_failed': 'worker cannot start; stopping the service',
  'primary.replacement_start_failed': 'replacement worker cannot start; retrying',
  'primary.worker_message_failed': 'message to a worker failed',
  'primary.worker_stopped': 'worker stopped while draining',
  'primary.worker_exited_draining': 'worker exited while draining; not replaced',
  'primary.worker_replaced': 'worker exited; replacing it',
  'primary.ack_timeout': 'worker did not acknowledge a change in time; replacing it',
  // A worker's life.
  'worker.ready': 'worker ready',
  'worker.start_failed': 'worker cannot start',
  'worker.orphaned': 'primary is gone; exiting',
  'worker.stopping': 'worker stopping',
  'worker.stop_failed': 'worker stop failed',
  // Either process.
  'process.uncaught_exception': 'uncaught exception; exiting',
  // Requests.
  'http.access': 'access',
  'http.request_failed': 'request failed',
  'http.export_cut': 'export cut: the client changed while it was read',
  // The database layer of a worker.
  'store.thread_failed': 'store thread failed; replaced',
  'store.priority_failed': 'store thread could not lower its CPU priority; it runs at normal priority',
  'store.circuit_open': 'database circuit open: writes and hydrations answer 503',
  'store.circuit_half_open': 'database circuit half-open',
  'store.circuit_closed': 'database circuit closed',
  // The revalidation backstop.
  'cache.revalidation_behind': 'revalidation found a graph behind',
  'cache.revalidation_failed': 'revalidation failed',
  // Changes between instances.
  'redis.subscribed': 'redis subscribed',
  'redis.subscription_lost': 'redis subscription lost; relying on revalidation until it is back',
  'redis.error': 'redis error',
  'redis.subscribe_failed': 'redis subscribe failed',
  'redis.malformed_message': 'ignored a malformed message on the changes channel',
  // The audit trail.
  'audit.append_retrying': 'audit rows not written yet; retrying',
  'audit.dropped': 'audit rows dropped while the database was unavailable',
  'audit.unwritten_at_stop': 'audit rows not written at shutdown: the database is unavailable',
  'audit.pruned': 'audit rows past retention deleted',
  'audit.prune_failed': 'audit retention failed; trying again later',
  // Issued tokens and their revocation.
  'tokens.revoked_read_failed': 'reading the revoked tokens failed',
  'tokens.prune_failed': 'deleting expired tokens failed; trying again later',
  // The workflow scheduler and its webhooks.
  'scheduler.lease_taken': 'workflow scheduler leads',
  'scheduler.standing_by': 'workflow scheduler stands by',
  'scheduler.store_unreachable': 'workflow scheduler cannot reach the database',
  'scheduler.tick_failed': 'workflow scheduler tick failed',
  'scheduler.delivery_unrecorded': 'workflow delivery outcome not recorded',
  'scheduler.store_thread_failed': 'workflow store thread failed; replaced',
  'scheduler.stop_late': 'workflow scheduler did not stop in time',
  'webhook.retrying': 'webhook delivery failed; retrying',
  'webhook.failed': 'webhook delivery failed; no retry left',
  // Traces.
  'trace.export_failed': 'traces not exported; spans dropped',
  // Metrics.
  'metrics.scrape_failed': 'metrics scrape failed',
  'metrics.snapshot_failed': 'metrics snapshot failed',
} as const;

export type LogEvent = keyof typeof LOG_EVENTS;
/** A message the service may log: one of {@link LOG_EVENTS}. */
export type LogMessage = (typeof LOG_EVENTS)[LogEvent];

/** The event of a line whose message is not catalogued (only a caller that typed it as a plain string can get there). */
export const UNCATALOGUED_EVENT = 'log.uncatalogued';

/** Events whose message is another's too (none: a message names one event). */
type Shared<T extends Record<string, string>> = { [K in keyof T]: T[K] extends T[Exclude<keyof T, K>] ? K : never }[keyof T];
const MESSAGES_UNIQUE: [Shared<typeof LOG_EVENTS>] extends [never] ? true : never = true;
void MESSAGES_UNIQUE;

const EVENT_OF: ReadonlyMap<string, LogEvent> = new Map(Object.entries(LOG_EVENTS).map(([event, msg]) => [msg, event as LogEvent]));

/** The event of a message. */
export function eventOf(msg: string): LogEvent | typeof UNCATALOGUED_EVENT {
  return EVENT_OF.get(msg) ?? UNCATALOGUED_EVENT;
}
