/**
 * Waiting in tests: for the event a test needs, not for a guessed time. A machine under load is
 * slow, not wrong, so a timeout here only turns a hang into a failure, and is generous.
 * `sleep` is for the few waits whose point is that nothing happens meanwhile (each says why it
 * is as long as it is), and for the pause between two polls.
 */
import assert from 'node:assert/strict';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long a wait for an event may take before the test fails. */
export const EVENT_TIMEOUT_MS = 30_000;

export interface WaitOptions {
  /** Fail after this long (default {@link EVENT_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** The pause between two probes (default 50 ms). */
  intervalMs?: number;
  /** A probe that throws is tried again (the last error is named on timeout) instead of failing the wait. */
  retryErrors?: boolean;
}

/**
 * Calls `probe` until it returns something other than undefined, and returns that; fails after the
 * timeout, naming `what` (a function: what it says once the time is up, the last state seen).
 */
export async function waitUntil<T>(what: string | (() => string), probe: () => T | undefined | Promise<T | undefined>, options: WaitOptions = {}): Promise<T> {
  const { timeoutMs = EVENT_TIMEOUT_MS, intervalMs = 50, retryErrors = false } = options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (!retryErrors) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      const waitedFor = typeof what === 'function' ? what() : what;
      assert.fail(`timed out after ${timeoutMs} ms waiting for ${waitedFor}${last === undefined ? '' : ` (last error: ${String(last)})`}`);
    }
    await sleep(intervalMs);
  }
}
