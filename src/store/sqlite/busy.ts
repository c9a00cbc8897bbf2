import { isSqliteBusy } from '../transient.ts';

/** How long a statement keeps retrying while another connection holds the lock. */
const BUSY_TIMEOUT_MS = 5_000;
const BUSY_FIRST_PAUSE_MS = 0.05;
const BUSY_MAX_PAUSE_MS = 2;
const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Runs `fn`, again after a short pause each time it finds the database locked by another
 * connection (SQLITE_BUSY, SQLITE_LOCKED), for at most {@link BUSY_TIMEOUT_MS}; then the last error is thrown
 * (a 503, see store/transient.ts). The pause blocks the calling thread: only pool threads and
 * start-up call this, never an event loop that serves requests. Every role of the SQLite store
 * runs its statements through it (the connection has no busy handler of SQLite's own).
 */
export function whenFree<T>(fn: () => T): T {
  const deadline = performance.now() + BUSY_TIMEOUT_MS;
  for (let pause = BUSY_FIRST_PAUSE_MS; ; pause = Math.min(BUSY_MAX_PAUSE_MS, pause * 2)) {
    try {
      return fn();
    } catch (err) {
      if (!isSqliteBusy(err) || performance.now() + pause > deadline) throw err;
      Atomics.wait(pauseCell, 0, 0, pause);
    }
  }
}
