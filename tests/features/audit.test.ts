/**
 * The audit trail (docs/api.md §11, §3 credentials), black-box against the real
 * service: a row for every authenticated POST and DELETE but `/api/check`, whatever its outcome
 * (a successful write's row commits with the write, with its revision; failed ones follow the
 * answer), reads only with AUTH_AUDIT_CHECKS, newest first and paged, scoped to the client; no
 * acknowledged row lost to SIGKILL of every process; retention deleting old rows. The SQLite-only
 * cases (crash, retention) are skipped when the suite runs on PostgreSQL.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RbacClient, type ApiResult, type PageOptions } from '../../src/client/index.ts';
import { TIMESTAMP_RE } from '../helpers/contract.ts';
import { decodeJwt } from '../helpers/jwt.ts';
import type { AuditRow } from '../../src/client/index.ts';
import { rememberSecret, startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { descendants } from '../helpers/processes.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';
import { sleep } from '../helpers/wait.ts';
import { show } from '../helpers/show.ts';

const ON_POSTGRES = process.env.AUTH_TEST_DATABASE === 'postgresql';
const SQLITE_ONLY = ON_POSTGRES ? 'a SQLite file case: it runs in the SQLite pass' : false;
const SECRET = randomBytes(36).toString('base64url');
/** How long a row recorded after its answer may take to show (batched, ~50 ms on an idle server). */
const AFTER_ANSWER_MS = 2000;

type AuditItem = AuditRow;

let server: RunningServer;
/** The same service with AUTH_AUDIT_CHECKS=true and without a token secret. */
let checking: RunningServer;

before(async () => {
  // Both at once: start-ups are most of this file's time.
  const started = await Promise.allSettled([
    startServer({ env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_MAX_BODY_BYTES: '1024', AUTH_WORKERS: '1' } }),
    startServer({ env: { AUTH_AUDIT_CHECKS: 'true', AUTH_WORKERS: '1' } }),
  ]);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    for (const s of started) if (s.status === 'fulfilled') await s.value.kill();
    throw failed.reason;
  }
  [server, checking] = started.map((s) => (s as PromiseFulfilledResult<RunningServer>).value) as [RunningServer, RunningServer];
});

after(async () => {
  const codes = await Promise.all([server, checking].map((s) => s?.stop()));
  assert.deepEqual(codes, [0, 0], `exit codes after SIGTERM\n${server?.output().slice(-1000)}\n${checking?.output().slice(-1000)}`);
});

// ---- helpers ------------------------------------------------------------------------------------

const rid = (what: string): string => `${what}-${randomUUID()}`;

/** `key:` and the first 12 hex of SHA-256 of the lower-cased key. */
const keyCredential = (key: string): string => `key:${createHash('sha256').update(key.toLowerCase()).digest('hex').slice(0, 12)}`;

function auditPage(c: RbacClient, options: PageOptions = {}): Promise<ApiResult<AuditItem[]>> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.cursor !== undefined) query.set('cursor', options.cursor);
  const qs = query.toString();
  return c.request<AuditItem[]>('GET', qs.length > 0 ? `/api/audit?${qs}` : '/api/audit', options);
}

/** The client's whole trail, newest first, walked in pages. */
function auditAll(c: RbacClient, limit = 1000): Promise<AuditItem[]> {
  return c.all((o) => auditPage(c, o), limit);
}

/** Polls the trail until a row of each request id is there; fails after `timeoutMs`. */
async function waitForRows(c: RbacClient, requestIds: readonly string[], timeoutMs = AFTER_ANSWER_MS): Promise<AuditItem[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await auditAll(c);
    const seen = new Set(rows.map((r) => r.request_id));
    const missing = requestIds.filter((id) => !seen.has(id));
    if (missing.length === 0) return rows;
    if (Date.now() > deadline) {
      assert.fail(`no audit row within ${timeoutMs} ms for ${missing.length} request(s): ${missing.slice(0, 5).join(', ')}\nrows: ${JSON.stringify(rows).slice(0, 1500)}`);
    }
    await sleep(50);
  }
}

