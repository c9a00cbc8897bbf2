/**
 * Timestamps of the wire format: UTC, ISO 8601, exactly six fractional digits, no zone
 * (`2026-11-22T10:51:50.914928`). Built from the monotonic clock anchored to the wall clock once
 * a second (when they drift apart), with the text up to the millisecond reused while the millisecond lasts: the hot path
 * pays a short concatenation, or a few bytes written into its prebuilt answer.
 */
let anchor = Date.now() - performance.now();
let anchoredAt = performance.now();
let lastMs = -1;
let lastPrefix = '';
/** `lastPrefix` as bytes, for answers kept as bytes ({@link writeTimestamp}). */
const lastPrefixBytes = new Uint8Array(23);

const MICROS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** Epoch milliseconds (with the fraction) of `now`, a `performance.now()`; keeps the prefix of its millisecond. */
function wallClock(now: number): number {
  if (now - anchoredAt > 1000) {
    // Follow the wall clock when it moved (NTP, manual change), not its millisecond truncation.
    const drift = Date.now() - (anchor + now);
    if (drift > 1 || drift < -1) anchor += drift;
    anchoredAt = now;
  }
  const t = anchor + now;
  const ms = Math.floor(t);
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = new Date(ms).toISOString().slice(0, 23);
    for (let k = 0; k < 23; k++) lastPrefixBytes[k] = lastPrefix.charCodeAt(k);
  }
  return t;
}

/**
 * The wire timestamp of now, or of `now` (a `performance.now()` the caller read already: the hot
 * path reads the clock once a request). On every answer, so kept to the monotonic clock and a
 * cached prefix.
 */
export function timestamp(now = performance.now()): string {
  const t = wallClock(now);
  return lastPrefix + MICROS[Math.floor((t - lastMs) * 1000) % 1000];
}

/** Length of a wire timestamp: {@link writeTimestamp} writes this many bytes. */
export const TIMESTAMP_LENGTH = 26;

/** Writes the wire timestamp of `now` (a `performance.now()`) as ASCII into `into` from `at`. */
export function writeTimestamp(into: Uint8Array, at: number, now: number): void {
  const micros = Math.floor((wallClock(now) - lastMs) * 1000) % 1000;
  into.set(lastPrefixBytes, at);
  into[at + 23] = 48 + Math.floor(micros / 100);
  into[at + 24] = 48 + (Math.floor(micros / 10) % 10);
  into[at + 25] = 48 + (micros % 10);
}

/** The wire timestamp of `atMs` (epoch ms; a fraction gives the microseconds): a time a caller's clock decided, as the scheduler's. */
export function timestampAt(atMs: number): string {
  const ms = Math.floor(atMs);
  return new Date(ms).toISOString().slice(0, 23) + MICROS[Math.floor((atMs - ms) * 1000) % 1000];
}
