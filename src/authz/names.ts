import { appError } from '../errors/index.ts';

/** Role, permission and user names (CONTRACT.md §4): the pattern the JSON Schemas publish too. */
export const NAME_PATTERN = '^[A-Za-z0-9_.:@+|-]{1,128}$';
export const NAME_RULE = '1 to 128 characters of A-Z a-z 0-9 _ - . : @ + |';
const NAME_RE = new RegExp(NAME_PATTERN);

export type NameField = 'role' | 'permission' | 'user';

/**
 * Decodes one raw path segment and checks it against the name rule. The common case (no `%`)
 * allocates nothing beyond the regular-expression test.
 */
export function decodeName(field: NameField, raw: string): string {
  let name = raw;
  if (raw.includes('%')) {
    try {
      name = decodeURIComponent(raw);
    } catch {
      throw appError('ERR_VALIDATION_NAME', `${field} is not valid percent-encoding`);
    }
  }
  if (!NAME_RE.test(name)) {
    throw appError('ERR_VALIDATION_NAME', `${field} must be ${NAME_RULE}`);
  }
  return name;
}

export function isValidName(name: string): boolean {
  return NAME_RE.test(name);
}
