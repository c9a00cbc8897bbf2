/**
 * The audit trail (docs/api.md §11, §3 credentials), black-box against the real service: a row for
 * every authenticated POST and DELETE but `/api/check`, whatever its outcome (a successful write's
 * row commits with the write, with its revision; failed ones follow the answer), tokens' rows
 * naming the token, reads only with AUTH_AUDIT_CHECKS, newest first and paged, scoped to the
 * client. Crashes and retention are in audit-retention.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { RbacClient, type ApiResult } from '../../src/client/index.ts';
import { auditAll, auditPage, expectRow, keyCredential, rid, rowOf, waitForRows, type AuditItem, type Expected } from '../helpers/audit.ts';
import { decodeJwt } from '../helpers/jwt.ts';
import { rememberSecret, startServers, type RunningServer } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';

const SECRET = randomBytes(36).toString('base64url');

let server: RunningServer;
/** The same service with AUTH_AUDIT_CHECKS=true and without a token secret. */
let checking: RunningServer;

before(async () => {
  // Both at once: start-ups are most of this file's time.
  [server, checking] = (await startServers(
    { env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_MAX_BODY_BYTES: '1024', AUTH_WORKERS: '1' } },
    { env: { AUTH_AUDIT_CHECKS: 'true', AUTH_WORKERS: '1' } },
  )) as [RunningServer, RunningServer];
});

after(async () => {
  const codes = await Promise.all([server, checking].map((s) => s?.stop()));
  assert.deepEqual(codes, [0, 0], `exit codes after SIGTERM\n${server?.output().slice(-1000)}\n${checking?.output().slice(-1000)}`);
});

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
    {
      action: 'permission.grant',
      resource: '/api/permission/team%3Aops%40x/docs.write',
      status: 201,
      send: (requestId) => c.grant(role, 'docs.write', { requestId }),
    },
    { action: 'membership.add', resource: '/api/membership/alice/team%3Aops%40x', status: 201, send: (requestId) => c.addMember('alice', role, { requestId }) },
    {
      action: 'permission.revoke',
      resource: '/api/permission/team%3Aops%40x/docs.write',
      status: 200,
      send: (requestId) => c.revoke(role, 'docs.write', { requestId }),
    },
    {
      action: 'membership.remove',
      resource: '/api/membership/alice/team%3Aops%40x',
      status: 200,
      send: (requestId) => c.removeMember('alice', role, { requestId }),
    },
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
  assert.deepEqual(
    rows.map((x) => x.request_id),
    sent.map((s) => s.requestId).reverse(),
    'exactly these rows, newest first',
  );
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
    {
      what: 'grant on a missing role',
      action: 'permission.grant',
      resource: '/api/permission/ghost/p',
      status: 404,
      send: (requestId) => c.grant('ghost', 'p', { requestId }),
    },
    {
      what: 'role exists',
      action: 'role.create',
      resource: '/api/role/taken',
      status: 409,
      send: (requestId) => c.createRole('taken', undefined, { requestId }),
    },
    {
      what: 'bad name (raw path kept)',
      action: 'role.create',
      resource: '/api/role/bad%20name',
      status: 400,
      send: (requestId) => c.request('POST', '/api/role/bad%20name', { requestId }),
    },
    {
      what: 'body without a JSON type',
      action: 'role.create',
      resource: '/api/role/x415',
      status: 415,
      send: (requestId) => c.request('POST', '/api/role/x415', { requestId, rawBody: 'hello', contentType: 'text/plain' }),
    },
    {
      what: 'body over AUTH_MAX_BODY_BYTES',
      action: 'role.create',
      resource: '/api/role/x413',
      status: 413,
      send: (requestId) => c.request('POST', '/api/role/x413', { requestId, body: { description: 'd'.repeat(2000) } }),
    },
    {
      what: 'delete a missing role',
      action: 'role.delete',
      resource: '/api/role/ghost',
      status: 404,
      send: (requestId) => c.deleteRole('ghost', { requestId }),
    },
    {
      what: 'revoke what is not granted',
      action: 'permission.revoke',
      resource: '/api/permission/taken/nope',
      status: 404,
      send: (requestId) => c.revoke('taken', 'nope', { requestId }),
    },
    {
      what: 'add to a missing role',
      action: 'membership.add',
      resource: '/api/membership/bob/ghost',
      status: 404,
      send: (requestId) => c.addMember('bob', 'ghost', { requestId }),
    },
    {
      what: 'remove a non-member',
      action: 'membership.remove',
      resource: '/api/membership/bob/taken',
      status: 404,
      send: (requestId) => c.removeMember('bob', 'taken', { requestId }),
    },
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
  for (const [i, k] of cases.entries())
    expectRow(rowOf(rows, ids[i] as string), { action: k.action, resource: k.resource, status: k.status, credential: cred }, from);
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
  expectRow(
    rowOf(rows, tokenWrites),
    { action: 'role.create', resource: '/api/role/by-token', status: 201, credential: `token:${jtiOf(writeToken)}`, revision: 1 },
    from,
  );
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
    assert.ok(
      a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id),
      `newest first by time, then id: ${all.map((r) => `${r.timestamp}#${r.id}`).join(' ')}`,
    );
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
  assert.ok(
    rowsA.every((r) => r.credential === keyCredential(a.key as string)),
    JSON.stringify(rowsA),
  );
  assert.ok(
    rowsB.every((r) => r.credential === keyCredential(b.key as string)),
    JSON.stringify(rowsB),
  );
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
  for (const [i, read] of reads.entries())
    expectRow(rowOf(rows, ids[i] as string), { action: 'read', resource: read.resource, status: read.status, credential: cred }, from);
  expectRow(rowOf(rows, tokenId), { action: 'token.issue', resource: '/api/token', status: 501, credential: cred }, from);
  expectRow(rowOf(rows, create), { action: 'role.create', resource: '/api/role/r', status: 201, credential: cred, revision: 1 }, from);
  for (const row of rows) {
    if (row.request_id === create) continue;
    assert.equal(row.revision, undefined, `no revision but on a successful write: ${JSON.stringify(row)}`);
    if (row.resource === '/api/audit') assert.equal(row.action, 'read', JSON.stringify(row));
  }
});
