/**
 * The typed client's timed access, batches, previews and preconditions (docs/api.md §12,
 * src/client/): first what it puts on the wire, seen by a loopback receiver (windows as RFC 3339,
 * `If-Match: "R"`, the batch body, the paging queries); then each new method against the real
 * server, every answer held to its /openapi.json like the contract suites.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { RbacClient, rfc3339, type ApiResult, type ChangeRow } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectErr, expectOk, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import { SECRET } from '../helpers/tokens.ts';

// ---------------------------------------------------------------------------------------------
// What the client sends
// ---------------------------------------------------------------------------------------------

interface Seen {
  method: string;
  url: string;
  ifMatch: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

/** A receiver that records each request and answers an empty success envelope; `take` hands them out oldest first. */
function receiver(): { start(): Promise<RbacClient>; stop(): Promise<void>; take(): Seen } {
  const seen: Seen[] = [];
  let server: Server | undefined;
  return {
    async start() {
      server = createServer((req, res) => {
        let text = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => (text += chunk));
        req.on('end', () => {
          const ifMatch = req.headers['if-match'];
          const contentType = req.headers['content-type'];
          seen.push({ method: req.method ?? '', url: req.url ?? '', ifMatch, contentType, body: text.length > 0 ? JSON.parse(text) : undefined });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true,"code":200,"message":"OK","data":{}}');
        });
      });
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      return new RbacClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: 'k' });
    },
    async stop() {
      await new Promise((resolve) => server?.close(resolve));
    },
    take() {
      const first = seen.shift();
      assert.ok(first !== undefined, 'no request seen');
      return first;
    },
  };
}