/** The one row of `requestId` among `rows`. */
function rowOf(rows: readonly AuditItem[], requestId: string): AuditItem {
  const found = rows.filter((r) => r.request_id === requestId);
  assert.equal(found.length, 1, `rows of request ${requestId}: ${JSON.stringify(found)}`);
  return found[0] as AuditItem;
}

interface Expected {
  action: string;
  resource: string;
  status: number;
  credential: string;
  revision?: number;
}

/** A row with exactly the contract's fields, as expected, recorded between `from` and now. */
function expectRow(row: AuditItem, want: Expected, from: number): void {
  const where = JSON.stringify(row);
  const keys = ['action', 'credential', 'id', 'ip', 'request_id', 'resource', 'status', 'timestamp'];
  if (want.revision !== undefined) keys.push('revision');
  assert.deepEqual(Object.keys(row).sort(), keys.sort(), `fields of ${where} (revision only on a successful write)`);
  assert.ok(Number.isInteger(row.id) && row.id > 0, `id: ${where}`);
  assert.match(row.timestamp, TIMESTAMP_RE, `timestamp: UTC, 6 fractional digits, no zone: ${where}`);
  const at = Date.parse(`${row.timestamp}Z`);
  assert.ok(at >= from - 2000 && at <= Date.now() + 2000, `timestamp ${row.timestamp} is not the time of the request (${new Date(from).toISOString()})`);
  assert.equal(row.action, want.action, `action: ${where}`);
  assert.equal(row.resource, want.resource, `resource: ${where}`);
  assert.equal(row.status, want.status, `status: ${where}`);
  assert.equal(row.credential, want.credential, `credential: ${where}`);
  assert.equal(row.ip, '127.0.0.1', `ip: ${where}`);
  if (want.revision !== undefined) assert.equal(row.revision, want.revision, `revision: ${where}`);
}

/** A client of `on` whose credential is `token`. */
function withToken(on: RunningServer, token: string): RbacClient {
  rememberSecret(token, 'token');
  return new RbacClient({ baseUrl: on.baseUrl, key: token });
}

/** `POST /api/token` as `c`; a token in the answer is remembered for the leak scan. */
async function mint(c: RbacClient, requestId: string, body?: { scope: string }): Promise<ApiResult<{ token: string }>> {
  const res = await c.request<{ token: string }>('POST', '/api/token', body === undefined ? { requestId } : { requestId, body });
  if (typeof res.data?.token === 'string') rememberSecret(res.data.token, 'token');
  return res;
}

const jtiOf = (token: string): string => String(decodeJwt(token).payload.jti);

// ---- writes -------------------------------------------------------------------------------------

