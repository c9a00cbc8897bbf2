/**
 * fast-check arbitraries of hostile HTTP requests to the service: paths (random segments, valid
 * and broken percent-encoding, over-long names, unicode, raw UTF-8, dot segments), methods,
 * credentials (missing, wrong scheme, near misses of a real key, JWT-looking garbage, hand-made
 * `alg: none` tokens, UUIDs of other versions), query strings, headers and bodies.
 *
 * Each request says which client it speaks for. Requests with the seeded key are reads, or writes
 * that are certain to be refused (a path name that breaks the name rule, a body that is not an
 * accepted JSON object, or an unknown path): whatever the fuzzer does, that client's data must not
 * change. Valid-looking writes go out only with the scratch keys.
 */
import fc from 'fast-check';
import {
  anyApiRoute,
  anyBody,
  CORE_ROUTES,
  dotPath,
  extraHeaders,
  fill,
  invalidCredential,
  invalidSegment,
  overlongPath,
  paramCount,
  plausibleBody,
  plausibleQuery,
  plausibleSegment,
  query,
  randomPath,
  refusedBody,
  requestId,
  routePath,
  validForms,
  validSegment,
  WRITE_ROUTES,
  type Body,
} from './hostile-parts.ts';

export { PERMISSIONS, PLACEHOLDER, ROLES, USERS } from './hostile-parts.ts';

export type KeyKind = 'seeded' | 'scratch' | 'invalid';

export interface HostileRequest {
  readonly method: string;
  /** Path and query as sent, but for cursors seen before (see {@link PLACEHOLDER}). */
  readonly target: string;
  readonly path: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer | undefined;
  readonly key: KeyKind;
  /** The Authorization value sent, if any. */
  readonly authorization: string | undefined;
  /** False when it is not plain HTTP/1.1: an unusual method, raw non-ASCII or an odd target, a control character in a header. */
  readonly wellFormed: boolean;
  /** A known route with its own method, valid names and an acceptable body: only the credential can fail it. */
  readonly plausible: boolean;
}

// ---- requests ---------------------------------------------------------------------------------

const STANDARD = ['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH'];
const anyMethod = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...STANDARD) },
  { weight: 1, arbitrary: fc.constantFrom('TRACE', 'PROPFIND', 'FOO', 'get', 'post', 'Delete', 'M-SEARCH') },
);
/** Never POST or DELETE, in any case. */
const readMethod = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH') },
  { weight: 1, arbitrary: fc.constantFrom('TRACE', 'PROPFIND', 'FOO', 'get', 'M-SEARCH') },
);

interface Shape {
  readonly method: string;
  readonly path: string;
  readonly body: Body;
  /** Its own query, or undefined for a random one. */
  readonly query?: string | null;
  readonly wellFormedTarget: boolean;
  readonly plausible: boolean;
}

/** Request targets in asterisk-form, absolute-form or none at all (see the fuzz suite's own test of them). */
export const NON_ORIGIN_TARGETS = ['*', 'http://127.0.0.1/ping', 'http://127.0.0.1/api/roles', 'api/roles', ''];
/** Origin-form, but with a fragment, which has no place in a request. */
const ODD_TARGETS = ['/api/roles#frag', '/api/role/admin?limit=1#x', '/#'];

const shape = (method: string, path: string, body: Body, plausible = false): Shape => ({
  method,
  path,
  body,
  wellFormedTarget: !ODD_TARGETS.includes(path),
  plausible,
});

/** Method, path and body of any request at all. */
const anyShape: fc.Arbitrary<Shape> = fc
  .tuple(
    fc.oneof(
      { weight: 8, arbitrary: anyApiRoute },
      { weight: 3, arbitrary: fc.record({ method: anyMethod, path: randomPath }) },
      { weight: 1, arbitrary: fc.record({ method: anyMethod, path: overlongPath }) },
      { weight: 1, arbitrary: fc.record({ method: anyMethod, path: dotPath }) },
      { weight: 1, arbitrary: fc.record({ method: anyMethod, path: fc.constantFrom(...ODD_TARGETS) }) },
    ),
    fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: anyMethod }),
    anyBody,
  )
  .map(([{ method, path }, other, body]) => shape(other ?? method, path, body));

