import { AppError, errorMessage, fromWire } from '../../errors/index.ts';
import { callOf, type StoreAnswer, type StoreArgs } from '../calls.ts';
import type { PendingWrite, Store, StoreMethod, WriteSettled } from '../port.ts';
import type { CircuitBreaker } from './breaker.ts';
import { DelegatingStore } from './delegating.ts';
import { backoffMs, withRetry, type RetryPolicy } from './retry.ts';
import { sleep, systemClock, type Clock } from '../../time/clock.ts';

/**
 * The database did not answer. Adapters report ERR_STORE_UNAVAILABLE only when the transaction
 * certainly did not commit (so a retry cannot apply a write twice), and ERR_STORE_COMMIT_UNKNOWN
 * when the connection broke while committing (never retried: the write may be in).
 */
function databaseDown(err: unknown): boolean {
  return err instanceof AppError && (err.code === 'ERR_STORE_UNAVAILABLE' || err.code === 'ERR_STORE_COMMIT_UNKNOWN');
}

/**
 * What the error catalogue calls retryable: failed before committing (the database was
 * unreachable, or it aborted a conflicting transaction). An open circuit is not.
 */
function retryable(err: unknown): boolean {
  return err instanceof AppError && err.retryable;
}

/** Refused without asking the database: its circuit is open (ERR_STORE_CIRCUIT_OPEN, a 503). */
export class CircuitOpenError extends AppError {
  constructor(retryAfterMs: number) {
    super('ERR_STORE_CIRCUIT_OPEN', errorMessage('ERR_STORE_CIRCUIT_OPEN', { retryAfterMs }));
  }
}

/**
 * The store as the worker uses it: every call goes through the circuit breaker, and calls that
 * failed before reaching a commit are retried with backoff. While the circuit is open, calls fail
 * at once with 503, so requests for uncached tenants and writes do not queue behind a dead
 * database; cached tenants are answered from memory without coming here.
 */
export class ResilientStore extends DelegatingStore {
  readonly #inner: Store;
  readonly #breaker: CircuitBreaker;
  readonly #retry: RetryPolicy;
  readonly #onRetry: () => void;
  readonly #clock: Clock;

  /** `onRetry`: told each time a call is tried again (the metrics count it); the backoff waits on `clock`. */
  constructor(inner: Store, breaker: CircuitBreaker, retry: RetryPolicy, onRetry: () => void = () => undefined, clock: Clock = systemClock) {
    super();
    this.#inner = inner;
    this.#breaker = breaker;
    this.#retry = retry;
    this.#onRetry = onRetry;
    this.#clock = clock;
  }

  /** 0 closed, 1 half-open, 2 open (the rbac_db_circuit_state gauge). */
  get circuitState(): number {
    const state = this.#breaker.state;
    return state === 'open' ? 2 : state === 'closed' ? 0 : 1;
  }

  /**
   * Whether the circuit is open: true while calls are refused at once without asking the
   * database (then /ready reports the database missing), false while closed or half-open.
   */
  get circuitOpen(): boolean {
    return this.#breaker.state === 'open';
  }

  async #guarded<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.#breaker.tryAcquire()) throw new CircuitOpenError(this.#breaker.retryAfterMs);
    try {
      const value = await fn();
      this.#breaker.success();
      return value;
    } catch (err) {
      if (databaseDown(err)) this.#breaker.failure();
      else this.#breaker.release();
      throw err;
    }
  }

  #call<T>(fn: () => Promise<T>): Promise<T> {
    return withRetry(
      () => this.#guarded(fn),
      retryable,
      this.#retry,
      () => this.#breaker.state === 'open',
      this.#onRetry,
      this.#clock,
    );
  }

  /**
   * A batch of writes through the breaker, tried once: refused at once while the circuit is open;
   * a database failure counts against it. Its caller retries (the write pipeline: see
   * {@link mayRetryWrite}), so that no backoff waits where the caller holds a commit slot.
   */
  override async writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    if (!this.#breaker.tryAcquire()) throw new CircuitOpenError(this.#breaker.retryAfterMs);
    let settled: WriteSettled[];
    try {
      settled = await this.#inner.writeMany(writes);
    } catch (err) {
      if (databaseDown(err)) this.#breaker.failure();
      else this.#breaker.release();
      throw err;
    }
    if (settled.some((s) => !s.ok && databaseDown(fromWire(s.error)))) this.#breaker.failure();
    else this.#breaker.success();
    return settled;
  }

  /**
   * Whether a write whose attempt number `attempt` (1 for the first) failed with `err` may be
   * tried again: the failure says nothing committed, the policy has attempts left, and the
   * circuit is not open (judged now: the failed call may have opened it).
   */
  mayRetryWrite(err: unknown, attempt: number): boolean {
    return retryable(err) && attempt < this.#retry.attempts && this.#breaker.state !== 'open';
  }

  /** Waits the backoff after attempt number `attempt` of a batch of writes, counted as a retry. */
  retryWait(attempt: number): Promise<void> {
    this.#onRetry();
    return sleep(this.#clock, backoffMs(this.#retry, attempt));
  }

  /**
   * Every call but a batch of writes: through the breaker, retried as the policy says. A retry
   * follows only a failure that says nothing committed (ERR_STORE_UNAVAILABLE, a conflict),
   * never ERR_STORE_COMMIT_UNKNOWN; a workflow run or claim repeated after such a failure finds
   * the schedule or delivery as it was.
   */
  protected call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
    return this.#call(() => callOf(this.#inner, method, args));
  }

  override close(): Promise<void> {
    return this.#inner.close();
  }
}