test('a successful write of each op has its row at once, with the revision it answered', async () => {
  const key = randomUUID();
  const c = server.client(key);
  const upper = server.client(key.toUpperCase());
  const role = 'team:ops@x';
  const r = '/api/role/team%3Aops%40x';
  const from = Date.now();
  const writes: Array<{ action: string; resource: string; status: number; send: (requestId: string) => Promise<ApiResult<{ revision: number }>> }> = [
    { action: 'role.create', resource: r, status: 201, send: (requestId) => c.createRole(role, { description: 'ops' }, { requestId }) },
    { action: 'permission.grant', resource: '/api/permission/team%3Aops%40x/docs.write', status: 201, send: (requestId) => c.grant(role, 'docs.write', { requestId }) },
    { action: 'membership.add', resource: '/api/membership/alice/team%3Aops%40x', status: 201, send: (requestId) => c.addMember('alice', role, { requestId }) },
    { action: 'permission.revoke', resource: '/api/permission/team%3Aops%40x/docs.write', status: 200, send: (requestId) => c.revoke(role, 'docs.write', { requestId }) },
    { action: 'membership.remove', resource: '/api/membership/alice/team%3Aops%40x', status: 200, send: (requestId) => c.removeMember('alice', role, { requestId }) },
    // The same client through its key in upper case: one client, one credential.
    { action: 'role.delete', resource: r, status: 200, send: (requestId) => upper.deleteRole(role, { requestId }) },
  ];
  const sent: Array<Expected & { requestId: string }> = [];
  for (const [i, w] of writes.entries()) {
    const requestId = rid(`ok-${w.action}`);
    const res = await w.send(requestId);
    assert.equal(res.status, w.status, `${w.action}: ${show(res)}`);
    assert.equal(res.data?.revision, i + 1, `${w.action}: revision; ${show(res)}`);
    assert.equal(res.requestId, requestId, `${w.action}: X-Request-Id echoed`);
    sent.push({ action: w.action, resource: w.resource, status: w.status, credential: keyCredential(key), revision: i + 1, requestId });
  }
  // A write without X-Request-Id: the row carries the one the service generated and returned.
  const again = await c.createRole(role);
  assert.equal(again.status, 201, show(again));
  assert.ok(again.requestId !== null && again.requestId.length > 0, 'a generated X-Request-Id');
  sent.push({ action: 'role.create', resource: r, status: 201, credential: keyCredential(key), revision: 7, requestId: again.requestId });

  // No polling: a successful write's row committed with it, before its answer.
  const rows = await auditAll(c);
  assert.deepEqual(rows.map((x) => x.request_id), sent.map((s) => s.requestId).reverse(), 'exactly these rows, newest first');
  for (const s of sent) expectRow(rowOf(rows, s.requestId), s, from);
  assert.deepEqual(await auditAll(upper), rows, 'the upper-case key reads the same trail');
});

test('failed writes are recorded after their answer, with their status and no revision', async () => {
  const key = randomUUID();
  const c = server.client(key);
  const cred = keyCredential(key);
  const from = Date.now();
  const created = await c.createRole('taken', undefined, { requestId: rid('create') });
  assert.equal(created.status, 201, show(created));
  const cases: Array<{ what: string; action: string; resource: string; status: number; send: (requestId: string) => Promise<ApiResult<unknown>> }> = [
    { what: 'grant on a missing role', action: 'permission.grant', resource: '/api/permission/ghost/p', status: 404, send: (requestId) => c.grant('ghost', 'p', { requestId }) },
    { what: 'role exists', action: 'role.create', resource: '/api/role/taken', status: 409, send: (requestId) => c.createRole('taken', undefined, { requestId }) },
    { what: 'bad name (raw path kept)', action: 'role.create', resource: '/api/role/bad%20name', status: 400, send: (requestId) => c.request('POST', '/api/role/bad%20name', { requestId }) },
    {
      what: 'body without a JSON type', action: 'role.create', resource: '/api/role/x415', status: 415,
      send: (requestId) => c.request('POST', '/api/role/x415', { requestId, rawBody: 'hello', contentType: 'text/plain' }),
    },
    {
      what: 'body over AUTH_MAX_BODY_BYTES', action: 'role.create', resource: '/api/role/x413', status: 413,
      send: (requestId) => c.request('POST', '/api/role/x413', { requestId, body: { description: 'd'.repeat(2000) } }),
    },
    { what: 'delete a missing role', action: 'role.delete', resource: '/api/role/ghost', status: 404, send: (requestId) => c.deleteRole('ghost', { requestId }) },
    { what: 'revoke what is not granted', action: 'permission.revoke', resource: '/api/permission/taken/nope', status: 404, send: (requestId) => c.revoke('taken', 'nope', { requestId }) },
    { what: 'add to a missing role', action: 'membership.add', resource: '/api/membership/bob/ghost', status: 404, send: (requestId) => c.addMember('bob', 'ghost', { requestId }) },
    { what: 'remove a non-member', action: 'membership.remove', resource: '/api/membership/bob/taken', status: 404, send: (requestId) => c.removeMember('bob', 'taken', { requestId }) },
  ];
  const ids: string[] = [];
  for (const k of cases) {
    const requestId = rid(`fail-${k.status}`);
    const res = await k.send(requestId);
    assert.equal(res.status, k.status, `${k.what}: ${show(res)}`);
    assert.equal(res.revision, 1, `${k.what}: X-Authz-Revision unchanged`);
    ids.push(requestId);
  }
  const rows = await waitForRows(c, ids);
  assert.equal(rows.length, cases.length + 1, `one row per request: ${JSON.stringify(rows).slice(0, 1500)}`);
  for (const [i, k] of cases.entries()) expectRow(rowOf(rows, ids[i] as string), { action: k.action, resource: k.resource, status: k.status, credential: cred }, from);
});

