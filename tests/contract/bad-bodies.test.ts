/**
 * Hostile and malformed input (docs/api.md §2-§6): bad percent-encoding, over-long names, unicode,
 * control characters, encoded slashes, malformed, huge and chunked bodies, wrong content types,
 * garbage cursors and limits, bad X-Authz-Min-Revision. Each gets its exact status; afterwards
 * the tenant's stored data and revision are unchanged and the server still answers.
 *
 * The server runs with AUTH_MAX_BODY_BYTES=1024.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startServer, type RunningServer } from '../helpers/server.ts';
import { OpenApiContract } from '../helpers/openapi-contract.ts';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from '../helpers/contract.ts';
import { show } from '../helpers/show.ts';

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const MAX_BODY = 1024;

let server: RunningServer;
/** The seeded tenant every bad request is aimed at. */
let c: RbacClient;
let key: string;
let seeded: Snapshot;
let rev = 0;

interface Snapshot {
  revision: number;
  roles: unknown;
  grants: Record<string, unknown>;
  members: Record<string, unknown>;
  userRoles: Record<string, unknown>;
}

async function snapshot(client: RbacClient): Promise<Snapshot> {
  const roles = await client.listRoles();
  assert.equal(roles.status, 200);
  const revision = Number(roles.headers.get('x-authz-revision'));
  const out: Snapshot = { revision, roles: roles.data, grants: {}, members: {}, userRoles: {} };
  for (const r of roles.data ?? []) {
    out.grants[r.role] = (await client.rolePermissions(r.role)).data;
    out.members[r.role] = (await client.members(r.role)).data;
  }
  for (const u of ['alice@example.com', 'bob', 'carol', 'mallory']) out.userRoles[u] = (await client.userRoles(u)).data;
  return out;
}

async function assertUnchanged(): Promise<void> {
  assert.deepEqual(await snapshot(c), seeded, 'stored data changed');
  assert.equal(server.proc.exitCode, null, 'server exited');
  assert.equal(server.proc.signalCode, null, 'server was killed');
}

let contract: OpenApiContract;

before(async () => {
  server = await startServer({ env: { AUTH_MAX_BODY_BYTES: String(MAX_BODY) } });
  contract = await OpenApiContract.load(server.baseUrl);
  server.observeResponses(contract.observe);
  c = server.client();
  assert.ok(c.key !== undefined);
  key = c.key;
  const ok = (res: ApiResult<unknown>, status: number): void => assert.equal(res.status, status, JSON.stringify(res.body));
  ok(await c.createRole('admin', { description: 'Administrators' }), 201);
  ok(await c.createRole('viewer'), 201);
  ok(await c.grant('admin', 'read'), 201);
  ok(await c.grant('admin', 'write'), 201);
  ok(await c.grant('viewer', 'read'), 201);
  ok(await c.addMember('alice@example.com', 'admin'), 201);
  ok(await c.addMember('bob', 'viewer'), 201);
  seeded = await snapshot(c);
  rev = seeded.revision;
  assert.equal(rev, 7);
});

after(async () => {
  if (server !== undefined) await server.stop();
});

function asRecord(value: unknown): Record<string, unknown> {
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `not an object: ${JSON.stringify(value)}`);
  return value as Record<string, unknown>;
}

function assertTimestamp(ts: unknown): void {
  assert.equal(typeof ts, 'string');
  assert.match(ts as string, TIMESTAMP_RE);
  assert.ok(Math.abs(Date.parse(`${ts as string}Z`) - Date.now()) < 60_000, `timestamp ${ts as string} not close to now`);
}

/**
 * Asserts an error envelope with `status`; `detail` is a text the `error` must contain or a RegExp
 * it must match. For statuses after authentication the revision header must be the seeded one.
 */
