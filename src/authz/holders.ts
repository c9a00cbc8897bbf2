import type { PermId, UserId } from './ids.ts';
import { SortedNames } from './sorted.ts';

/** Changes touching more holders than this at once re-sort the list once instead of moving it per holder. */
const BULK = 32;

/**
 * Who holds each permission, kept up to date with every grant and membership: per permission,
 * each holder with the number of its roles that grant it, and the holders' names sorted. So
 * "which users can" and the AuthZEN subject search page through a ready list after any write,
 * instead of gathering and sorting every holder again.
 */
export class HolderIndex {
  readonly #counts: Array<Map<UserId, number> | undefined> = [];
  readonly #names: Array<SortedNames | undefined> = [];
  readonly #nameOf: (u: UserId) => string;
  #entries = 0;

  /** `nameOf`: the user's name (the user must be live while it holds anything). */
  constructor(nameOf: (u: UserId) => string) {
    this.#nameOf = nameOf;
  }

  /** Holder entries over all permissions, for the memory estimate. */
  get entries(): number {
    return this.#entries;
  }

  /** `users` gain (+1) or lose (−1) one role granting `p`. */
  adjust(p: PermId, users: Iterable<UserId>, delta: 1 | -1, howMany: number): void {
    let counts = this.#counts[p];
    let names = this.#names[p];
    if (counts === undefined || names === undefined) {
      counts = this.#counts[p] = new Map();
      names = this.#names[p] = new SortedNames();
    }
    if (howMany > BULK) names.invalidate();
    for (const u of users) {
      const c = (counts.get(u) ?? 0) + delta;
      if (c > 0) {
        if (c === 1) {
          this.#entries++;
          names.add(this.#nameOf(u));
        }
        counts.set(u, c);
      } else if (counts.delete(u)) {
        this.#entries--;
        names.delete(this.#nameOf(u));
      }
    }
  }

  /** The permission is gone (its id may be reused): it has no holders left. */
  drop(p: PermId): void {
    this.#entries -= this.#counts[p]?.size ?? 0;
    this.#counts[p] = undefined;
    this.#names[p] = undefined;
  }

  /** The holders of `p`, sorted. */
  holders(p: PermId): readonly string[] {
    return this.#names[p]?.sorted() ?? [];
  }
}
