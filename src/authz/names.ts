/** Role, permission and user names (docs/api.md §4): the pattern the JSON Schemas publish too. */
export const NAME_PATTERN = '^[A-Za-z0-9_.:@+|-]{1,128}$';
export const NAME_RULE = '1 to 128 characters of A-Z a-z 0-9 _ - . : @ + |';
/** {@link NAME_PATTERN}, compiled once: `NAME_RE.test(name)` is whether `name` follows the rule. */
export const NAME_RE = new RegExp(NAME_PATTERN);
/** The longest name the rule allows. */
export const MAX_NAME = 128;

/** Per ASCII code: 1 where the rule allows the character. */
const ALLOWED = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:@+|-') ALLOWED[c.charCodeAt(0)] = 1;

/** Whether the character code `c` may appear in a name. */
export function isNameChar(c: number): boolean {
  return c < 128 && ALLOWED[c] === 1;
}

/**
 * Whether `name` follows the rule: {@link NAME_RE}'s answer, from a table of the allowed
 * characters (the hot path checks two names a request; a loop over a table costs a fraction of
 * the regular expression's call).
 */
export function isName(name: string): boolean {
  const n = name.length;
  if (n === 0 || n > MAX_NAME) return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    if (c >= 128 || ALLOWED[c] !== 1) return false;
  }
  return true;
}

/** Which name a value is: the word error messages use for it (`jti`: a token's id, in DELETE /api/token/{jti}). */
export type NameField = 'role' | 'permission' | 'user' | 'workflow' | 'jti';
