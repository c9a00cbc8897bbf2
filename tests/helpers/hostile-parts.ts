/**
 * The pieces of hostile requests (tests/helpers/hostile-requests.ts puts them together): path
 * segments, paths, query strings, credentials, headers and bodies, as fast-check arbitraries.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';

/** The seeded client's names, and more that the fuzzer aims at. */
export const ROLES = ['admin', 'editor', 'viewer', 'ops:deploy', 'a.b-c_d@e+f|g'] as const;
export const PERMISSIONS = ['read', 'write', 'deploy', 'billing:view'] as const;
export const USERS = ['alice@example.com', 'bob', 'carol', 'svc:ci|bot'] as const;

const NAME_RE = /^[A-Za-z0-9_.:@+|-]{1,128}$/;
const NAME_CHARS = [...'ABCXYZabcxyz0189_-.:@+|'];
const API_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/api/roles'],
  ['POST', '/api/role/{}'],
  ['DELETE', '/api/role/{}'],
  ['GET', '/api/permission/{}/{}'],
  ['POST', '/api/permission/{}/{}'],
  ['DELETE', '/api/permission/{}/{}'],
  ['GET', '/api/role_permissions/{}'],
  ['GET', '/api/membership/{}/{}'],
  ['POST', '/api/membership/{}/{}'],
  ['DELETE', '/api/membership/{}/{}'],
  ['GET', '/api/members/{}'],
  ['GET', '/api/has_permission/{}/{}'],
  ['GET', '/api/user_permissions/{}'],
  ['GET', '/api/user_roles/{}'],
  ['GET', '/api/which_users_can/{}'],
  ['GET', '/api/which_roles_can/{}'],
  ['POST', '/api/check'],
  ['POST', '/api/token'],
  ['GET', '/api/changes'],
  ['GET', '/api/audit'],
  ['GET', '/api/workflow/users/{}'],
  ['GET', '/api/workflow/user/{}/can_run/{}'],
  ['POST', '/api/workflow/schedule/{}'],
  ['GET', '/api/workflow/schedules'],
  ['DELETE', '/api/workflow/schedule/{}'],
  ['GET', '/api/workflow/runs/{}'],
];
export const WRITE_ROUTES = API_ROUTES.filter(([m]) => m === 'POST' || m === 'DELETE');

// ---- path segments ----------------------------------------------------------------------------

interface Segment {
  readonly wire: string;
  /** What percent-decoding gives, or undefined when the encoding is broken. */
  readonly decoded: string | undefined;
}

function segment(wire: string): Segment {
  try {
    return { wire, decoded: decodeURIComponent(wire) };
  } catch {
    return { wire, decoded: undefined };
  }
}

const isDot = (s: Segment): boolean => s.decoded === '.' || s.decoded === '..' || s.wire === '.' || s.wire === '..';
const isValidName = (s: Segment): boolean => s.decoded !== undefined && NAME_RE.test(s.decoded);
/** Encodes what would break the request line (or change the path's structure); leaves the rest raw. */
const rawButSafe = (s: string): string => s.replace(/[\s\p{Cc}?#/%\\]/gu, (c) => encodeURIComponent(c));

const poolName = fc.constantFrom<string>(...ROLES, ...PERMISSIONS, ...USERS);
const randomName = fc.string({ unit: fc.constantFrom(...NAME_CHARS), minLength: 1, maxLength: 24 });
const longName = fc.integer({ min: 120, max: 300 }).map((n) => 'x'.repeat(n));
const unicode = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 });
const asciiJunk = fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 16 });
const BAD_PERCENT = ['%', '%%', '%zz', '%4', '%E2%82', '%C0%AF', '%ED%A0%80', '%FF', 'a%2', '%u0041', '%%41'];
const ODD_ENCODED = ['%00', '%2F', '%2f', '%5C', '%20', '%2e%2e', '%2E', '%0d%0a', '%3F', '%23', '%E2%80%AE', '%EF%BB%BF'];

