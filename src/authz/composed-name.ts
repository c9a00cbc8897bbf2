import { MAX_NAME } from './names.ts';
import type { Spelling } from './name-table.ts';

/**
 * A name written from parts into a buffer of its own, to be looked up without concatenating
 * strings: AuthZEN's candidate permissions `t:a` and `t:i:a`, made for every evaluation (a
 * concatenation would be flattened by the look-up, two allocations a candidate). Reused: valid
 * until the next {@link compose}.
 */
export class ComposedName implements Spelling {
  readonly codes = new Uint8Array(MAX_NAME);
  length = 0;

  /**
   * Writes `a:b`, or `a:b:c` when `c` is given. False when no stored name can be spelled so (too
   * long, or a character outside ASCII: names are ASCII), and the look-up is then skipped.
   */
  compose(a: string, b: string, c?: string): boolean {
    this.length = 0;
    return this.#append(a) && this.#append(':') && this.#append(b) && (c === undefined || (this.#append(':') && this.#append(c)));
  }

  #append(part: string): boolean {
    const n = part.length;
    let at = this.length;
    if (at + n > MAX_NAME) return false;
    const codes = this.codes;
    for (let i = 0; i < n; i++) {
      const c = part.charCodeAt(i);
      if (c >= 128) return false;
      codes[at++] = c;
    }
    this.length = at;
    return true;
  }
}
