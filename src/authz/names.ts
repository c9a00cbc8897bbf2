/** Role, permission and user names (docs/api.md §4): the pattern the JSON Schemas publish too. */
export const NAME_PATTERN = '^[A-Za-z0-9_.:@+|-]{1,128}$';
export const NAME_RULE = '1 to 128 characters of A-Z a-z 0-9 _ - . : @ + |';
/** {@link NAME_PATTERN}, compiled once: `NAME_RE.test(name)` is whether `name` follows the rule. */
export const NAME_RE = new RegExp(NAME_PATTERN);

/** Which name a value is: the word error messages use for it. */
export type NameField = 'role' | 'permission' | 'user' | 'workflow';
