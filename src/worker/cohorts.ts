/** One client's writes: the cohort running now, and the writers waiting for the next one. */
interface Cohort {
  /** Writers may still join the running cohort (until the end of the turn it started in). */
  open: boolean;
  /** Writers of the running cohort that have not left yet (0: the client is idle). */
  running: number;
  next: Array<() => void>;
  /** When the last cohort started (performance.now()). */
  startedAt: number;
  /** The next cohort's delayed start, or the removal of an idle client. */
  timer: NodeJS.Timeout | undefined;
}

export interface CohortOptions {
  /** Whether the worker is busy (checks are competing with the writes for the CPU). */
  busy(): boolean;
  /** While busy, a client's cohorts start at most this often, so that each carries more writes. */
  spacingMs: number;
}

const NEVER_BUSY: CohortOptions = { busy: () => false, spacingMs: 0 };

/**
 * Groups the writes of one client into cohorts. A write that arrives while an earlier cohort of
 * the same client is still being committed and acknowledged by every worker waits, and goes with
 * the writes that arrive meanwhile as the next cohort: one pool task, one transaction, one fan-out
 * message, one acknowledgement for all of them. A write with nothing in flight before it starts at
 * once, so a lone writer waits for nothing.
 *
 * While the worker is busy, a client's cohorts also start at most every `spacingMs`: up to that
 * much more per write buys fewer hand-offs, whose CPU the checks beside them need.
 */
export class WriteCohorts {
  readonly #clients = new Map<string, Cohort>();
  readonly #options: CohortOptions;

  constructor(options: CohortOptions = NEVER_BUSY) {
    this.#options = options;
  }

  /** Writes of `key` running or waiting (for tests and diagnostics). */
  pending(key: string): number {
    const c = this.#clients.get(key);
    return c === undefined ? 0 : c.running + c.next.length;
  }

  /**
   * Resolves when the caller may write: at once (undefined) when the client's running cohort is
   * still open or the client is idle, otherwise when the next cohort starts. Every caller must
   * call {@link leave} once its write is done, whatever the outcome.
   */
  enter(key: string): Promise<void> | undefined {
    const c = this.#clients.get(key);
    if (c === undefined) {
      this.#start(key, { open: false, running: 1, next: [], startedAt: 0, timer: undefined });
      return undefined;
    }
    if (c.open) {
      c.running++;
      return undefined;
    }
    const idle = c.running === 0 && c.next.length === 0;
    if (idle) {
      clearTimeout(c.timer);
      c.timer = undefined;
      if (this.#delay(c) <= 0) {
        c.running = 1;
        this.#start(key, c);
        return undefined;
      }
    }
    const wait = new Promise<void>((resolve) => c.next.push(resolve));
    if (idle) this.#later(key, c);
    return wait;
  }

  /** The caller's write is done (committed and acknowledged, refused, or failed). */
  leave(key: string): void {
    const c = this.#clients.get(key);
    if (c === undefined || c.running === 0 || --c.running > 0) return;
    if (c.next.length > 0) {
      if (this.#delay(c) <= 0) this.#startNext(key, c);
      else this.#later(key, c);
      return;
    }
    const spacing = this.#delay(c);
    if (spacing <= 0) {
      this.#clients.delete(key);
      return;
    }
    // Remembered while its spacing lasts, so that a write arriving meanwhile keeps it.
    c.timer = setTimeout(() => {
      if (c.running === 0 && c.next.length === 0) this.#clients.delete(key);
    }, spacing);
    c.timer.unref();
  }

  /** How long the next cohort must wait for the spacing (0 or less: none). */
  #delay(c: Cohort): number {
    if (this.#options.spacingMs <= 0 || !this.#options.busy()) return 0;
    return c.startedAt + this.#options.spacingMs - performance.now();
  }

  #later(key: string, c: Cohort): void {
    c.timer = setTimeout(() => {
      c.timer = undefined;
      this.#startNext(key, c);
    }, Math.max(1, Math.ceil(this.#delay(c))));
  }

  #startNext(key: string, c: Cohort): void {
    const next = c.next;
    c.next = [];
    c.running = next.length;
    this.#start(key, c);
    for (const go of next) go();
  }

  #start(key: string, c: Cohort): void {
    c.open = true;
    c.startedAt = performance.now();
    this.#clients.set(key, c);
    // The writes read in this turn of the event loop join; later ones wait for the next cohort.
    // (Writers wait only once the cohort is closed, so a cohort started again is never closed
    // early by the end of an earlier turn.)
    setImmediate(() => (c.open = false));
  }
}
