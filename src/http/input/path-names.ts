import { isName, isNameChar, MAX_NAME, NAME_RULE, type NameField } from '../../authz/names.ts';
import type { Spelling } from '../../authz/name-table.ts';
import { appError } from '../../errors/index.ts';

/**
 * Decodes one raw path segment (percent-encoding is the URL's business, so it is done here, not
 * in authz/, which owns only the name rule) and checks it against the name rule. The common case
 * (a valid name without `%`) is one pass over the characters and allocates nothing.
 */
export function decodeName(field: NameField, raw: string): string {
  if (isName(raw)) return raw;
  let name = raw;
  if (raw.includes('%')) {
    try {
      name = decodeURIComponent(raw);
    } catch {
      throw appError('ERR_VALIDATION_NAME', `${field} is not valid percent-encoding`);
    }
  }
  if (!isName(name)) throw appError('ERR_VALIDATION_NAME', `${field} must be ${NAME_RULE}`);
  return name;
}

/** The value of a hexadecimal digit's character code, or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * A path segment decoded into a buffer of its own, for the hot path: a name is looked up from the
 * buffer (`TenantGraph.checkSpelled`) and never becomes a string unless the request leaves the
 * hot path ({@link text}). One per handler, reused by every request (handlers are synchronous).
 */
export class SpelledName implements Spelling {
  readonly codes = new Uint8Array(MAX_NAME);
  length = 0;

  /**
   * Decodes `raw` into the buffer; true exactly when `decodeName` would accept it (percent-escapes
   * of ASCII only, since a name is ASCII). On false, `decodeName` of the same segment says why.
   */
  read(raw: string): boolean {
    const codes = this.codes;
    const n = raw.length;
    let length = 0;
    for (let i = 0; i < n; i++) {
      let c = raw.charCodeAt(i);
      if (c === 37) {
        if (i + 2 >= n) return false;
        const hi = hexDigit(raw.charCodeAt(i + 1));
        const lo = hexDigit(raw.charCodeAt(i + 2));
        if (hi < 0 || lo < 0) return false;
        c = 16 * hi + lo;
        i += 2;
      }
      if (!isNameChar(c) || length === MAX_NAME) return false;
      codes[length++] = c;
    }
    this.length = length;
    return length > 0;
  }

  /** The decoded name as a string. */
  text(): string {
    return String.fromCharCode.apply(null, this.codes.subarray(0, this.length) as unknown as number[]);
  }
}