function expectErr(res: ApiResult<unknown>, status: number, detail?: string | RegExp, context = ''): void {
  const where = context ? `${context}: ` : '';
  assert.equal(res.status, status, `${where}expected ${status}, got ${show(res)}`);
  const body = asRecord(res.body);
  assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'message', 'success', 'timestamp'], where);
  assert.equal(body.success, false);
  assert.equal(body.code, status);
  assert.equal(body.message, STATUS_TEXT[status], where);
  const error = body.error;
  assert.ok(typeof error === 'string' && error.length > 0, `${where}empty error`);
  assert.doesNotMatch(error, /SQLITE|node_modules|\.ts:\d|\n\s+at /, `${where}error leaks internals: ${error}`);
  assert.ok(!error.toLowerCase().includes(key.toLowerCase()), `${where}error contains the key`);
  assertTimestamp(body.timestamp);
  assert.ok((res.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json'), `${where}content-type`);
  assert.ok((res.headers.get('x-request-id') ?? '').length > 0, `${where}no X-Request-Id`);
  if (typeof detail === 'string') assert.ok(error.includes(detail), `${where}error ${JSON.stringify(error)} does not name ${JSON.stringify(detail)}`);
  else if (detail !== undefined) assert.match(error, detail, where);
  if (status === 400 || status === 413 || status === 415) {
    // Authenticated /api answers carry the tenant's revision, errors included.
    assert.equal(res.headers.get('x-authz-revision'), String(rev), `${where}X-Authz-Revision`);
  }
  if (status === 401) assert.equal(res.headers.get('x-authz-revision'), null, `${where}X-Authz-Revision on 401`);
}

/** A raw HTTP/1.1 exchange over a socket, for requests fetch would normalise or refuse. */
interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

function parseRaw(buf: Buffer): RawResponse | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number((head[0] ?? '').split(' ')[1]);
  const headers = new Map<string, string>();
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  const rest = buf.subarray(end + 4);
  const length = headers.get('content-length');
  if (length !== undefined) {
    const n = Number(length);
    if (rest.length < n) return undefined;
    return { status, headers, body: rest.subarray(0, n).toString('utf8') };
  }
  if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(parts).toString('utf8') };
      if (rest.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  if (status === 204 || status === 304) return { status, headers, body: '' };
  return undefined;
}

/**
 * Sends `head` (request line and headers, without the blank line; Host and Connection: close are
 * added) and `body` in one write, and resolves with the response.
 */
function rawRequest(head: string, body: Array<Buffer | string> = [], timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (err?: Error): void => {
      if (done) return;
      const parsed = parseRaw(received);
      if (parsed === undefined && err === undefined) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (parsed !== undefined) resolve(parsed);
      else reject(new Error(`${err?.message ?? 'no response'}; received ${JSON.stringify(received.toString('latin1').slice(0, 500))}`));
    };
    const timer = setTimeout(() => finish(new Error('timeout')), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      finish();
    });
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error('closed')));
    socket.on('connect', () => {
      const lines = `${head}\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`;
      socket.write(Buffer.concat([Buffer.from(lines, 'utf8'), ...body.map((b) => (typeof b === 'string' ? Buffer.from(b, 'utf8') : b))]));
    });
  });
}

/** A RawResponse seen as an ApiResult, so expectErr applies. */
function asApi(raw: RawResponse): ApiResult<unknown> {
  const headers = new Headers();
  for (const [k, v] of raw.headers) headers.set(k, v);
  let body: unknown;
  try {
    body = raw.body.length > 0 ? JSON.parse(raw.body) : undefined;
  } catch {
    body = undefined;
  }
  const rec = body as { success?: boolean; error?: string } | undefined;
  const revision = headers.get('x-authz-revision');
  return {
    status: raw.status,
    ok: raw.status >= 200 && raw.status < 300,
    headers,
    body: body as ApiResult<unknown>['body'],
    data: undefined,
    error: rec?.success === false ? rec.error : undefined,
    revision: revision === null ? undefined : Number(revision),
    nextCursor: undefined,
    requestId: headers.get('x-request-id'),
  };
}

const auth = (): string => `Authorization: Bearer ${key}`;

