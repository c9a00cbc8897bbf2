import { appError } from '../../errors/index.ts';

/**
 * What a write's `If-Match` header asks (docs/api.md §12.4): nothing (absent), `'any'` (`*`:
 * always matches) or the revision the client must still be at. The service's entity tags are its
 * revisions, sent in `X-Authz-Revision`; a tag is matched strongly, so a weak one (`W/"7"`)
 * cannot match anything and is refused like any other malformed value.
 */
export type IfMatch = number | 'any' | undefined;

/**
 * One strong entity tag whose value is a revision as the service writes it: decimal digits
 * without a leading zero (`"007"` is a tag no revision ever has, so it is refused rather than
 * read as 7). A longer number than any revision is well-formed: it just matches none.
 */
const REVISION_TAG = /^"(0|[1-9]\d*)"$/;

/** HTTP's optional white space around a field value, which parsers may or may not strip. */
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * The `If-Match` header's value (`''` when absent, as the engines give a missing header). Throws
 * 400 ERR_VALIDATION_HEADER naming If-Match for anything but `*` or one quoted revision: weak
 * tags, unquoted numbers, lists, other tags, non-ASCII.
 */
export function parseIfMatch(header: string | undefined): IfMatch {
  if (header === undefined || header === '') return undefined;
  const value = header.replace(OWS, '');
  if (value === '*') return 'any';
  const m = REVISION_TAG.exec(value);
  if (m === null) {
    throw appError('ERR_VALIDATION_HEADER', 'If-Match must be * or one revision as sent in X-Authz-Revision, quoted: "7" (not weak W/"7", not a list)');
  }
  // Beyond any revision a client can reach: one that never matches (412 names the current one).
  return Math.min(Number(m[1]), Number.MAX_SAFE_INTEGER);
}
