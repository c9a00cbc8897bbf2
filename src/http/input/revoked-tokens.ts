/**
 * The tokens revoked and not yet expired, by jti (docs/api.md §3): this worker's copy, filled at
 * start from the store, by the revocations fanned out to it, and by the periodic look at the store
 * that backs those up. Only a token being verified is looked up here; a key never is. Whoever
 * remembers verified tokens listens ({@link onRevoked}) and forgets a token the moment it is
 * revoked.
 */
export class RevokedTokens {
  /** jti → the token's expiry (ms since the epoch): past it, the token is refused anyway and the entry goes. */
  readonly #until = new Map<string, number>();
  readonly #listeners: Array<(jti: string) => void> = [];

  /** Whether the token `jti` is revoked (and not yet expired). */
  has(jti: string): boolean {
    return this.#until.has(jti);
  }

  /** Records a revocation; the listeners hear of one they did not know. */
  add(jti: string, untilMs: number): void {
    if (this.#until.has(jti) || untilMs <= Date.now()) return;
    this.#until.set(jti, untilMs);
    for (const listener of this.#listeners) listener(jti);
  }

  /** Records every revocation of a read of the store, and forgets the entries that expired meanwhile. */
  addAll(revoked: ReadonlyArray<readonly [string, number]>): void {
    const now = Date.now();
    for (const [jti, until] of this.#until) if (until <= now) this.#until.delete(jti);
    for (const [jti, until] of revoked) this.add(jti, until);
  }

  /** Calls `listener` with the jti of each token revoked from now on. */
  onRevoked(listener: (jti: string) => void): void {
    this.#listeners.push(listener);
  }

  get size(): number {
    return this.#until.size;
  }
}