/** Routes with the field each name position is validated as: `{x}` is replaced by the bad name. */
const NAME_ROUTES: Array<[string, string, string]> = [
  ['POST', '/api/role/{x}', 'role'],
  ['DELETE', '/api/role/{x}', 'role'],
  ['GET', '/api/permission/{x}/read', 'role'],
  ['GET', '/api/permission/admin/{x}', 'permission'],
  ['POST', '/api/permission/{x}/read', 'role'],
  ['POST', '/api/permission/admin/{x}', 'permission'],
  ['DELETE', '/api/permission/{x}/read', 'role'],
  ['DELETE', '/api/permission/admin/{x}', 'permission'],
  ['GET', '/api/role_permissions/{x}', 'role'],
  ['GET', '/api/membership/{x}/admin', 'user'],
  ['GET', '/api/membership/alice@example.com/{x}', 'role'],
  ['POST', '/api/membership/{x}/admin', 'user'],
  ['POST', '/api/membership/mallory/{x}', 'role'],
  ['DELETE', '/api/membership/{x}/admin', 'user'],
  ['DELETE', '/api/membership/alice@example.com/{x}', 'role'],
  ['GET', '/api/members/{x}', 'role'],
  ['GET', '/api/has_permission/{x}/read', 'user'],
  ['GET', '/api/has_permission/alice@example.com/{x}', 'permission'],
  ['GET', '/api/user_permissions/{x}', 'user'],
  ['GET', '/api/user_roles/{x}', 'user'],
  ['GET', '/api/which_users_can/{x}', 'permission'],
  ['GET', '/api/which_roles_can/{x}', 'permission'],
];