/** Any path segment: mostly names the service knows, then every kind of trouble. */
const anySegment: fc.Arbitrary<Segment> = fc.oneof(
  { weight: 6, arbitrary: poolName.map(segment) },
  { weight: 3, arbitrary: randomName.map(segment) },
  { weight: 1, arbitrary: longName.map(segment) },
  { weight: 2, arbitrary: unicode.map((s) => segment(encodeURIComponent(s))) },
  { weight: 1, arbitrary: unicode.map((s) => segment(rawButSafe(s))) },
  { weight: 2, arbitrary: asciiJunk.map((s) => segment(rawButSafe(s))) },
  { weight: 1, arbitrary: fc.tuple(randomName, fc.constantFrom(...BAD_PERCENT)).map(([a, b]) => segment(a + b)) },
  { weight: 1, arbitrary: fc.constantFrom(...BAD_PERCENT, ...ODD_ENCODED).map(segment) },
  { weight: 1, arbitrary: fc.constantFrom('.', '..', '').map(segment) },
);

/** A segment no service may take as a name (and no dot segment). */
export const invalidSegment = anySegment.filter((s) => !isValidName(s) && !isDot(s) && s.wire !== '');
/** A segment that is a valid name (and not a dot segment): a write with it is up to its body. */
export const validSegment = fc
  .oneof(poolName, randomName)
  .map(segment)
  .filter((s) => !isDot(s));

export function fill(template: string, params: readonly Segment[]): string {
  let i = 0;
  return template.replace(/\{\}/g, () => params[i++]?.wire ?? '');
}
export const paramCount = (template: string): number => template.split('{}').length - 1;

/** A route's path with its parameters from `param`, now and then bent (case, encoding, extra segments). */
export function routePath(template: string, param: fc.Arbitrary<Segment>, bend: boolean): fc.Arbitrary<string> {
  return fc.tuple(fc.array(param, { minLength: paramCount(template), maxLength: paramCount(template) }), fc.nat(19)).map(([params, how]) => {
    const path = fill(template, params);
    if (!bend || how > 3) return path;
    return [path + '/', path.replace('/api/', '/API/'), path.replace('/api/', '/api/%72'), `/${path}`][how] as string;
  });
}

export const anyApiRoute = fc
  .constantFrom(...API_ROUTES)
  .chain(([method, template]) => routePath(template, anySegment, true).map((path) => ({ method, path })));

export const randomPath = fc
  .tuple(fc.constantFrom('', '/api', '/ping', '/health', '/ready', '/version', '/openapi.json'), fc.array(anySegment, { maxLength: 6 }))
  .map(([prefix, segs]) => `${prefix}${segs.map((s) => `/${s.wire}`).join('')}` || '/');

export const overlongPath = fc
  .tuple(fc.constantFrom('/api/role/', '/api/members/', '/api/', '/'), fc.integer({ min: 1000, max: 7000 }), fc.constantFrom('x', 'é', '%41', 'a/'))
  .map(([prefix, n, unit]) => prefix + unit.repeat(Math.ceil(n / Buffer.byteLength(unit))));

export const dotPath = fc
  .tuple(fc.constantFrom('/api/roles', '/api/role/admin', '/ping', '/api/members/admin'), fc.constantFrom('/./', '/../', '/%2e%2e/', '/.%2e/', '//'))
  .map(([path, dots]) => {
    const at = path.indexOf('/', 1);
    return at < 0 ? path + dots : path.slice(0, at) + dots + path.slice(at + 1);
  });

// ---- query, headers ---------------------------------------------------------------------------

/**
 * Stands for the `n`th `next_cursor` the run has seen so far (any client, any route), filled in
 * when the request is sent: cursors of other routes and clients must be refused, never crash.
 */
