/**
 * JSON of lists of names written straight from the strings: no object per item for a serialiser
 * to walk. Sound only for names, which hold no character JSON would escape (NAME_PATTERN in
 * authz/names.ts: every name is checked against it before it is stored or looked up).
 */

/** `[{"<field>":"<name>"},…]` of `names`. */
export function nameItemsJson(field: string, names: readonly string[]): string {
  if (names.length === 0) return '[]';
  return `[{"${field}":"${names.join(`"},{"${field}":"`)}"}]`;
}

/** One check of POST /api/check, its names already validated by the body schema. */
export interface CheckItem {
  readonly user: string;
  readonly permission: string;
}

/**
 * POST /api/check's data, `{"results":[…],"all":…,"any":…}`, with `decide` answering each check
 * (and counting it) in order.
 */
export function checkResultsJson(checks: readonly CheckItem[], decide: (user: string, permission: string) => boolean): string {
  let all = true;
  let any = false;
  let json = '{"results":[';
  for (let i = 0; i < checks.length; i++) {
    const { user, permission } = checks[i] as CheckItem;
    const allowed = decide(user, permission);
    all &&= allowed;
    any ||= allowed;
    json += `${i === 0 ? '' : ','}{"user":"${user}","permission":"${permission}","has_permission":${allowed}}`;
  }
  return `${json}],"all":${all},"any":${any}}`;
}