test('tokens: issues are token.issue rows; 403s and writes by a token carry token:<jti>', async () => {
  const key = randomUUID();
  const c = server.client(key);
  const from = Date.now();
  const issueW = rid('issue-write');
  const issueR = rid('issue-read');
  const w = await mint(c, issueW);
  const r = await mint(c, issueR, { scope: 'read' });
  assert.equal(w.status, 201, show(w));
  assert.equal(r.status, 201, show(r));
  const writeToken = w.data?.token as string;
  const readToken = r.data?.token as string;
  const byWrite = withToken(server, writeToken);
  const byRead = withToken(server, readToken);

  const readWrites = rid('read-token-writes');
  const denied = await byRead.createRole('nope', undefined, { requestId: readWrites });
  assert.equal(denied.status, 403, `a write with a read token: ${show(denied)}`);
  const tokenMints = rid('token-mints');
  const minted = await mint(byWrite, tokenMints);
  assert.equal(minted.status, 403, `a token minting a token: ${show(minted)}`);
  const tokenWrites = rid('token-writes');
  const ok = await byWrite.createRole('by-token', undefined, { requestId: tokenWrites });
  assert.equal(ok.status, 201, show(ok));

  const rows = await waitForRows(c, [issueW, issueR, readWrites, tokenMints, tokenWrites]);
  assert.equal(rows.length, 5, JSON.stringify(rows).slice(0, 1500));
  const cred = keyCredential(key);
  expectRow(rowOf(rows, issueW), { action: 'token.issue', resource: '/api/token', status: 201, credential: cred }, from);
  expectRow(rowOf(rows, issueR), { action: 'token.issue', resource: '/api/token', status: 201, credential: cred }, from);
  expectRow(rowOf(rows, readWrites), { action: 'role.create', resource: '/api/role/nope', status: 403, credential: `token:${jtiOf(readToken)}` }, from);
  expectRow(rowOf(rows, tokenMints), { action: 'token.issue', resource: '/api/token', status: 403, credential: `token:${jtiOf(writeToken)}` }, from);
  expectRow(rowOf(rows, tokenWrites), { action: 'role.create', resource: '/api/role/by-token', status: 201, credential: `token:${jtiOf(writeToken)}`, revision: 1 }, from);
  const shown = JSON.stringify(rows);
  for (const secret of [key, writeToken, readToken]) assert.ok(!shown.includes(secret), 'no row holds a key or a token');
  assert.deepEqual(await auditAll(byRead), rows, "a read token reads its client's trail");
});

// ---- reading the trail --------------------------------------------------------------------------