async function expectBadNameEverywhere(segment: string, label: string): Promise<void> {
  for (const [method, template, field] of NAME_ROUTES) {
    const path = template.replace('{x}', segment);
    const res = await c.request(method, path);
    expectErr(res, 400, field, `${label}: ${method} ${path}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

describe('bad names in path segments', () => {
  test('invalid percent-encoding is 400 naming the field', async () => {
    for (const bad of ['%zz', '%', '%4', '%G1', 'a%2', 'ab%', '%%41', '%E0%A4%A', '%C3%28', '%FF', '%C0%AF', '%ED%A0%80', '%F8%88%80%80%80']) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('129 characters (and far more) are 400 naming the field; 128 is fine', async () => {
    await expectBadNameEverywhere('n'.repeat(129), '129 chars');
    await expectBadNameEverywhere('%41'.repeat(129), '129 encoded chars');
    for (const n of [1000, 3000]) {
      const res = await c.request('POST', `/api/role/${'n'.repeat(n)}`);
      expectErr(res, 400, 'role', `${n} chars`);
    }
    const ok = await c.hasPermission('u'.repeat(128), 'p'.repeat(128));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.data, { has_permission: false });
    await assertUnchanged();
  });

  test('non-ASCII (percent-encoded) is 400 naming the field', async () => {
    for (const bad of [
      '%C3%A9', // é
      'caf%C3%A9',
      '%E2%82%AC', // €
      '%F0%9F%98%80', // emoji
      '%EF%BC%A1', // fullwidth A
      '%D0%B0dmin', // Cyrillic a + dmin
      '%E2%80%8B', // zero-width space
      '%C2%A0', // no-break space
      '%EF%BB%BFadmin', // BOM + admin
      'admin%CC%81', // combining accent
    ]) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('raw non-ASCII bytes in the request line are 400 naming the field', async () => {
    for (const [path, field] of [
      ['/api/role/caf\u00e9', 'role'],
      ['/api/role/\u{1F600}', 'role'],
      ['/api/membership/j\u00fcrgen/admin', 'user'],
      ['/api/has_permission/alice@example.com/r\u00e9ad', 'permission'],
    ] as const) {
      const method = path.startsWith('/api/has_permission') ? 'GET' : 'POST';
      const res = asApi(await rawRequest(`${method} ${path} HTTP/1.1\r\n${auth()}`));
      expectErr(res, 400, field, `raw ${path}`);
    }
    await assertUnchanged();
  });

  test('spaces and punctuation outside the allowed set are 400 naming the field', async () => {
    for (const bad of [
      '%20', 'a%20b', '%20admin', 'admin%20', '%22', '%27', '%3C', '%3E', '%2C', '%3B', '%3D', '%26', '%3F',
      '%23', '%25', '%2541', '%5C', '%2A', '%21', '%7E', '%24', '%28', '%5B', '%7B', '%60', '%5E', 'a~b', 'a!b', 'a*b', "a'b", 'a(b)',
    ]) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('control characters are 400 naming the field', async () => {
    for (const bad of ['%00', 'a%00b', 'admin%00', '%01', '%08', '%09', '%0A', '%0D', '%0D%0A', 'a%0D%0AX-Evil:%201', '%1B', '%1F', '%7F', '%C2%85']) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('an encoded slash or backslash inside a segment is 400 naming the field', async () => {
    for (const bad of ['a%2Fb', 'a%2fb', '%2F', '%2Fapi%2Froles', '..%2F..%2Fetc', 'admin%2F', '%2Fadmin', 'a%5Cb']) {
      await expectBadNameEverywhere(bad, bad);
    }
    const raw = asApi(await rawRequest(`POST /api/role/a\\b HTTP/1.1\r\n${auth()}`));
    expectErr(raw, 400, 'role', 'raw backslash');
    await assertUnchanged();
  });

  test('order: a bad name without a valid key is 401; with a wrong method 405; unknown path 404', async () => {
    expectErr(await c.withKey(undefined).request('POST', '/api/role/%zz'), 401);
    expectErr(await c.withKey('Bearer nope').request('DELETE', '/api/membership/a%2Fb/admin'), 401);
    expectErr(await c.request('PUT', '/api/role/%zz'), 405);
    expectErr(await c.withKey(undefined).request('PATCH', '/api/permission/%00/%zz'), 405);
    expectErr(await c.request('GET', '/api/rolez/%zz'), 404);
    await assertUnchanged();
  });
});

// ---------------------------------------------------------------------------------------------
// Bodies
// ---------------------------------------------------------------------------------------------

/** POST targets whose acceptance would change stored data. */
const WRITE_TARGETS = ['/api/role/newrole', '/api/permission/admin/newperm', '/api/membership/mallory/admin'];

describe('bodies', () => {
  test('malformed JSON is 400', async () => {
    const bodies = [
      '{',
      '}',
      '{"description":}',
      '{"description":"a",}',
      "{'description':'a'}",
      '{description:"a"}',
      'nul',
      'undefined',
      'NaN',
      '{"description":"a"} x',
      '{"description":"a"}{}',
      '   ',
      '\n',
      '{"description":"\\x"}',
      '{"description":"a\u0000b"}',
      '{"description":"unterminated}',
      '\u00ef\u00bb\u00bf',
      '{"a":1,,"b":2}',
    ];
    for (const target of ['/api/role/newrole', '/api/permission/admin/newperm', '/api/membership/mallory/admin', '/api/check']) {
      for (const body of bodies) {
        const res = await c.request('POST', target, { rawBody: body, contentType: 'application/json' });
        expectErr(res, 400, undefined, `${target} ${JSON.stringify(body)}`);
      }
    }
    await assertUnchanged();
  });

  test('JSON that is not an object is 400', async () => {
    for (const target of [...WRITE_TARGETS, '/api/check']) {
      for (const body of ['[]', '[{}]', '"x"', '""', '1', '0', '-1.5', 'null', 'true', 'false', '[{"checks":[]}]']) {
        const res = await c.request('POST', target, { rawBody: body, contentType: 'application/json' });
        expectErr(res, 400, undefined, `${target} ${body}`);
      }
    }
    await assertUnchanged();
  });

  test('unknown keys are 400', async () => {
    for (const [target, body] of [
      ['/api/role/newrole', '{"x":1}'],
      ['/api/role/newrole', '{"Description":"a"}'],
      ['/api/role/newrole', '{"description":"a","x":1}'],
      ['/api/role/newrole', '{"role":"other"}'],
      ['/api/role/newrole', '{"__proto__":{"x":1}}'],
      ['/api/role/newrole', '{"constructor":"x"}'],
      ['/api/role/newrole', '{"description":"a","description ":"b"}'],
      ['/api/permission/admin/newperm', '{"x":1}'],
      ['/api/permission/admin/newperm', '{"description":"a"}'],
      ['/api/permission/admin/newperm', '{"__proto__":{}}'],
      ['/api/membership/mallory/admin', '{"x":1}'],
      ['/api/membership/mallory/admin', '{"role":"viewer"}'],
      ['/api/check', '{"checks":[{"user":"a","permission":"b"}],"x":1}'],
      ['/api/check', '{"checks":[{"user":"a","permission":"b","x":1}]}'],
    ] as const) {
      const res = await c.request('POST', target, { rawBody: body, contentType: 'application/json' });
      expectErr(res, 400, undefined, `${target} ${body}`);
    }
    await assertUnchanged();
  });

  test('a description that is not a string is 400 naming description', async () => {
    for (const body of ['{"description":1}', '{"description":null}', '{"description":["a"]}', '{"description":{}}', '{"description":true}']) {
      const res = await c.request('POST', '/api/role/newrole', { rawBody: body, contentType: 'application/json' });
      expectErr(res, 400, 'description', body);
    }
    await assertUnchanged();
  });

  test('deeply nested JSON is 400, not a crash', async () => {
    const bodies = [
      `${'['.repeat(500)}${']'.repeat(500)}`,
      `{"description":${'['.repeat(400)}${']'.repeat(400)}}`,
      `${'{"a":'.repeat(150)}1${'}'.repeat(150)}`,
      `{"checks":${'['.repeat(400)}${']'.repeat(400)}}`,
    ];
    for (const target of ['/api/role/newrole', '/api/check']) {
      for (const body of bodies) {
        assert.ok(Buffer.byteLength(body) <= MAX_BODY);
        const res = await c.request('POST', target, { rawBody: body, contentType: 'application/json' });
        expectErr(res, 400, undefined, `${target} nested`);
      }
    }
    await assertUnchanged();
  });

  test('/api/check bodies: empty, wrong shapes, bad names are 400', async () => {
    const bodies: Array<[string, string | RegExp]> = [
      ['{}', 'checks'],
      ['{"checks":[]}', 'checks'],
      ['{"checks":null}', 'checks'],
      ['{"checks":{}}', 'checks'],
      ['{"checks":"alice"}', 'checks'],
      ['{"checks":[null]}', 'checks'],
      ['{"checks":["alice"]}', 'checks'],
      ['{"checks":[[]]}', 'checks'],
      ['{"checks":[{"user":"a"}]}', /checks|permission/],
      ['{"checks":[{"permission":"a"}]}', /checks|user/],
      ['{"checks":[{"user":"a","permission":1}]}', /checks|permission/],
      ['{"checks":[{"user":"a b","permission":"p"}]}', /checks|user/],
      ['{"checks":[{"user":"","permission":"p"}]}', /checks|user/],
      ['{"checks":[{"user":"a","permission":"p/q"}]}', /checks|permission/],
      ['{"checks":[{"user":"j\u00fcrgen","permission":"p"}]}', /checks|user/],
      ['{"checks":[{"user":"a\\u0000","permission":"p"}]}', /checks|user/],
      [`{"checks":[{"user":"${'u'.repeat(129)}","permission":"p"}]}`, /checks|user/],
    ];
    for (const [body, detail] of bodies) {
      const res = await c.request('POST', '/api/check', { rawBody: body, contentType: 'application/json' });
      expectErr(res, 400, detail, body);
    }
    expectErr(await c.request('POST', '/api/check'), 400, 'checks', 'no body');
    expectErr(await c.request('POST', '/api/check', { rawBody: '', contentType: 'application/json' }), 400, 'checks', 'empty body');
    await assertUnchanged();
  });

  test('a non-empty body without a JSON content type is 415', async () => {
    const body = '{"description":"x"}';
    const types = [
      'text/plain',
      'text/plain;charset=utf-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'application/octet-stream',
      'text/json',
      'application/jsonx',
      'application/json-seq',
      'application/json+xml',
      'application/javascript',
      'json',
      'application',
      'application/',
      '*/*',
      'text/html',
    ];
    for (const target of [...WRITE_TARGETS, '/api/check']) {
      for (const ct of types) {
        const payload = target === '/api/check' ? '{"checks":[{"user":"a","permission":"b"}]}' : target === '/api/role/newrole' ? body : '{}';
        const res = await c.request('POST', target, { rawBody: payload, contentType: ct });
        expectErr(res, 415, undefined, `${target} ${ct}`);
      }
      // Invalid JSON without a JSON type is 415 (content type before parsing).
      expectErr(await c.request('POST', target, { rawBody: 'not json', contentType: 'text/plain' }), 415, undefined, `${target} text`);
    }
    await assertUnchanged();
  });

  test('a non-empty body with no Content-Type header at all is 415', async () => {
    for (const target of WRITE_TARGETS) {
      const body = '{}';
      const res = asApi(await rawRequest(`POST ${target} HTTP/1.1\r\n${auth()}\r\nContent-Length: ${body.length}`, [body]));
      expectErr(res, 415, undefined, target);
    }
    await assertUnchanged();
  });

  test('a body over AUTH_MAX_BODY_BYTES is 413, before content type and JSON checks', async () => {
    const pad = (n: number): string => `{"description":"${'x'.repeat(n - 18)}"}`;
    assert.equal(Buffer.byteLength(pad(MAX_BODY + 1)), MAX_BODY + 1);
    for (const target of WRITE_TARGETS) {
      for (const [body, ct] of [
        [pad(MAX_BODY + 1), 'application/json'],
        [pad(2 * 1024), 'application/json'],
        [pad(8 * 1024), 'application/json'],
        ['x'.repeat(MAX_BODY + 1), 'text/plain'],
        ['{'.repeat(MAX_BODY + 1), 'application/json'],
        [`[${'1,'.repeat(600)}1]`, 'application/json'],
      ] as const) {
        const res = await c.request('POST', target, { rawBody: body, contentType: ct });
        expectErr(res, 413, undefined, `${target} ${body.length} bytes ${ct}`);
      }
    }
    await assertUnchanged();
  });

  test('a body of exactly AUTH_MAX_BODY_BYTES is accepted (on a read)', async () => {
    const base = '{"checks":[{"user":"alice@example.com","permission":"write"}]}';
    const exact = base + ' '.repeat(MAX_BODY - base.length);
    assert.equal(Buffer.byteLength(exact), MAX_BODY);
    const res = await c.request<{ all: boolean }>('POST', '/api/check', { rawBody: exact, contentType: 'application/json' });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.data?.all, true);
    const over = await c.request('POST', '/api/check', { rawBody: `${exact} `, contentType: 'application/json' });
    expectErr(over, 413);
    await assertUnchanged();
  });

  // Over-limit bodies on raw sockets send the head and a little more than the limit in one write,
  // then wait: a server that answers 413 and closes while the client is still sending makes the
  // kernel reset the connection, which can discard the answer before it is read.
  test('a huge declared body (Content-Length 4 MiB, 100 MiB) is 413 at once, and the server survives', async () => {
    for (const size of [4 * 1024 * 1024, 100 * 1024 * 1024]) {
      for (const sent of [0, MAX_BODY + 1, 2 * MAX_BODY]) {
        const t0 = Date.now();
        const res = asApi(
          await rawRequest(`POST /api/role/newrole HTTP/1.1\r\n${auth()}\r\nContent-Type: application/json\r\nContent-Length: ${size}`, [
            Buffer.alloc(sent, 'x'),
          ]),
        );
        expectErr(res, 413, undefined, `Content-Length ${size}, ${sent} bytes sent`);
        assert.ok(Date.now() - t0 < 3000, 'slow 413');
      }
    }
    await assertUnchanged();
  });

  test('chunked bodies: within the limit accepted, over it 413', async () => {
    const frame = (s: string): string => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
    const small = asApi(
      await rawRequest(`POST /api/check HTTP/1.1\r\n${auth()}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked`, [
        frame('{"checks":[{"user":"bob",'),
        frame('"permission":"read"}]}'),
        '0\r\n\r\n',
      ]),
    );
    assert.equal(small.status, 200, JSON.stringify(small.body));
    assert.equal(asRecord(asRecord(small.body).data).all, true);
    const chunks = [frame('{"description":"'), frame('x'.repeat(600)), frame('x'.repeat(600))];
    const res = asApi(await rawRequest(`POST /api/role/newrole HTTP/1.1\r\n${auth()}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked`, chunks));
    expectErr(res, 413, undefined, 'chunked over the limit');
    await assertUnchanged();
  });

  test('order: 401 before body checks; 400 names before body; body before 404/409', async () => {
    const huge = `{"description":"${'x'.repeat(4096)}"}`;
    const anon = c.withKey(undefined);
    // Missing key beats everything after it.
    expectErr(await anon.request('POST', '/api/role/newrole', { rawBody: huge, contentType: 'application/json' }), 401);
    expectErr(await anon.request('POST', '/api/role/newrole', { rawBody: 'x', contentType: 'text/plain' }), 401);
    expectErr(await anon.request('POST', '/api/role/newrole', { rawBody: '{', contentType: 'application/json' }), 401);
    // Unknown path and wrong method beat the body.
    expectErr(await c.request('POST', '/api/rolez/x', { rawBody: huge, contentType: 'application/json' }), 404);
    expectErr(await c.request('PUT', '/api/role/x', { rawBody: huge, contentType: 'application/json' }), 405);
    // A bad name beats the body.
    expectErr(await c.request('POST', '/api/role/%zz', { rawBody: huge, contentType: 'application/json' }), 400, 'role');
    expectErr(await c.request('POST', '/api/role/a%2Fb', { rawBody: 'x', contentType: 'text/plain' }), 400, 'role');
    expectErr(await c.request('POST', '/api/permission/admin/%00', { rawBody: '{', contentType: 'application/json' }), 400, 'permission');
    // The body beats the operation (404 role, 409 exists).
    expectErr(await c.request('POST', '/api/permission/ghost/p', { rawBody: '{"x":1}', contentType: 'application/json' }), 400);
    expectErr(await c.request('POST', '/api/permission/ghost/p', { rawBody: '{', contentType: 'application/json' }), 400);
    expectErr(await c.request('POST', '/api/permission/ghost/p', { rawBody: '{}', contentType: 'text/plain' }), 415);
    expectErr(await c.request('POST', '/api/permission/ghost/p', { rawBody: huge, contentType: 'application/json' }), 413);
    expectErr(await c.request('POST', '/api/membership/u/ghost', { rawBody: '[]', contentType: 'application/json' }), 400);
    expectErr(await c.request('POST', '/api/role/admin', { rawBody: '{"x":1}', contentType: 'application/json' }), 400);
    expectErr(await c.request('POST', '/api/role/admin', { rawBody: '{"description":5}', contentType: 'application/json' }), 400, 'description');
    expectErr(await c.request('POST', '/api/role/admin', { rawBody: huge, contentType: 'application/json' }), 413);
    expectErr(await c.request('POST', '/api/permission/admin/read', { rawBody: '{"x":1}', contentType: 'application/json' }), 400);
    expectErr(await c.request('POST', '/api/membership/alice@example.com/admin', { rawBody: 'x', contentType: 'text/plain' }), 415);
    await assertUnchanged();
  });
});

// ---------------------------------------------------------------------------------------------
// Query and headers
// ---------------------------------------------------------------------------------------------

const LIST_PATHS = [
  '/api/roles',
  '/api/role_permissions/admin',
  '/api/members/admin',
  '/api/user_permissions/alice@example.com',
  '/api/user_roles/alice@example.com',
  '/api/which_users_can/read',
  '/api/which_roles_can/read',
];

describe('query parameters', () => {
  test('bad limit is 400 naming limit', async () => {
    for (const path of LIST_PATHS) {
      for (const bad of ['0', '10001', '-1', 'abc', '1.5', '1e2', '', '99999999999999999999', '0x10', '%00', '1%20']) {
        const res = await c.request('GET', `${path}?limit=${bad}`);
        expectErr(res, 400, 'limit', `${path}?limit=${bad}`);
      }
    }
    await assertUnchanged();
  });

  test('garbage cursors are 400 naming cursor', async () => {
    const forged = `${Buffer.from('admin').toString('base64url')}.${'A'.repeat(22)}`;
    const garbage = ['abc', 'a.b', '.', '..', 'x'.repeat(5000), '%00', 'AAAA.AAAA', forged, '%F0%9F%99%82', 'a%20b', '%7B%22after%22%3A%22a%22%7D', 'null', '0', '-1'];
    for (const path of LIST_PATHS) {
      for (const cursor of garbage) {
        for (const q of [`cursor=${cursor}`, `limit=1&cursor=${cursor}`]) {
          const res = await c.request('GET', `${path}?${q}`);
          expectErr(res, 400, 'cursor', `${path}?${q.slice(0, 60)}`);
        }
      }
    }
    await assertUnchanged();
  });

  test('bad limit or cursor without a valid key is 401', async () => {
    expectErr(await c.withKey(undefined).request('GET', '/api/roles?limit=0'), 401);
    expectErr(await c.withKey(undefined).request('GET', '/api/roles?cursor=garbage'), 401);
  });
});

describe('X-Authz-Min-Revision header', () => {
  test('a value that is not a non-negative integer is 400', async () => {
    for (const bad of ['abc', '-1', '1.5', '1e3', '0x10', '1 2', 'NaN', 'Infinity', '--1', '7a', '1_000']) {
      for (const path of ['/api/roles', '/api/members/admin', '/api/has_permission/bob/read']) {
        const res = await c.request('GET', path, { headers: { 'x-authz-min-revision': bad } });
        expectErr(res, 400, /min-revision/i, `${path} ${JSON.stringify(bad)}`);
      }
      const chk = await c.request('POST', '/api/check', { body: { checks: [{ user: 'bob', permission: 'read' }] }, headers: { 'x-authz-min-revision': bad } });
      expectErr(chk, 400, /min-revision/i, `check ${JSON.stringify(bad)}`);
    }
    expectErr(await c.withKey(undefined).request('GET', '/api/roles', { headers: { 'x-authz-min-revision': 'abc' } }), 401);
    await assertUnchanged();
  });

  test('a value with non-ASCII bytes is 400 (not read as absent or as its ASCII prefix)', async () => {
    // The HTTP parser (uWebSockets) drops leading and trailing bytes >= 0x80 of a header value as if
    // they were white space, so only non-ASCII bytes inside a value reach the service: refused here.
    for (const bad of ['1\u00bd1', '2\u00e90', '0\u00bd0', '1\u00e92']) {
      const t0 = Date.now();
      const res = await c.request('GET', '/api/roles', { headers: { 'x-authz-min-revision': bad } });
      expectErr(res, 400, /min-revision/i, `${JSON.stringify(bad)} after ${Date.now() - t0} ms`);
    }
    await assertUnchanged();
  });

  test('a valid value at or below the revision is answered normally', async () => {
    for (const v of ['0', '1', String(rev)]) {
      const res = await c.request('GET', '/api/roles', { headers: { 'x-authz-min-revision': v } });
      assert.equal(res.status, 200, v);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Afterwards
// ---------------------------------------------------------------------------------------------

describe('afterwards', () => {
  test('stored data and revision are unchanged, the server answers and still accepts writes', async () => {
    await assertUnchanged();
    const ping = await c.ping();
    assert.equal(ping.status, 200);
    const health = await c.health();
    assert.equal(health.status, 200);
    const ready = await c.ready();
    assert.equal(ready.status, 200);
    const other = server.client();
    const created = await other.createRole('still-alive', { description: 'ok' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.data, { role: 'still-alive', description: 'ok', revision: 1 });
    const has = await c.hasPermission('alice@example.com', 'write');
    assert.deepEqual(has.data, { has_permission: true });
    assert.ok(!server.output().toLowerCase().includes(key.toLowerCase()), 'the key appears in the server log');
  });
});

test('every answer to bad input matches /openapi.json: status, body schema and headers', () => {
  assert.ok(contract.checked > 500, `answers checked: ${contract.checked}`);
  assert.deepEqual(contract.violations.slice(0, 40), [], `${contract.violations.length} answers differ from the document`);
});

