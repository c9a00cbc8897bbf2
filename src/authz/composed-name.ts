import { MAX_NAME } from './names.ts';
import type { Spelling } from './name-table.ts';

const SLASH = 0x2f;
const DOT = 0x2e;

/**
 * A name written from parts into a buffer of its own, to be looked up without concatenating
 * strings: AuthZEN's candidate permissions `a`, `t:a` and `t:i:a`, made for every evaluation (a
 * concatenation would be flattened by the look-up, two allocations a candidate). The last part is
 * an action name, in which `/` is written as `.` (docs/authzen.md: MCP's `tools/call` is the
 * permission `tools.call`, since `/` cannot be in a name). Reused: valid until the next
 * {@link compose} or {@link action}.
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
    if (c === undefined) return this.#append(a, false) && this.#append(':', false) && this.#append(b, true);
    return this.#append(a, false) && this.#append(':', false) && this.#append(b, false) && this.#append(':', false) && this.#append(c, true);
  }

  /** Writes the action name `a` alone (the global candidate); false as for {@link compose}. */
  action(a: string): boolean {
    this.length = 0;
    return this.#append(a, true);
  }

  #append(part: string, isAction: boolean): boolean {
    const n = part.length;
    let at = this.length;
    if (at + n > MAX_NAME) return false;
    const codes = this.codes;
    for (let i = 0; i < n; i++) {
      const c = part.charCodeAt(i);
      if (c >= 128) return false;
      codes[at++] = c === SLASH && isAction ? DOT : c;
    }
    this.length = at;
    return true;
  }
}
