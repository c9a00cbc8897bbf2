/**
 * A circuit breaker: closed while the database answers; open after `threshold` consecutive
 * failures, refusing at once for `cooldownMs`; then half-open, letting one probe through, whose
 * outcome closes or re-opens it. Only failures that say the database is unreachable count; a
 * refusal (404, 409) is the database answering.
 */
export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  readonly threshold: number;
  readonly cooldownMs: number;
  /** Called on every state change (logs, metrics). */
  readonly onChange?: (state: BreakerState, failures: number) => void;
  readonly now?: () => number;
}

export class CircuitBreaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #onChange: (state: BreakerState, failures: number) => void;
  readonly #now: () => number;
  #state: BreakerState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #probing = false;

  constructor(options: BreakerOptions) {
    this.#threshold = options.threshold;
    this.#cooldownMs = options.cooldownMs;
    this.#onChange = options.onChange ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  get state(): BreakerState {
    if (this.#state === 'open' && this.#now() - this.#openedAt >= this.#cooldownMs) this.#set('half-open');
    return this.#state;
  }

  /** Milliseconds until an open circuit lets a probe through (0 when not open). */
  get retryAfterMs(): number {
    return this.state === 'open' ? Math.max(0, this.#cooldownMs - (this.#now() - this.#openedAt)) : 0;
  }

  /**
   * Whether a call may go to the database now. In half-open state only one call at a time (the
   * probe) is let through; the caller must report its outcome with {@link success} or
   * {@link failure} (or {@link release} when it ended without telling either way).
   */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.#probing) return false;
    this.#probing = true;
    return true;
  }

  success(): void {
    this.#probing = false;
    this.#failures = 0;
    if (this.#state !== 'closed') this.#set('closed');
  }

  failure(): void {
    this.#probing = false;
    this.#failures++;
    if (this.#state === 'half-open' || (this.#state === 'closed' && this.#failures >= this.#threshold)) {
      this.#openedAt = this.#now();
      this.#set('open');
    }
  }

  release(): void {
    this.#probing = false;
  }

  #set(state: BreakerState): void {
    this.#state = state;
    this.#onChange(state, this.#failures);
  }
}
