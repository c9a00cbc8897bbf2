/**
 * The time that code waiting or scheduling goes by: what time it is, and calls made later. Code
 * that waits takes a clock instead of reading Date.now() and calling setTimeout itself, so that
 * a test can move time on by hand (tests/helpers/clock.ts) instead of sleeping; the service runs
 * on {@link systemClock}.
 */
export interface Clock {
  /** Milliseconds since the epoch (UTC). */
  now(): number;
  /** Calls `fn` once, `ms` from now (at once for 0 or less, though never before this returns). */
  setTimeout(fn: () => void, ms: number, options?: TimerOptions): Timer;
  /** Cancels a call not made yet; nothing for one made, cancelled, or undefined. */
  clearTimeout(timer: Timer | undefined): void;
}

export interface TimerOptions {
  /** Background work: the timer does not keep the process alive on its own (Node's `unref`). */
  readonly unref?: boolean;
}

declare const timerBrand: unique symbol;
/** A call a {@link Clock} will make: only that clock's clearTimeout knows what it is. */
export interface Timer {
  readonly [timerBrand]: true;
}

/** The wall clock and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms, options) {
    const timer = setTimeout(fn, ms);
    if (options?.unref === true) timer.unref();
    return timer as unknown as Timer;
  },
  clearTimeout(timer) {
    if (timer !== undefined) clearTimeout(timer as unknown as NodeJS.Timeout);
  },
};

/** Resolves `ms` from now on `clock`. */
export function sleep(clock: Clock, ms: number, options?: TimerOptions): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms, options));
}

/** A repeating call, until stopped. */
export interface Repeating {
  stop(): void;
}

/**
 * Calls `fn` every `ms` on `clock` until stopped, as setInterval does: the next call is set when
 * one is made, before `fn` runs, so a slow `fn` does not stretch the period.
 */
export function every(clock: Clock, ms: number, fn: () => void, options?: TimerOptions): Repeating {
  let timer: Timer | undefined;
  let stopped = false;
  const arm = (): void => {
    timer = clock.setTimeout(
      () => {
        if (stopped) return;
        arm();
        fn();
      },
      ms,
      options,
    );
  };
  arm();
  return {
    stop() {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