export const PLACEHOLDER = /\{cursor:(\d+)\}/g;
const seenCursor = fc.nat(1000).map((n) => `{cursor:${n}}`);
const QUERY_VALUES = ['', '0', '1', '-1', '10000', '10001', '1e3', '0x10', '+1', '1.5', '%zz', '%', '99999999999999999999', 'null', '%31', 'é', '%00'];
const queryValue = fc.oneof(fc.constantFrom(...QUERY_VALUES), fc.stringMatching(/^[A-Za-z0-9_.~-]{0,60}$/), fc.base64String({ maxLength: 80 }), seenCursor);
const queryPair = fc
  .tuple(fc.constantFrom('limit', 'cursor', 'since', 'strict', 'limit[]', '', 'x'), queryValue, fc.boolean())
  .map(([k, v, eq]) => (eq ? `${k}=${v.startsWith('{cursor:') ? v : rawButSafe(v).replace(/&/g, '%26')}` : k));
export const query = fc.option(
  fc.array(queryPair, { minLength: 1, maxLength: 4 }).map((pairs) => pairs.join('&')),
  { freq: 2 },
);

const b64url = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** Credentials that must never authenticate: each one 401 wherever authentication is asked. */
export function invalidCredential(seeded: string): fc.Arbitrary<string | undefined> {
  const sub = createHash('sha256').update(seeded).digest('hex');
  const now = 1_800_000_000;
  const mutate = fc
    .tuple(fc.nat(35), fc.constantFrom('g', 'z', '-', ' ', '_', 'G'))
    .map(([i, c]) => seeded.slice(0, i) + c + seeded.slice(i + 1))
    .filter((k) => k !== seeded);
  const noneToken = fc
    .tuple(
      fc.constantFrom('none', 'None', 'NONE', 'nOnE', 'HS512', 'RS256', 'ES256', 'HS256'),
      fc.constantFrom('read', 'write', 'admin'),
      fc.constantFrom('', 'sig', b64url('x'.repeat(32))),
    )
    .map(
      ([alg, scope, sig]) =>
        `${b64url({ alg, typ: 'JWT' })}.${b64url({ sub, scope, iat: now, exp: now + 86400 * 3650, jti: 'fuzz', iss: 'rbac-gateway' })}.${sig}`,
    );
  const jwtGarbage = fc
    .tuple(fc.base64String({ maxLength: 40 }), fc.base64String({ maxLength: 200 }), fc.base64String({ maxLength: 60 }))
    .map(([a, b, c]) => `eyJ${a}.${b}.${c}`.replace(/[+/=]/g, 'A'));
  const wrongVersion = fc.oneof(
    fc.uuid({ version: [1, 2, 3, 5, 6, 7, 8] }),
    fc.tuple(fc.uuid({ version: 4 }), fc.constantFrom('0', '7', 'c', 'f')).map(([u, variant]) => u.slice(0, 19) + variant + u.slice(20)),
    fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
  );
  const token = fc.oneof(
    mutate,
    fc.constantFrom(seeded.slice(0, 35), `${seeded}0`, `{${seeded}}`, `urn:uuid:${seeded}`, seeded.replace(/-/g, ''), `${seeded},${seeded}`),
    noneToken,
    jwtGarbage,
    wrongVersion,
    fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
  );
  return fc.oneof(
    fc.constant(undefined),
    fc.constantFrom(
      '',
      'Bearer',
      'Bearer ',
      'Bearer  ',
      `Basic ${b64url('user:pass')}`,
      `Token ${seeded}`,
      `Bearer-${seeded}`,
      `Bearer\t${seeded}`,
      seeded,
      `Bearer:${seeded}`,
      `Bearerx ${seeded}`,
      `Bearer ${seeded} ${seeded}`,
    ),
    token.map((t) => `Bearer ${t}`),
    fc.tuple(fc.constantFrom('bearer', 'BEARER', 'Basic', 'Digest', 'JWT'), token).map(([s, t]) => `${s} ${t}`),
  );
}