describe('what the client sends', () => {
  const wire = receiver();
  let c: RbacClient;
  before(async () => (c = await wire.start()));
  after(() => wire.stop());

  test('grant and addMember send a window as RFC 3339 (a Date in UTC, a string as written), and no body without one', async () => {
    await c.grant('ops', 'deploy', { notBefore: new Date(Date.UTC(2027, 0, 2, 3, 4, 5, 6)), expiresAt: '2027-01-03T00:00:00+01:00' });
    assert.deepEqual(wire.take(), {
      method: 'POST',
      url: '/api/permission/ops/deploy',
      ifMatch: undefined,
      contentType: 'application/json',
      body: { not_before: '2027-01-02T03:04:05.006Z', expires_at: '2027-01-03T00:00:00+01:00' },
    });
    await c.addMember('a@b', 'ops', { expiresAt: '2027-01-03T00:00:00Z' });
    assert.deepEqual(wire.take().body, { expires_at: '2027-01-03T00:00:00Z' });
    await c.grant('ops', 'deploy');
    await c.addMember('a@b', 'ops', {});
    for (const seen of [wire.take(), wire.take()]) assert.deepEqual([seen.method, seen.contentType, seen.body], ['POST', undefined, undefined]);
  });

  test('putGrant and putMembership always send the window: {} makes the edge permanent', async () => {
    await c.putGrant('ops', 'deploy');
    assert.deepEqual(wire.take(), { method: 'PUT', url: '/api/permission/ops/deploy', ifMatch: undefined, contentType: 'application/json', body: {} });
    await c.putMembership('a b', 'ops', { notBefore: '2027-01-01T00:00:00Z', ifMatch: 4 });
    assert.deepEqual(wire.take(), {
      method: 'PUT',
      url: '/api/membership/a%20b/ops',
      ifMatch: '"4"',
      contentType: 'application/json',
      body: { not_before: '2027-01-01T00:00:00Z' },
    });
  });

  test('ifMatch goes out as an entity tag "R", or *, on every write method', async () => {
    const writes: Array<[string, () => Promise<ApiResult<unknown>>]> = [
      ['POST /api/role/r', () => c.createRole('r', undefined, { ifMatch: 0 })],
      ['DELETE /api/role/r', () => c.deleteRole('r', { ifMatch: 0 })],
      ['POST /api/permission/r/p', () => c.grant('r', 'p', { ifMatch: 0 })],
      ['PUT /api/permission/r/p', () => c.putGrant('r', 'p', { ifMatch: 0 })],
      ['DELETE /api/permission/r/p', () => c.revoke('r', 'p', { ifMatch: 0 })],
      ['POST /api/membership/u/r', () => c.addMember('u', 'r', { ifMatch: 0 })],
      ['PUT /api/membership/u/r', () => c.putMembership('u', 'r', { ifMatch: 0 })],
      ['DELETE /api/membership/u/r', () => c.removeMember('u', 'r', { ifMatch: 0 })],
      ['POST /api/writes', () => c.writes([{ op: 'role.delete', role: 'r' }], { ifMatch: 0 })],
    ];
    for (const [what, write] of writes) {
      await write();
      const seen = wire.take();
      assert.equal(`${seen.method} ${seen.url}`, what);
      assert.equal(seen.ifMatch, '"0"', what);
    }
    await c.writes([{ op: 'role.delete', role: 'r' }], { ifMatch: '*' });
    assert.equal(wire.take().ifMatch, '*');
    await c.deleteRole('r');
    assert.equal(wire.take().ifMatch, undefined);
  });

  test('writes and dryRun send {"writes":[…]} as given, dates as RFC 3339', async () => {
    const until = new Date(Date.UTC(2027, 5, 1));
    const batch = [
      { op: 'role.create', role: 'r', description: 'd' },
      { op: 'permission.grant', role: 'r', permission: 'p', expires_at: until },
      { op: 'membership.add', user: 'u', role: 'r', not_before: '2027-05-01T00:00:00Z' },
      { op: 'membership.remove', user: 'v', role: 'r' },
    ] as const;
    const sent = {
      writes: [
        { op: 'role.create', role: 'r', description: 'd' },
        { op: 'permission.grant', role: 'r', permission: 'p', expires_at: '2027-06-01T00:00:00.000Z' },
        { op: 'membership.add', user: 'u', role: 'r', not_before: '2027-05-01T00:00:00Z' },
        { op: 'membership.remove', user: 'v', role: 'r' },
      ],
    };
    await c.writes(batch);
    assert.deepEqual(wire.take(), { method: 'POST', url: '/api/writes', ifMatch: undefined, contentType: 'application/json', body: sent });
    await c.dryRun(batch);
    assert.deepEqual(wire.take(), { method: 'POST', url: '/api/dry-run', ifMatch: undefined, contentType: 'application/json', body: sent });
  });

  test('windows and changes page with limit and cursor', async () => {
    await c.windows({ limit: 2, cursor: 'c1' });
    assert.equal(wire.take().url, '/api/windows?limit=2&cursor=c1');
    await c.windows();
    assert.equal(wire.take().url, '/api/windows');
    await c.changes(3, { limit: 2 });
    assert.equal(wire.take().url, '/api/changes?since=3&limit=2');
    await c.changes();
    assert.equal(wire.take().url, '/api/changes');
  });

  test('rfc3339 refuses an invalid Date rather than send it', () => {
    assert.throws(() => rfc3339(new Date(Number.NaN)), RangeError);
    assert.equal(rfc3339('2027-01-01T00:00:00.123456-05:00'), '2027-01-01T00:00:00.123456-05:00');
  });
});

// ---------------------------------------------------------------------------------------------
// Against the real server
// ---------------------------------------------------------------------------------------------

const api = contractServer({ env: { AUTH_JWT_SECRET_KEY: SECRET } });
const { fresh } = api;

const HOUR = 3_600_000;
/** A time `ms` from now, to the millisecond. */
const fromNow = (ms: number): Date => new Date(Date.now() + ms);
/** How the service echoes a time: UTC, six fractional digits, `Z`. */
const echoed = (t: Date): string => t.toISOString().replace(/Z$/, '000Z');

/** The client's change feed after `since`, whole. */
async function changesSince(c: RbacClient, since: number): Promise<ChangeRow[]> {
  return c.all((page) => c.changes(since, page), 100);
}

