import type { Logger } from '../log/index.ts';
import { systemClock, type Clock, type Timer } from '../time/clock.ts';
import type { AuditRecord } from './record.ts';

/** Rows per store call; also what makes a flush start at once instead of after the delay. */
const BATCH = 500;
/** How long a lone row waits for others: reads stay synchronous, the store sees batches. */
const FLUSH_DELAY_MS = 50;
/** Rows held while the database is away; beyond this the oldest are dropped (and counted in a log line). */
const MAX_PENDING = 50_000;
const RETRY_DELAY_MS = 1000;
/** The trail's timers never keep a stopping worker alive: close() flushes what is left. */
const BACKGROUND = { unref: true };

/**
 * The audit rows recorded after their answer (failed requests, reads, token issues): kept in
 * memory and appended in batches, off the request's path. A successful write's row does not come
 * here: it commits in the write's own transaction. While the database is away rows wait (up to
 * {@link MAX_PENDING}) and go in once it is back; {@link close} flushes what is left.
 */
export class AuditTrail {
  readonly #append: (rows: readonly AuditRecord[]) => Promise<void>;
  readonly #log: Logger;
  readonly #clock: Clock;
  #pending: AuditRecord[] = [];
  #timer: Timer | undefined;
  #flushing: Promise<void> | undefined;
  #dropped = 0;

  /** `clock`: what the batching delay and the retries wait on. */
  constructor(append: (rows: readonly AuditRecord[]) => Promise<void>, log: Logger, clock: Clock = systemClock) {
    this.#append = append;
    this.#log = log;
    this.#clock = clock;
  }

  /** Takes a row; never waits and never throws. */
  record(row: AuditRecord): void {
    if (this.#pending.length >= MAX_PENDING) {
      this.#pending.shift();
      this.#dropped++;
    }
    this.#pending.push(row);
    if (this.#pending.length >= BATCH) this.#flushSoon(0);
    else this.#flushSoon(FLUSH_DELAY_MS);
  }

  /** Appends everything recorded so far (one attempt per batch); for a graceful stop. */
  async close(): Promise<void> {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    while (this.#pending.length > 0) {
      if (!(await this.#flushBatch())) break;
    }
    if (this.#pending.length > 0) this.#log.warn('audit rows not written at shutdown: the database is unavailable', { rows: this.#pending.length });
  }

  #flushSoon(delayMs: number): void {
    if (this.#flushing !== undefined || (this.#timer !== undefined && delayMs > 0)) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#flushing = this.#flushAll().finally(() => {
          this.#flushing = undefined;
          // Rows recorded after the last batch went out, while this flush was ending, go next.
          if (this.#pending.length > 0 && this.#timer === undefined) this.#flushSoon(FLUSH_DELAY_MS);
        });
      },
      delayMs,
      BACKGROUND,
    );
  }

  async #flushAll(): Promise<void> {
    while (this.#pending.length > 0) {
      if (!(await this.#flushBatch())) {
        // The database is away: try again later, keeping the rows.
        this.#timer = this.#clock.setTimeout(
          () => {
            this.#timer = undefined;
            this.#flushSoon(0);
          },
          RETRY_DELAY_MS,
          BACKGROUND,
        );
        return;
      }
    }
  }

  /** Appends the oldest batch; false when the store failed (the rows stay). */
  async #flushBatch(): Promise<boolean> {
    const batch = this.#pending.slice(0, BATCH);
    try {
      await this.#append(batch);
    } catch (err) {
      this.#log.warn('audit rows not written yet; retrying', { rows: this.#pending.length, err });
      return false;
    }
    this.#pending.splice(0, batch.length);
    if (this.#dropped > 0) {
      this.#log.warn('audit rows dropped while the database was unavailable', { rows: this.#dropped });
      this.#dropped = 0;
    }
    return true;
  }
}
