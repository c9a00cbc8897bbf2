// A clock the test moves by hand (src/time/clock.ts): no sleeping, no dependence on machine load.
import type { Clock, Timer } from '../../src/time/clock.ts';

interface Pending {
  readonly at: number;
  readonly fn: () => void;
}

/** Lets promise work run: a few turns of the event loop (a SQLite store answers within one). */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A {@link Clock} whose time moves only when the test says. Timers fall due in the order of their
 * time (then of their setting), each at its own time: `now()` inside it reads the time it was due.
 */
export class ManualClock implements Clock {
  #now: number;
  #next = 1;
  readonly #timers = new Map<number, Pending>();

  /** Starts at `startMs` (epoch ms): by default 2030-01-01, a whole minute. */
  constructor(startMs = Date.UTC(2030, 0, 1)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id as unknown as Timer;
  }

  clearTimeout(timer: Timer | undefined): void {
    if (timer !== undefined) this.#timers.delete(timer as unknown as number);
  }

  /** Timers set and not yet due or cancelled. */
  get pending(): number {
    return this.#timers.size;
  }

  /**
   * Moves time on by `ms`, making every call that falls due meanwhile (those set by the calls
   * included) at its own time, and letting the promise work each one starts settle before the next.
   */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      const due = this.#earliest(end);
      if (due === undefined) break;
      const [id, timer] = due;
      this.#timers.delete(id);
      this.#now = timer.at;
      timer.fn();
    }
    this.#now = end;
    await settle();
  }

  /** Moves time on to `atMs` (epoch ms), as {@link advance}. */
  advanceTo(atMs: number): Promise<void> {
    return this.advance(Math.max(0, atMs - this.#now));
  }

  #earliest(end: number): [number, Pending] | undefined {
    let found: [number, Pending] | undefined;
    for (const entry of this.#timers) {
      // Map order is setting order: the first of equal times wins.
      if (entry[1].at <= end && (found === undefined || entry[1].at < found[1].at)) found = entry;
    }
    return found;
  }
}