/** The same client key in the forms the contract accepts (scheme in any case, key in any case). */
export const validForms = (key: string): fc.Arbitrary<string> =>
  fc.constantFrom(`Bearer ${key}`, `bearer ${key}`, `BEARER ${key.toUpperCase()}`, `Bearer   ${key}`, `bEaReR ${key}`);

const CONTENT_TYPES = [
  'application/json',
  'APPLICATION/JSON; charset=utf-8',
  'application/vnd.api+json',
  'application/json ; x=y',
  'text/plain',
  'text/json',
  'application/jsonx',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  ';',
  '',
];
const JSON_TYPES = CONTENT_TYPES.slice(0, 4);
const NON_JSON_TYPES = CONTENT_TYPES.slice(4);

export const requestId = fc.option(
  fc.oneof(
    fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 128 }),
    fc.integer({ min: 129, max: 300 }).map((n) => 'r'.repeat(n)),
    fc.constantFrom('a b', 'é', 'id\tx', '"><script>'),
  ),
  { freq: 2 },
);

export const extraHeaders = fc.array(
  fc.oneof(
    fc.tuple(
      fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
      fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map((s) => s.trim()),
    ),
    fc.tuple(fc.constant('x-authz-min-revision'), fc.constantFrom('abc', '-1', '1.0', '9999999999999999', '0', '0x1', '1e2')),
    fc.tuple(fc.constant('origin'), fc.constantFrom('null', 'https://evil.example', 'http://127.0.0.1:1', 'x')),
    fc.tuple(fc.constantFrom('accept', 'accept-encoding', 'cookie', 'x-forwarded-for'), fc.constantFrom('*/*', 'gzip', 'a=b', '1.2.3.4', '')),
  ),
  { maxLength: 3 },
);

// ---- bodies -----------------------------------------------------------------------------------

export interface Body {
  readonly contentType: string | undefined;
  readonly bytes: Buffer | undefined;
}

const anyName = fc.oneof(poolName, randomName, unicode, longName);
const fieldValue = fc.oneof(
  anyName,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(anyName, { maxLength: 3 }),
  fc.constant('👍'.repeat(1025)),
);
const knownKeys = fc.record(
  {
    description: fc.oneof(fieldValue, fc.string({ maxLength: 50 })),
    checks: fc.oneof(
      fc.array(fc.record({ user: fc.oneof(anyName, fieldValue), permission: fc.oneof(anyName, fieldValue) }, { requiredKeys: [] }), { maxLength: 30 }),
      fc.constantFrom(1000, 1001).map((n) => Array.from({ length: n }, (_, i) => ({ user: `u${i}`, permission: 'read' }))),
      fieldValue,
    ),
    scope: fc.oneof(fc.constantFrom('read', 'write', 'admin', ''), fieldValue),
    ttl_seconds: fc.oneof(fc.constantFrom(0, 1, 86400, 86401, -1, 1.5, 1e308), fieldValue),
    interval_seconds: fc.oneof(fc.constantFrom(0, 1, 10, 86400, 86401), fieldValue),
    webhook_url: fc.oneof(fc.constantFrom('http://127.0.0.1:1/hook', 'file:///etc/passwd', 'http://169.254.169.254/'), fieldValue),
  },
  { requiredKeys: [] },
);
const hugeish = fc.integer({ min: 20_000, max: 200_000 }).map((n) => JSON.stringify({ description: 'x'.repeat(n) }));
const notJson = fc.oneof(
  fc.constantFrom('{', '{"a":1,}', "{'a':1}", 'undefined', 'NaN', '\uFEFF{}', '{"description":"x"', '[1,2', '{"a":1}{"b":2}'),
  fc.string({ maxLength: 80 }).map((s) => `{${s}`),
);
const notObject = fc.oneof(
  fc
    .jsonValue({ maxDepth: 2 })
    .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
    .map((v) => JSON.stringify(v)),
);
const withUnknownKey = fc.tuple(knownKeys, fc.jsonValue({ maxDepth: 1 })).map(([o, v]) => JSON.stringify({ ...o, zz_unknown_key: v }));

