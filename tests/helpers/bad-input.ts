/**
 * The bad-input suites (tests/contract/bad-*.test.ts, docs/api.md §2-§6): one server per file with
 * AUTH_MAX_BODY_BYTES=1024, and one seeded client every bad request is aimed at, whose stored data
 * and revision must never change; the error envelope those answers carry; a raw HTTP/1.1 exchange
 * for requests fetch would normalise or refuse; and the tests that end every such file. `c`, `key`
 * and `rev` are set by the `before` hook {@link badInputServer} registers.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from './contract.ts';
import { answersMatchTheDocument, contractServer, type ContractServer } from './contract-suite.ts';
import { asRecord } from './envelopes.ts';
import type { RunningServer } from './server.ts';
import { show } from './show.ts';
import { EVENT_TIMEOUT_MS } from './wait.ts';

export const MAX_BODY = 1024;

let api: ContractServer;
/** The seeded client every bad request is aimed at, and its key. */
export let c: RbacClient;
export let key: string;
/** The revision of the seeded client, which no bad request may change. */
export let rev = 0;
let seeded: Snapshot;

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

export async function assertUnchanged(): Promise<void> {
  assert.deepEqual(await snapshot(c), seeded, 'stored data changed');
  assert.equal(api.server.proc.exitCode, null, 'server exited');
  assert.equal(api.server.proc.signalCode, null, 'server was killed');
}

/** Registers the file's hooks: the server and the seeded client before its first test, the server stopped after its last. */
export function badInputServer(): void {
  api = contractServer({ env: { AUTH_MAX_BODY_BYTES: String(MAX_BODY) } }, { exitCodeChecked: false, prepare: seed });
}

async function seed(server: RunningServer): Promise<void> {
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
}

/**
 * The last tests of a bad-input file: afterwards the seeded client is unchanged and the server
 * still serves (and never logged the key); every answer it gave matched /openapi.json, more than
 * `atLeast` of them.
 */
export function afterTheBadInput(atLeast: number): void {
  describe('afterwards', () => {
    test('stored data and revision are unchanged, the server answers and still accepts writes', async () => {
      await assertUnchanged();
      const ping = await c.ping();
      assert.equal(ping.status, 200);
      const health = await c.health();
      assert.equal(health.status, 200);
      const ready = await c.ready();
      assert.equal(ready.status, 200);
      const other = api.server.client();
      const created = await other.createRole('still-alive', { description: 'ok' });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(created.data, { role: 'still-alive', description: 'ok', revision: 1 });
      const has = await c.hasPermission('alice@example.com', 'write');
      assert.deepEqual(has.data, { has_permission: true });
      assert.ok(!api.server.output().toLowerCase().includes(key.toLowerCase()), 'the key appears in the server log');
    });
  });

  answersMatchTheDocument('every answer to bad input matches /openapi.json: status, body schema and headers', atLeast);
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
export function expectErr(res: ApiResult<unknown>, status: number, detail?: string | RegExp, context = ''): void {
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
export function rawRequest(head: string, body: Array<Buffer | string> = [], timeoutMs = EVENT_TIMEOUT_MS): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(api.server.port, '127.0.0.1');
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
      const lines = `${head}\r\nHost: 127.0.0.1:${api.server.port}\r\nConnection: close\r\n\r\n`;
      socket.write(Buffer.concat([Buffer.from(lines, 'utf8'), ...body.map((b) => (typeof b === 'string' ? Buffer.from(b, 'utf8') : b))]));
    });
  });
}

/** A RawResponse seen as an ApiResult, so expectErr applies. */
export function asApi(raw: RawResponse): ApiResult<unknown> {
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

export const auth = (): string => `Authorization: Bearer ${key}`;

/** Routes with the field each name position is validated as: `{x}` is replaced by the bad name. */
export const NAME_ROUTES: Array<[string, string, string]> = [
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

export async function expectBadNameEverywhere(segment: string, label: string): Promise<void> {
  for (const [method, template, field] of NAME_ROUTES) {
    const path = template.replace('{x}', segment);
    const res = await c.request(method, path);
    expectErr(res, 400, field, `${label}: ${method} ${path}`);
  }
}