test('newest first; limit and cursor walk every row exactly once; a foreign or tampered cursor is 400', async () => {
  const c = server.client();
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const requestId = rid(`page-${i}`);
    assert.equal((await c.createRole(`r${i}`, undefined, { requestId })).status, 201);
    ids.push(requestId);
    if (i % 2 === 0) {
      const conflict = rid(`page-${i}-409`);
      assert.equal((await c.createRole(`r${i}`, undefined, { requestId: conflict })).status, 409);
      ids.push(conflict);
    }
  }
  const all = await waitForRows(c, ids);
  assert.equal(all.length, ids.length);
  for (let i = 1; i < all.length; i++) {
    const [a, b] = [all[i - 1] as AuditItem, all[i] as AuditItem];
    assert.ok(a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id), `newest first by time, then id: ${all.map((r) => `${r.timestamp}#${r.id}`).join(' ')}`);
  }
  const successes = all.filter((r) => r.revision !== undefined).map((r) => r.revision);
  assert.deepEqual(successes, [7, 6, 5, 4, 3, 2, 1], 'successful writes newest first');

  const walked: AuditItem[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  let firstCursor: string | undefined;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10, 'the walk ends');
    const res = await auditPage(c, cursor === undefined ? { limit: 3 } : { limit: 3, cursor });
    assert.equal(res.status, 200, show(res));
    walked.push(...(res.data ?? []));
    sizes.push(res.data?.length ?? 0);
    if (res.nextCursor === undefined) break;
    cursor = res.nextCursor;
    firstCursor ??= cursor;
  }
  const expectedSizes = Array.from({ length: Math.ceil(all.length / 3) }, (_, i) => Math.min(3, all.length - 3 * i));
  assert.deepEqual(sizes, expectedSizes, 'pages of 3, next_cursor on each cut page only');
  assert.deepEqual(walked, all, 'the pages together are the whole trail, once each, in order');
  const exact = await auditPage(c, { limit: all.length });
  assert.equal(exact.nextCursor, undefined, 'a page holding the rest has no next_cursor');
  assert.deepEqual(exact.data, all);

  const other = server.client();
  assert.equal((await other.createRole('mine')).status, 201);
  const foreign = await auditPage(other, { limit: 3, cursor: firstCursor as string });
  assert.equal(foreign.status, 400, `another client's cursor: ${show(foreign)}`);
  const roles = await c.listRoles({ limit: 1 });
  const otherRoute = await auditPage(c, { limit: 3, cursor: roles.nextCursor as string });
  assert.equal(otherRoute.status, 400, `a cursor of /api/roles: ${show(otherRoute)}`);
  const tampered = `${(firstCursor as string).slice(0, -2)}${(firstCursor as string).endsWith('AA') ? 'BB' : 'AA'}`;
  assert.equal((await auditPage(c, { limit: 3, cursor: tampered })).status, 400, 'a tampered cursor');
  for (const limit of [0, 10_001]) assert.equal((await auditPage(c, { limit })).status, 400, `limit=${limit}`);
});

test('reads are not audited by default (GET routes, POST /api/check, GET /api/audit)', async () => {
  const c = server.client();
  const create = rid('create');
  assert.equal((await c.createRole('r', undefined, { requestId: create })).status, 201);
  const reads: Array<(requestId: string) => Promise<ApiResult<unknown>>> = [
    (requestId) => c.listRoles({ requestId }),
    (requestId) => c.hasPermission('alice', 'p', { requestId }),
    (requestId) => c.members('r', { requestId }),
    (requestId) => c.members('ghost', { requestId }),
    (requestId) => c.roleHasPermission('r', 'p', { requestId }),
    (requestId) => c.userRoles('alice', { requestId }),
    (requestId) => c.check([{ user: 'alice', permission: 'p' }], { requestId }),
    (requestId) => c.request('GET', '/api/changes?since=0', { requestId }),
    (requestId) => auditPage(c, { requestId }),
  ];
  for (const read of reads) assert.ok((await read(rid('read'))).status < 500);
  // A failed write after the reads: once its row is there, a row of theirs would be too.
  const barrier = rid('barrier');
  assert.equal((await c.createRole('r', undefined, { requestId: barrier })).status, 409);
  const rows = await waitForRows(c, [barrier]);
  assert.deepEqual(rows.map((r) => r.request_id).sort(), [barrier, create].sort(), `only the writes: ${JSON.stringify(rows)}`);
});