/** A core route called as a client would: its method, names it likely knows, a body it accepts. */
const plausibleShape: fc.Arbitrary<Shape> = fc
  .constantFrom(...CORE_ROUTES)
  .chain(([method, template]) =>
    fc
      .tuple(routePath(template, plausibleSegment, false), plausibleBody(method, template), method === 'GET' ? plausibleQuery : fc.constant(null))
      .map(([path, body, q]) => ({ ...shape(method, path, body, true), query: q })),
  );

/** Shapes safe for the seeded key: reads of anything, and writes certain to be refused. */
const seededShape: fc.Arbitrary<Shape> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(anyShape, readMethod).map(([s, method]) => ({ ...s, method })) },
  { weight: 2, arbitrary: plausibleShape.filter((s) => s.method === 'GET' || s.path === '/api/check') },
  {
    // A name that breaks the rule: refused whatever the rest.
    weight: 2,
    arbitrary: fc.constantFrom(...WRITE_ROUTES.filter(([, t]) => paramCount(t) > 0)).chain(([method, template]) =>
      fc
        .tuple(
          fc.array(fc.oneof(validSegment, invalidSegment), { minLength: paramCount(template), maxLength: paramCount(template) }),
          fc.nat(paramCount(template) - 1),
          invalidSegment,
          anyBody,
        )
        .map(([params, at, bad, body]) =>
          shape(
            method,
            fill(
              template,
              params.map((p, i) => (i === at ? bad : p)),
            ),
            body,
          ),
        ),
    ),
  },
  {
    // Valid names, a body no route accepts.
    weight: 2,
    arbitrary: fc
      .constantFrom(...WRITE_ROUTES)
      .chain(([method, template]) => fc.tuple(routePath(template, validSegment, false), refusedBody).map(([path, body]) => shape(method, path, body))),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('POST', 'DELETE'), fc.array(validSegment, { maxLength: 3 }), anyBody)
      .map(([method, segs, body]) => shape(method, `/api/zz-unknown${segs.map((s) => `/${s.wire}`).join('')}`, body)),
  },
);

function build(
  s: Shape,
  key: KeyKind,
  authorization: string | undefined,
  q: string | null,
  id: string | null,
  extra: ReadonlyArray<readonly [string, string]>,
): HostileRequest {
  const headers: Array<readonly [string, string]> = [];
  if (authorization !== undefined) headers.push(['Authorization', authorization]);
  if (id !== null) headers.push(['X-Request-Id', id]);
  if (s.body.contentType !== undefined) headers.push(['Content-Type', s.body.contentType]);
  headers.push(...(s.plausible ? extra.filter(([k]) => k !== 'x-authz-min-revision') : extra));
  const ownQuery = s.query === undefined ? q : s.query;
  const target = ownQuery === null ? s.path : `${s.path}?${ownQuery}`;
  return {
    method: s.method,
    target,
    path: s.path,
    headers,
    body: s.body.bytes,
    key,
    authorization,
    wellFormed: s.wellFormedTarget && STANDARD.includes(s.method) && !/[^\x21-\x7e]/.test(target) && !headers.some(([, v]) => /(?!\t)\p{Cc}/u.test(v)),
    plausible: s.plausible,
  };
}

/** Hostile requests: with the seeded key (never a change), the scratch keys (anything), or no valid key. */
export function hostileRequest(keys: { readonly seeded: string; readonly scratch: readonly string[] }): fc.Arbitrary<HostileRequest> {
  const rest = fc.tuple(query, requestId, extraHeaders);
  const scratchKey = fc.constantFrom(...keys.scratch).chain(validForms);
  const scratchShape = fc.oneof(anyShape, plausibleShape);
  const invalidShape = fc.oneof({ weight: 3, arbitrary: anyShape }, { weight: 1, arbitrary: plausibleShape });
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(seededShape, validForms(keys.seeded), rest).map(([s, a, [q, id, x]]) => build(s, 'seeded', a, q, id, x)) },
    { weight: 3, arbitrary: fc.tuple(scratchShape, scratchKey, rest).map(([s, a, [q, id, x]]) => build(s, 'scratch', a, q, id, x)) },
    { weight: 3, arbitrary: fc.tuple(invalidShape, invalidCredential(keys.seeded), rest).map(([s, a, [q, id, x]]) => build(s, 'invalid', a, q, id, x)) },
  );
}
