import { sleep, systemClock, type Clock } from '../../time/clock.ts';

/**
 * Bounded retries with exponential backoff and full jitter, for failures that a second attempt
 * can cure (the database restarted, a lock timed out). Whether a failure qualifies is the
 * caller's decision: retrying anything else would only repeat a refusal or a bug.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included (1: no retry). */
  readonly attempts: number;
  /** Backoff cap of the first retry; doubles for each further one. */
  readonly baseMs: number;
  /** No backoff above this. */
  readonly maxMs: number;
}

/** The backoff of every store retry: 50 ms doubling up to 1 s. */
const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseMs: 50, maxMs: 1000 };

/** The store's retry policy with `attempts` in all (AUTH_DB_RETRY_ATTEMPTS), its backoff the one above. */
export function retryPolicy(attempts: number): RetryPolicy {
  return { ...DEFAULT_RETRY, attempts };
}

/** The delay before retry number `retry` (1-based): uniform in [0, min(max, base * 2^(retry-1))]. */
export function backoffMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** (retry - 1));
  return Math.floor(random() * cap);
}

/**
 * Runs `fn` until it succeeds, throws something `retryable` rejects, or the attempts are used
 * up; the last failure is thrown. `shouldStop` ends the retries early (the circuit opened). The
 * backoff waits on `clock`.
 */
export async function withRetry<T>(
  fn: () => Promise<T>,
  retryable: (err: unknown) => boolean,
  policy: RetryPolicy = DEFAULT_RETRY,
  shouldStop: () => boolean = () => false,
  onRetry: () => void = () => undefined,
  clock: Clock = systemClock,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= policy.attempts || !retryable(err) || shouldStop()) throw err;
      onRetry();
      await sleep(clock, backoffMs(policy, attempt));
    }
  }
}