describe('timed access through the client', () => {
  test('grant and addMember with a window: answered in UTC, pending until not_before, active until expires_at', async () => {
    const c = fresh();
    expectOk(await c.createRole('ops'), 201);
    const from = fromNow(HOUR);
    const granted = await c.grant('ops', 'deploy', { notBefore: from, expiresAt: '2030-01-01T01:30:00+01:30' });
    assert.deepEqual(expectOk(granted, 201), {
      role: 'ops',
      permission: 'deploy',
      revision: 2,
      not_before: echoed(from),
      expires_at: '2030-01-01T00:00:00.000000Z',
    });
    assert.deepEqual(expectOk(await c.roleHasPermission('ops', 'deploy')), {
      has_permission: false,
      not_before: echoed(from),
      expires_at: '2030-01-01T00:00:00.000000Z',
    });
    expectOk(await c.grant('ops', 'read'), 201);
    const until = fromNow(HOUR);
    assert.deepEqual(expectOk(await c.addMember('alice', 'ops', { expiresAt: until }), 201), {
      user: 'alice',
      role: 'ops',
      revision: 4,
      expires_at: echoed(until),
    });
    assert.deepEqual(expectOk(await c.isMember('alice', 'ops')), { is_member: true, expires_at: echoed(until) });
    assert.deepEqual(expectOk(await c.members('ops')), [{ user: 'alice', expires_at: echoed(until) }]);
    assert.deepEqual(expectOk(await c.userRoles('alice')), [{ role: 'ops', expires_at: echoed(until) }]);
    assert.deepEqual(expectOk(await c.rolePermissions('ops')), [{ name: 'read' }], 'the pending grant is not listed');
    assert.deepEqual(expectOk(await c.userPermissions('alice')), [{ name: 'read' }]);
    assert.deepEqual(expectOk(await c.hasPermission('alice', 'deploy')), { has_permission: false });
    expectErr(await c.grant('ops', 'deploy'), 409, 'deploy', 'a pending grant exists');
    expectErr(await c.addMember('bob', 'ops', { notBefore: until, expiresAt: from }), 400, 'expires_at');
  });

  test('putGrant and putMembership create (201), replace the window (200), {} makes permanent; the feed names each', async () => {
    const c = fresh();
    expectOk(await c.createRole('ops'), 201);
    const until = fromNow(HOUR);
    assert.deepEqual(expectOk(await c.putMembership('bob', 'ops'), 201), { user: 'bob', role: 'ops', revision: 2 });
    assert.deepEqual(expectOk(await c.putMembership('bob', 'ops', { expiresAt: until }), 200), {
      user: 'bob',
      role: 'ops',
      revision: 3,
      expires_at: echoed(until),
    });
    assert.deepEqual(expectOk(await c.putMembership('bob', 'ops'), 200), { user: 'bob', role: 'ops', revision: 4 });
    assert.deepEqual(expectOk(await c.putGrant('ops', 'deploy', { expiresAt: until }), 201), {
      role: 'ops',
      permission: 'deploy',
      revision: 5,
      expires_at: echoed(until),
    });
    assert.deepEqual(expectOk(await c.putGrant('ops', 'deploy'), 200), { role: 'ops', permission: 'deploy', revision: 6 });
    expectErr(await c.putGrant('ghost', 'deploy'), 404, 'ghost');
    const ops = (await changesSince(c, 1)).map((row) => [row.revision, row.op, row.expires_at ?? null]);
    assert.deepEqual(ops, [
      [2, 'membership.add', null],
      [3, 'membership.window', echoed(until)],
      [4, 'membership.window', null],
      [5, 'permission.grant', echoed(until)],
      [6, 'permission.window', null],
    ]);
  });

  test('windows() lists the edges with a boundary ahead, by that boundary, page by page', async () => {
    const c = fresh();
    expectOk(await c.createRole('ops'), 201);
    const [t1, t2, t3] = [fromNow(HOUR), fromNow(2 * HOUR), fromNow(3 * HOUR)];
    expectOk(await c.addMember('carol', 'ops', { expiresAt: t3 }), 201);
    expectOk(await c.grant('ops', 'deploy', { notBefore: t2 }), 201);
    expectOk(await c.addMember('bob', 'ops', { notBefore: t1, expiresAt: t3 }), 201);
    expectOk(await c.addMember('dave', 'ops'), 201);
    const all = await c.all((page) => c.windows(page), 1);
    assert.deepEqual(all, [
      { kind: 'membership', role: 'ops', user: 'bob', not_before: echoed(t1), expires_at: echoed(t3) },
      { kind: 'permission', role: 'ops', permission: 'deploy', not_before: echoed(t2) },
      { kind: 'membership', role: 'ops', user: 'carol', expires_at: echoed(t3) },
    ]);
    assert.deepEqual(expectOk(await c.windows()), all);
  });
});

