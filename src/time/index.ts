import { systemClock, type Clock } from './clock.ts';

/**
 * Timestamps of the wire format: UTC, ISO 8601, exactly six fractional digits, no zone
 * (`2026-11-22T10:51:50.914928`). Built from a monotonic clock anchored to the wall clock (a
 * {@link Clock}'s `now`) once a second (when they drift apart), with the text up to the
 * millisecond reused while the millisecond lasts: the hot path pays a short concatenation, or a
 * few bytes written into its prebuilt answer. Its state is its own: a test makes one on a clock
 * it moves by hand.
 */
export class WireTimestamps {
  readonly #clock: Clock;
  readonly #monotonic: () => number;
  #anchor: number;
  #anchoredAt: number;
  #lastMs = -1;
  #lastPrefix = '';
  /** `#lastPrefix` as bytes, for answers kept as bytes ({@link write}). */
  readonly #lastPrefixBytes = new Uint8Array(23);

  /** `monotonic`: milliseconds that never go back (`performance.now()`), the `now` the callers pass. */
  constructor(clock: Clock, monotonic: () => number = () => performance.now()) {
    this.#clock = clock;
    this.#monotonic = monotonic;
    this.#anchoredAt = monotonic();
    this.#anchor = clock.now() - this.#anchoredAt;
  }

  /**
   * The wire timestamp of now, or of `now` (a monotonic reading the caller made already: the hot
   * path reads the clock once a request).
   */
  text(now = this.#monotonic()): string {
    const t = this.#wallClock(now);
    return this.#lastPrefix + MICROS[Math.floor((t - this.#lastMs) * 1000) % 1000];
  }

  /** Writes the wire timestamp of `now` (a monotonic reading) as ASCII into `into` from `at`: {@link TIMESTAMP_LENGTH} bytes. */
  write(into: Uint8Array, at: number, now: number): void {
    const micros = Math.floor((this.#wallClock(now) - this.#lastMs) * 1000) % 1000;
    into.set(this.#lastPrefixBytes, at);
    into[at + 23] = 48 + Math.floor(micros / 100);
    into[at + 24] = 48 + (Math.floor(micros / 10) % 10);
    into[at + 25] = 48 + (micros % 10);
  }

  /** Epoch milliseconds (with the fraction) of `now`, a monotonic reading; keeps the prefix of its millisecond. */
  #wallClock(now: number): number {
    if (now - this.#anchoredAt > 1000) {
      // Follow the wall clock when it moved (NTP, manual change), not its millisecond truncation.
      const drift = this.#clock.now() - (this.#anchor + now);
      if (drift > 1 || drift < -1) this.#anchor += drift;
      this.#anchoredAt = now;
    }
    const t = this.#anchor + now;
    const ms = Math.floor(t);
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#lastPrefix = new Date(ms).toISOString().slice(0, 23);
      for (let k = 0; k < 23; k++) this.#lastPrefixBytes[k] = this.#lastPrefix.charCodeAt(k);
    }
    return t;
  }
}

const MICROS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** The process's timestamps, on the system clock. */
const SYSTEM = new WireTimestamps(systemClock);

/**
 * The wire timestamp of now, or of `now` (a `performance.now()` the caller read already). On
 * every answer, so kept to the monotonic clock and a cached prefix.
 */
export function timestamp(now?: number): string {
  return SYSTEM.text(now);
}

/** Length of a wire timestamp: {@link writeTimestamp} writes this many bytes. */
export const TIMESTAMP_LENGTH = 26;

/** Writes the wire timestamp of `now` (a `performance.now()`) as ASCII into `into` from `at`. */
export function writeTimestamp(into: Uint8Array, at: number, now: number): void {
  SYSTEM.write(into, at, now);
}

/** The wire timestamp of `atMs` (epoch ms; a fraction gives the microseconds): a time a caller's clock decided, as the scheduler's. */
export function timestampAt(atMs: number): string {
  const ms = Math.floor(atMs);
  return new Date(ms).toISOString().slice(0, 23) + MICROS[Math.floor((atMs - ms) * 1000) % 1000];
}