const text = (contentType: fc.Arbitrary<string | undefined>, body: fc.Arbitrary<string>): fc.Arbitrary<Body> =>
  fc.tuple(contentType, body).map(([ct, b]) => ({ contentType: ct, bytes: Buffer.from(b) }));

/** A body the service must refuse on every route (400 or 415), whatever the path's names. */
export const refusedBody: fc.Arbitrary<Body> = fc.oneof(
  text(fc.constantFrom(undefined, ...NON_JSON_TYPES), fc.oneof(fc.json(), fc.string({ minLength: 1, maxLength: 80 }))),
  text(fc.constantFrom(...JSON_TYPES), fc.oneof(notJson, notObject, withUnknownKey)),
);

export const anyBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ contentType: undefined, bytes: undefined }) },
  {
    weight: 4,
    arbitrary: text(
      fc.constantFrom('application/json'),
      knownKeys.map((o) => JSON.stringify(o)),
    ),
  },
  { weight: 2, arbitrary: text(fc.constantFrom(...CONTENT_TYPES), fc.json({ maxDepth: 3 })) },
  { weight: 2, arbitrary: refusedBody },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(undefined, ...CONTENT_TYPES), fc.uint8Array({ minLength: 1, maxLength: 300 }))
      .map(([ct, b]) => ({ contentType: ct, bytes: Buffer.from(b) })),
  },
  { weight: 1, arbitrary: text(fc.constantFrom(...CONTENT_TYPES), fc.constant('')) },
  { weight: 1, arbitrary: text(fc.constantFrom(...JSON_TYPES), hugeish) },
);

// ---- plausible requests: the right route, method, names and body, so that work gets done ---------

/** Core routes (workflows and audit aside), as [method, template]. */
export const CORE_ROUTES = API_ROUTES.filter(([, t]) => !t.includes('workflow') && t !== '/api/audit');
export const plausibleSegment = fc
  .oneof({ weight: 4, arbitrary: poolName }, { weight: 1, arbitrary: randomName })
  .map(segment)
  .filter((s) => !isDot(s));
const json = (ct: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> => value.map((v) => ({ contentType: ct, bytes: Buffer.from(JSON.stringify(v)) }));
const NONE: Body = { contentType: undefined, bytes: undefined };

/** A body the route accepts, or none. */
export function plausibleBody(method: string, template: string): fc.Arbitrary<Body> {
  if (method !== 'POST') return fc.constant(NONE);
  if (template === '/api/role/{}') return fc.oneof(fc.constant(NONE), json('application/json', fc.record({ description: fc.string({ maxLength: 40 }) })));
  if (template === '/api/check') {
    const item = fc.record({ user: poolName, permission: poolName });
    return json('application/json; charset=utf-8', fc.record({ checks: fc.array(item, { minLength: 1, maxLength: 20 }) }));
  }
  if (template === '/api/token')
    return fc.oneof(
      fc.constant(NONE),
      json('application/json', fc.record({ scope: fc.constantFrom('read', 'write'), ttl_seconds: fc.integer({ min: 1, max: 86400 }) }, { requiredKeys: [] })),
    );
  return fc.constant(NONE);
}

/** Paging and changelog queries as a client would send them, with cursors seen before. */
export const plausibleQuery = fc.option(
  fc.oneof(
    fc.integer({ min: 1, max: 5 }).map((n) => `limit=${n}`),
    fc.tuple(fc.integer({ min: 1, max: 5 }), seenCursor).map(([n, c]) => `limit=${n}&cursor=${c}`),
    seenCursor.map((c) => `cursor=${c}`),
    fc.integer({ min: 0, max: 40 }).map((n) => `since=${n}`),
  ),
  { freq: 3 },
);