describe('batches and previews through the client', () => {
  test('writes(): every write at one new revision, or none with the failing item named', async () => {
    const c = fresh();
    const until = fromNow(HOUR);
    const done = await c.writes([
      { op: 'role.create', role: 'auditor' },
      { op: 'permission.grant', role: 'auditor', permission: 'reports.read' },
      { op: 'membership.add', user: 'carol', role: 'auditor', expires_at: until },
    ]);
    assert.deepEqual(expectOk(done), {
      revision: 1,
      results: [
        { role: 'auditor', description: '', revision: 1 },
        { role: 'auditor', permission: 'reports.read', revision: 1 },
        { user: 'carol', role: 'auditor', revision: 1, expires_at: echoed(until) },
      ],
    });
    expectRev(done, 1);
    assert.deepEqual(
      (await changesSince(c, 0)).map((row) => [row.revision, row.op]),
      [
        [1, 'role.create'],
        [1, 'permission.grant'],
        [1, 'membership.add'],
      ],
    );
    const refused = await c.writes([
      { op: 'role.create', role: 'viewer' },
      { op: 'membership.add', user: 'carol', role: 'auditor' },
    ]);
    expectErr(refused, 409, 'writes[1]');
    expectRev(refused, 1);
    assert.deepEqual(expectOk(await c.listRoles()), [{ role: 'auditor', description: '' }], 'nothing of the refused batch is stored');
  });

  test('dryRun(): gained and lost at the current revision, nothing stored; 424 after the first failure; a read token may ask', async () => {
    const c = fresh();
    await seedRole(c, 'ops', ['deploy'], ['bob']);
    const preview = await c.dryRun([
      { op: 'membership.add', user: 'alice', role: 'ops' },
      { op: 'membership.remove', user: 'bob', role: 'ops' },
    ]);
    assert.deepEqual(expectOk(preview), {
      revision: 3,
      valid: true,
      results: [{ status: 201 }, { status: 200 }],
      gained: [{ user: 'alice', permission: 'deploy' }],
      lost: [{ user: 'bob', permission: 'deploy' }],
      gained_count: 1,
      lost_count: 1,
      truncated: false,
    });
    assert.equal(await revisionOf(c), 3, 'a preview takes no revision');
    const invalid = expectOk(
      await c.dryRun([
        { op: 'membership.add', user: 'bob', role: 'ops' },
        { op: 'role.delete', role: 'ops' },
      ]),
    );
    assert.equal(invalid.valid, false);
    assert.deepEqual(
      invalid.results.map((r) => r.status),
      [409, 424],
    );
    assert.match(invalid.results[0]?.error ?? '', /bob/);
    assert.deepEqual([invalid.gained, invalid.lost, invalid.gained_count, invalid.lost_count], [[], [], 0, 0]);
    const token = expectOk(await c.issueToken({ scope: 'read' }), 201).token;
    assert.equal(expectOk(await c.withKey(token).dryRun([{ op: 'role.delete', role: 'ops' }])).lost_count, 1);
    expectErr(await c.dryRun([]), 400, 'writes');
  });
});