test('the trail is scoped to the client: another key sees none of its rows', async () => {
  const a = server.client();
  const b = server.client();
  const fresh = server.client();
  const mine = { a: [rid('a-ok'), rid('a-409')], b: [rid('b-ok'), rid('b-404')] };
  assert.equal((await a.createRole('same', undefined, { requestId: mine.a[0] as string })).status, 201);
  assert.equal((await b.createRole('same', undefined, { requestId: mine.b[0] as string })).status, 201);
  assert.equal((await a.createRole('same', undefined, { requestId: mine.a[1] as string })).status, 409);
  assert.equal((await b.deleteRole('ghost', { requestId: mine.b[1] as string })).status, 404);
  const rowsA = await waitForRows(a, mine.a);
  const rowsB = await waitForRows(b, mine.b);
  assert.deepEqual(rowsA.map((r) => r.request_id).sort(), [...mine.a].sort());
  assert.deepEqual(rowsB.map((r) => r.request_id).sort(), [...mine.b].sort());
  assert.ok(rowsA.every((r) => r.credential === keyCredential(a.key as string)), JSON.stringify(rowsA));
  assert.ok(rowsB.every((r) => r.credential === keyCredential(b.key as string)), JSON.stringify(rowsB));
  const none = await auditPage(fresh);
  assert.equal(none.status, 200, show(none));
  assert.deepEqual(none.data, [], 'a client that did nothing has an empty trail');
});

test('with AUTH_AUDIT_CHECKS=true, GET routes and POST /api/check are read rows; no secret: token.issue 501', async () => {
  const key = randomUUID();
  const c = checking.client(key);
  const cred = keyCredential(key);
  const from = Date.now();
  const create = rid('create');
  const made = await c.createRole('r', undefined, { requestId: create });
  assert.equal(made.status, 201, show(made));
  const reads: Array<{ resource: string; status: number; send: (requestId: string) => Promise<ApiResult<unknown>> }> = [
    { resource: '/api/roles', status: 200, send: (requestId) => c.listRoles({ limit: 5, requestId }) },
    { resource: '/api/has_permission/alice/p', status: 200, send: (requestId) => c.hasPermission('alice', 'p', { requestId }) },
    { resource: '/api/members/ghost', status: 404, send: (requestId) => c.members('ghost', { requestId }) },
    { resource: '/api/permission/r/p%3Aq', status: 200, send: (requestId) => c.roleHasPermission('r', 'p:q', { requestId }) },
    { resource: '/api/check', status: 200, send: (requestId) => c.check([{ user: 'alice', permission: 'p' }], { requestId }) },
    { resource: '/api/changes', status: 200, send: (requestId) => c.request('GET', '/api/changes?since=0', { requestId }) },
    { resource: '/api/audit', status: 200, send: (requestId) => auditPage(c, { limit: 2, requestId }) },
  ];
  const ids: string[] = [];
  for (const read of reads) {
    const requestId = rid('read');
    const res = await read.send(requestId);
    assert.equal(res.status, read.status, `${read.resource}: ${show(res)}`);
    ids.push(requestId);
  }
  const tokenId = rid('token');
  const token = await mint(c, tokenId);
  assert.equal(token.status, 501, show(token));
  assert.ok(token.error?.includes('AUTH_JWT_SECRET_KEY'), show(token));

  const rows = await waitForRows(c, [...ids, tokenId]);
  for (const [i, read] of reads.entries()) expectRow(rowOf(rows, ids[i] as string), { action: 'read', resource: read.resource, status: read.status, credential: cred }, from);
  expectRow(rowOf(rows, tokenId), { action: 'token.issue', resource: '/api/token', status: 501, credential: cred }, from);
  expectRow(rowOf(rows, create), { action: 'role.create', resource: '/api/role/r', status: 201, credential: cred, revision: 1 }, from);
  for (const row of rows) {
    if (row.request_id === create) continue;
    assert.equal(row.revision, undefined, `no revision but on a successful write: ${JSON.stringify(row)}`);
    if (row.resource === '/api/audit') assert.equal(row.action, 'read', JSON.stringify(row));
  }
});

// ---- durability and retention (SQLite file) -----------------------------------------------------

