/** One client's writes: the cohort running now, and the writers waiting for the next one. */
interface Cohort {
  /** Writers may still join the running cohort (until the end of the turn it started in). */
  open: boolean;
  /** Writers of the running cohort that have not left yet. */
  running: number;
  next: Array<() => void>;
}

/**
 * Groups the writes of one client into cohorts. A write that arrives while an earlier cohort of
 * the same client is still being committed and acknowledged by every worker waits, and goes with
 * the writes that arrive meanwhile as the next cohort: one pool task, one transaction, one fan-out
 * message, one acknowledgement for all of them. A write with nothing in flight before it starts at
 * once, so a lone writer waits for nothing; under load the cohorts grow on their own, and the
 * hand-offs a write costs (pool thread, primary, other workers) are shared among more writes.
 */
export class WriteCohorts {
  readonly #clients = new Map<string, Cohort>();

  /** Writes of `key` running or waiting (for tests and diagnostics). */
  pending(key: string): number {
    const c = this.#clients.get(key);
    return c === undefined ? 0 : c.running + c.next.length;
  }

  /**
   * Resolves when the caller may write: at once (undefined) when the client's running cohort is
   * still open or there is none, otherwise when that cohort has left. Every caller must call
   * {@link leave} once its write is done, whatever the outcome.
   */
  enter(key: string): Promise<void> | undefined {
    const c = this.#clients.get(key);
    if (c === undefined) {
      this.#start(key, { open: true, running: 1, next: [] });
      return undefined;
    }
    if (c.open) {
      c.running++;
      return undefined;
    }
    return new Promise((resolve) => c.next.push(resolve));
  }

  /** The caller's write is done (committed and acknowledged, refused, or failed). */
  leave(key: string): void {
    const c = this.#clients.get(key);
    if (c === undefined || --c.running > 0) return;
    if (c.next.length === 0) {
      this.#clients.delete(key);
      return;
    }
    const next = c.next;
    c.next = [];
    c.running = next.length;
    this.#start(key, c);
    for (const go of next) go();
  }

  #start(key: string, c: Cohort): void {
    c.open = true;
    this.#clients.set(key, c);
    // The writes read in this turn of the event loop join; later ones wait for the next cohort.
    // (Writers wait only once the cohort is closed, so a cohort restarted in leave() is never
    // closed early by the end of an earlier turn.)
    setImmediate(() => (c.open = false));
  }
}
