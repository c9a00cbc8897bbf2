import type { Logger } from '../log/index.ts';
import { every, sleep, systemClock, type Clock } from '../time/clock.ts';

const DAY_MS = 86_400_000;
/** Rows per delete: short transactions that never hold the write lock for long. */
const BATCH = 1000;
const PERIOD_MS = 3_600_000;
/** A pause between batches, so a large backlog does not crowd out writes. */
const PAUSE_MS = 50;

/**
 * Deletes audit rows older than `days` (AUTH_AUDIT_RETENTION_DAYS; 0 keeps them forever), in small
 * batches, at start-up and hourly. Every worker runs it: deleting what another already deleted
 * costs one empty query. The cut-off, the pauses and the period go by `clock`.
 */
export function startAuditRetention(
  prune: (before: string, limit: number) => Promise<number>,
  days: number,
  log: Logger,
  clock: Clock = systemClock,
): { stop(): void; now(): Promise<void> } {
  if (days === 0) return { stop: () => undefined, now: async () => undefined };
  let stopped = false;
  let running: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    const before = new Date(clock.now() - days * DAY_MS).toISOString().slice(0, 23);
    let total = 0;
    for (let n = BATCH; n === BATCH && !stopped; total += n) {
      n = await prune(before, BATCH);
      if (n === BATCH) await sleep(clock, PAUSE_MS);
    }
    if (total > 0) log.info('audit rows past retention deleted', { rows: total, days });
  };
  const now = (): Promise<void> => {
    running ??= run()
      .catch((err: unknown) => log.warn('audit retention failed; trying again later', { err }))
      .finally(() => (running = undefined));
    return running;
  };
  const background = { unref: true };
  const first = clock.setTimeout(() => void now(), 5_000, background);
  const hourly = every(clock, PERIOD_MS, () => void now(), background);
  return {
    now,
    stop: () => {
      stopped = true;
      clock.clearTimeout(first);
      hourly.stop();
    },
  };
}