test('SIGKILL of every process (2 workers) while writes are in flight loses no acknowledged row', { skip: SQLITE_ONLY }, async (t) => {
  const tmp = tempDir('rbac-audit-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '2' } });
  try {
    const key = randomUUID();
    const c = srv.client(key);
    const acked = new Map<string, { role: string; revision: number }>();
    const unexpected: string[] = [];
    let sent = 0;
    let killed = false;
    let victims: number[] = [];
    const deadline = Date.now() + 2000;
    const lane = async (n: number): Promise<void> => {
      for (let i = 0; !killed; i++) {
        const role = `crash-${n}-${i}`;
        const requestId = rid(role);
        sent++;
        let res: ApiResult<{ revision: number }>;
        try {
          res = await c.createRole(role, undefined, { requestId });
        } catch (err) {
          // No answer: the service is gone, or (a failure of its own) dropped a request while running.
          if (!killed) unexpected.push(`${role}: no answer before the kill (${err instanceof Error ? err.message : String(err)})`);
          return;
        }
        if (res.status === 201 && typeof res.data?.revision === 'number') acked.set(requestId, { role, revision: res.data.revision });
        else unexpected.push(`${role}: ${show(res)}`);
        // SIGKILL right after an acknowledgement (no await in between), the other lanes in flight.
        if (!killed && Date.now() >= deadline) {
          killed = true;
          victims = killAll(srv);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, n) => lane(n)));
    if (!killed) {
      killed = true;
      victims = killAll(srv);
    }
    await srv.exited;
    await assertGone(srv, victims);
    assert.deepEqual(unexpected, [], 'every write before the kill succeeds');
    assert.ok(acked.size >= 8, `only ${acked.size} writes acknowledged in 2 s`);
    assert.ok(victims.length >= 2, `the two workers were killed too (found ${victims.length} child processes)`);

    srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
    const back = srv.client(key);
    const rows = await auditAll(back, 500);
    const changes = await back.all((o) => {
      const q = new URLSearchParams({ since: '0', limit: String(o.limit ?? 500) });
      if (o.cursor !== undefined) q.set('cursor', o.cursor);
      return back.request<Array<{ revision: number; op: string; role: string }>>('GET', `/api/changes?${q.toString()}`);
    }, 500);
    t.diagnostic(`${sent} writes sent, ${acked.size} acknowledged, ${changes.length} committed, ${rows.length} audit rows; SIGKILL to the primary and ${victims.length} child processes`);

    for (const [requestId, a] of acked) {
      const row = rowOf(rows, requestId);
      assert.deepEqual(
        { action: row.action, resource: row.resource, status: row.status, revision: row.revision, credential: row.credential },
        { action: 'role.create', resource: `/api/role/${a.role}`, status: 201, revision: a.revision, credential: keyCredential(key) },
        `the row of acknowledged ${a.role}`,
      );
    }
    const written = rows.filter((r) => r.revision !== undefined);
    assert.equal(new Set(rows.map((r) => r.request_id)).size, rows.length, 'one row per request');
    const auditRevisions = written.map((r) => r.revision as number).sort((x, y) => x - y);
    const changeRevisions = changes.map((ch) => ch.revision);
    assert.deepEqual(auditRevisions, changeRevisions, 'the audit rows of successful writes and the changelog have the same revisions');
    assert.deepEqual(changeRevisions, Array.from({ length: changes.length }, (_, i) => i + 1), 'revisions 1..N');
    const byRevision = new Map(changes.map((ch) => [ch.revision, ch]));
    for (const row of written) {
      const ch = byRevision.get(row.revision as number);
      assert.equal(row.action, ch?.op, `row ${JSON.stringify(row)} and change ${JSON.stringify(ch)}`);
      assert.equal(row.resource, `/api/role/${ch?.role ?? ''}`, `row ${JSON.stringify(row)} and change ${JSON.stringify(ch)}`);
    }
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');
  } finally {
    await srv.kill();
    tmp.cleanup();
  }
});

test('AUTH_AUDIT_RETENTION_DAYS=1 deletes older rows (in batches) soon after start and keeps recent ones', { skip: SQLITE_ONLY }, async (t) => {
  const tmp = tempDir('rbac-audit-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
  try {
    const key = randomUUID();
    const recentWrite = rid('recent-write');
    const made = await srv.client(key).createRole('kept', undefined, { requestId: recentWrite });
    assert.equal(made.status, 201, show(made));
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');

    const hash = createHash('sha256').update(key).digest('hex');
    const ago = (ms: number): string => `${new Date(Date.now() - ms).toISOString().slice(0, 23)}000`;
    const DAY = 86_400_000;
    const old = [rid('old-3d'), rid('old-5d')];
    const recentRow = rid('recent-12h');
    const db = new Database(sqlitePath);
    try {
      const insert = prepared(db, 
        `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
         VALUES (?, ?, 'role.create', '/api/role/x', 409, NULL, ?, ?, '127.0.0.1')`,
      );
      db.transaction(() => {
        insert.run(hash, ago(3 * DAY), keyCredential(key), old[0]);
        insert.run(hash, ago(5 * DAY), keyCredential(key), old[1]);
        insert.run(hash, ago(DAY / 2), keyCredential(key), recentRow);
        // Another client's backlog, more than one batch of deletes.
        const other = createHash('sha256').update(randomUUID()).digest('hex');
        for (let i = 0; i < 2500; i++) insert.run(other, ago(3 * DAY + i * 1000), 'key:000000000000', `backlog-${i}`);
      })();
    } finally {
      db.close();
    }

    const starting = Date.now();
    srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1', AUTH_AUDIT_RETENTION_DAYS: '1' } });
    const listening = Date.now();
    const c = srv.client(key);
    const deadline = Date.now() + 12_000;
    let rows = await auditAll(c);
    while (rows.some((r) => old.includes(r.request_id))) {
      assert.ok(Date.now() < deadline, `rows older than 1 day still there 12 s after start: ${JSON.stringify(rows)}`);
      await sleep(250);
      rows = await auditAll(c);
    }
    t.diagnostic(`start-up ${listening - starting} ms; old rows gone ${Date.now() - listening} ms after listening`);
    assert.deepEqual(rows.map((r) => r.request_id).sort(), [recentRow, recentWrite].sort(), 'the recent rows stay');
    // The other client's backlog goes too (the first run keeps going until nothing is left).
    const backlogDeadline = Date.now() + 5000;
    for (;;) {
      const left = countOlderThan(sqlitePath, ago(DAY));
      if (left === 0) break;
      assert.ok(Date.now() < backlogDeadline, `${left} rows older than 1 day left in the table`);
      await sleep(250);
    }
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');
    const db2 = new Database(sqlitePath, { readonly: true });
    try {
      assert.equal((prepared(db2, 'SELECT count(*) AS n FROM audit').get() as { n: number }).n, 2, 'only the two recent rows are left');
    } finally {
      db2.close();
    }
  } finally {
    await srv.kill();
    tmp.cleanup();
  }
});

// ---- process helpers ----------------------------------------------------------------------------


/** SIGKILL to the workers and the primary, all in one synchronous step; returns the workers' pids. */
function killAll(srv: RunningServer): number[] {
  const primary = srv.proc.pid as number;
  const workers = descendants(primary);
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  srv.proc.kill('SIGKILL');
  return workers;
}

/** Every killed process is gone and nothing answers on the service's port any more. */
async function assertGone(srv: RunningServer, pids: readonly number[]): Promise<void> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const alive = pids.filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return !/^\d+ \(.*\) Z/.test(stat);
      } catch {
        return false;
      }
    });
    let answers = false;
    try {
      const res = await fetch(`${srv.baseUrl}/ping`, { signal: AbortSignal.timeout(500) });
      await res.text();
      answers = true;
    } catch {
      answers = false;
    }
    if (alive.length === 0 && !answers) return;
    assert.ok(Date.now() < deadline, `after SIGKILL: processes ${alive.join(', ') || 'none'} alive, port ${answers ? 'answers' : 'closed'}`);
    await sleep(100);
  }
}

/** Rows of the audit table older than `at`, read straight from the file. */
function countOlderThan(sqlitePath: string, at: string): number {
  const db = new Database(sqlitePath, { readonly: true });
  try {
    return (prepared(db, 'SELECT count(*) AS n FROM audit WHERE at < ?').get(at) as { n: number }).n;
  } finally {
    db.close();
  }
}
