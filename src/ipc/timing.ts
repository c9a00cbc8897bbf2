/**
 * Timings the primary and its workers must agree on, in one place: each side reads the figure it
 * needs from here, so that changing one cannot leave the other behind.
 */

/**
 * How long a worker's graceful stop may take: requests in flight finish within it. The worker
 * closes its server with this grace; the supervisor waits this long (plus
 * {@link STOP_MARGIN_MS}) before killing a worker that has not exited.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

/** What the supervisor allows beyond {@link SHUTDOWN_GRACE_MS} for a worker to close its store and exit. */
export const STOP_MARGIN_MS = 2_000;

/**
 * How long a write waits for the other workers to apply it (the primary's change hub) before a
 * worker that has not acknowledged is replaced.
 */
export const ACK_TIMEOUT_MS = 2_000;

/**
 * How long a worker lets a change from another worker take to apply before it drops the graph
 * instead: well below {@link ACK_TIMEOUT_MS}, so a slow replay costs a rehydration, not the worker.
 */
export const APPLY_BUDGET_MS = 500;
