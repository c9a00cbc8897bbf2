import { NAME_RULE, isName, type NameField } from '../../authz/names.ts';
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