describe('preconditions through the client', () => {
  test('ifMatch: a stale revision is 412 naming If-Match and the current revision, on every write method', async () => {
    const c = fresh();
    await seedRole(c, 'ops', ['deploy'], ['bob']);
    const stale = { ifMatch: 2 } as const;
    for (const res of [
      await c.createRole('new', undefined, stale),
      await c.deleteRole('ops', stale),
      await c.grant('ops', 'read', stale),
      await c.putGrant('ops', 'deploy', stale),
      await c.revoke('ops', 'deploy', stale),
      await c.addMember('alice', 'ops', stale),
      await c.putMembership('bob', 'ops', stale),
      await c.removeMember('bob', 'ops', stale),
      await c.writes([{ op: 'role.create', role: 'new' }], stale),
    ]) {
      assert.equal(res.status, 412, JSON.stringify(res.body));
      assert.equal(res.body?.message, 'Precondition failed');
      assert.match(res.error ?? '', /If-Match/);
      assert.match(res.error ?? '', /\b3\b/, 'the current revision');
      expectRev(res, 3);
    }
    assert.equal(await revisionOf(c), 3, 'nothing written');
    assert.equal((await c.grant('ghost', 'read', stale)).status, 412, '412 comes before the 404 of the operation');
  });

  test('ifMatch: the current revision and * write; a bare or weak tag is 400', async () => {
    const c = fresh();
    expectOk(await c.createRole('ops', undefined, { ifMatch: 0 }), 201);
    expectOk(await c.grant('ops', 'deploy', { ifMatch: 1 }), 201);
    expectOk(await c.addMember('bob', 'ops', { ifMatch: '*' }), 201);
    const preview = expectOk(await c.dryRun([{ op: 'permission.revoke', role: 'ops', permission: 'deploy' }]));
    expectOk(await c.writes([{ op: 'permission.revoke', role: 'ops', permission: 'deploy' }], { ifMatch: preview.revision }));
    for (const value of ['4', 'W/"4"', '"-1"', '"x"'])
      expectErr(await c.request('DELETE', '/api/role/ops', { headers: { 'if-match': value } }), 400, 'If-Match', value);
  });
});

describe('windows that pass while the server runs', () => {
  test('a membership is out at expires_at on the dot; its expire change follows within 5 s, by system', async () => {
    const c = fresh();
    await seedRole(c, 'ops', ['deploy']);
    const until = fromNow(1500);
    expectOk(await c.addMember('bob', 'ops', { expiresAt: until }), 201);
    assert.deepEqual(expectOk(await c.hasPermission('bob', 'deploy')), { has_permission: true });
    await sleep(until.getTime() - Date.now() + 20);
    assert.deepEqual(expectOk(await c.hasPermission('bob', 'deploy')), { has_permission: false }, 'out at the boundary, before any change');
    const expired = await waitForOp(c, 'membership.expire', until.getTime() + 5000 + 2000);
    assert.equal(expired.revision, 4);
    assert.equal(Date.parse(`${expired.timestamp}Z`), until.getTime(), 'the row is timed at the boundary');
    const row = expectOk(await c.audit()).find((r) => r.action === 'membership.expire');
    assert.ok(row !== undefined, 'an audit row of the expiry');
    assert.deepEqual([row.credential, row.resource, row.revision, row.ip, row.request_id], ['system', '/api/membership/bob/ops', 4, undefined, undefined]);
  });

  test('a pending grant counts from not_before on; its activate change follows within 5 s', async () => {
    const c = fresh();
    await seedRole(c, 'ops', [], ['bob']);
    const from = fromNow(1500);
    expectOk(await c.grant('ops', 'deploy', { notBefore: from }), 201);
    assert.deepEqual(expectOk(await c.hasPermission('bob', 'deploy')), { has_permission: false });
    await sleep(from.getTime() - Date.now() + 20);
    assert.deepEqual(expectOk(await c.hasPermission('bob', 'deploy')), { has_permission: true }, 'in at the boundary, before any change');
    const activated = await waitForOp(c, 'permission.activate', from.getTime() + 5000 + 2000);
    assert.deepEqual([activated.revision, activated.role, activated.permission, activated.timestamp], [4, 'ops', 'deploy', echoed(from).slice(0, -1)]);
    assert.deepEqual(expectOk(await c.windows()), [], 'nothing ahead any more');
  });
});

/** The change feed's first row of `op`, polled until `deadline` (ms since the epoch). */
async function waitForOp(c: RbacClient, op: string, deadline: number): Promise<ChangeRow> {
  for (;;) {
    const row = (await changesSince(c, 0)).find((r) => r.op === op);
    if (row !== undefined) return row;
    assert.ok(Date.now() < deadline, `no ${op} in the change feed by ${new Date(deadline).toISOString()}`);
    await sleep(200);
  }
}

answersMatchTheDocument('every answer of these tests matches /openapi.json', 40);
