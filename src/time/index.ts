/**
 * Timestamps of the wire format: UTC, ISO 8601, exactly six fractional digits, no zone
 * (`2026-11-22T10:51:50.914928`). Built from the monotonic clock anchored to the wall clock once
 * a second (when they drift apart), with the text up to the millisecond reused while the millisecond lasts: the hot path
 * pays a `performance.now()` and a short concatenation.
 */
let anchor = Date.now() - performance.now();
let anchoredAt = performance.now();
let lastMs = -1;
let lastPrefix = '';

const MICROS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** The wire timestamp of now: on every answer, so kept to the monotonic clock and a cached prefix. */
export function timestamp(): string {
  const now = performance.now();
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
  }
  return lastPrefix + MICROS[Math.floor((t - ms) * 1000) % 1000];
}

/** The wire timestamp of `atMs` (epoch ms; a fraction gives the microseconds): a time a caller's clock decided, as the scheduler's. */
export function timestampAt(atMs: number): string {
  const ms = Math.floor(atMs);
  return new Date(ms).toISOString().slice(0, 23) + MICROS[Math.floor((atMs - ms) * 1000) % 1000];
}
