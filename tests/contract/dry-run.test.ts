/**
 * Previews (CONTRACT §12.3) against the real server: POST /api/dry-run answers, at the client's
 * revision, whether /api/writes would succeed, each item's status as its single route would give
 * it (424 after the first failure), the (user, permission) pairs gained and lost, sorted, cut at
 * 10,000 with exact counts; it stores nothing (no revision, no change, no audit row), a read
 * token may call it, and the bodies /api/writes refuses as a whole are 400 here too.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { RbacClient } from '../../src/client/index.ts';
import { auditAll, rid, waitForRows } from '../helpers/audit.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectRev, seedRole } from '../helpers/envelopes.ts';
import { rememberSecret } from '../helpers/server.ts';
import { assertNothingStored, dryRun, expectError, ifMatch, inSeconds, sent, storedBy, writes, type Preview, type WriteItem } from '../helpers/windows.ts';

const SECRET = randomBytes(36).toString('base64url');
const api = contractServer({ env: { AUTH_JWT_SECRET_KEY: SECRET } });
const { fresh } = api;

/**
 * Revision 9: `admin` grants read and write to alice; `viewer` grants read to bob and alice;
 * `empty` has nothing.
 */
async function seeded(): Promise<RbacClient> {
  const c = fresh();
  await seedRole(c, 'admin', ['read', 'write'], ['alice']);
  await seedRole(c, 'viewer', ['read'], ['bob', 'alice']);
  expectOk(await c.createRole('empty'), 201);
  return c;
}

const pair = (user: string, permission: string): { user: string; permission: string } => ({ user, permission });

/** Asserts a preview's shape (exact keys) and returns it. */
function preview(res: Awaited<ReturnType<typeof dryRun>>, revision: number): Preview {
  const p = expectOk(res);
  assert.deepEqual(Object.keys(p).sort(), ['gained', 'gained_count', 'lost', 'lost_count', 'results', 'revision', 'truncated', 'valid']);
  assert.equal(p.revision, revision);
  expectRev(res, revision);
  for (const r of p.results) assert.deepEqual(Object.keys(r).sort(), 'error' in r ? ['error', 'status'] : ['status'], JSON.stringify(r));
  if (!p.truncated) {
    assert.equal(p.gained.length, p.gained_count);
    assert.equal(p.lost.length, p.lost_count);
  }
  return p;
}

describe('a valid batch', () => {
  test('results as the single routes would give them; gained and lost pairs, sorted; nothing stored', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const items: WriteItem[] = [
      { op: 'role.create', role: 'ops', description: 'x' },
      { op: 'permission.grant', role: 'ops', permission: 'deploy' },
      { op: 'permission.grant', role: 'ops', permission: 'read' },
      { op: 'membership.add', user: 'carol', role: 'ops' },
      { op: 'membership.add', user: 'bob', role: 'ops' },
      { op: 'membership.remove', user: 'alice', role: 'admin' },
      { op: 'permission.revoke', role: 'viewer', permission: 'read' },
      { op: 'role.delete', role: 'empty' },
    ];
    const p = preview(await dryRun(c, items), 9);
    assert.equal(p.valid, true);
    assert.deepEqual(
      p.results.map((r) => r.status),
      [201, 201, 201, 201, 201, 200, 200, 200],
    );
    // bob: read stays (ops grants it), deploy gained. carol: both gained. alice loses read (viewer's
    // grant revoked, admin's membership removed) and write.
    assert.deepEqual(p.gained, [pair('bob', 'deploy'), pair('carol', 'deploy'), pair('carol', 'read')]);
    assert.deepEqual(p.lost, [pair('alice', 'read'), pair('alice', 'write')]);
    assert.equal(p.gained_count, 3);
    assert.equal(p.lost_count, 2);
    assert.equal(p.truncated, false);
    await assertNothingStored(c, before, 'a valid preview');
  });

  test('a pair held through another role is neither gained nor lost; no-ops preview empty differences', async () => {
    const c = await seeded();
    const p = preview(
      await dryRun(c, [
        { op: 'role.delete', role: 'viewer' },
        { op: 'membership.add', user: 'bob', role: 'admin' },
        { op: 'membership.remove', user: 'bob', role: 'admin' },
        { op: 'role.create', role: 'spare' },
      ]),
      9,
    );
    assert.equal(p.valid, true);
    assert.deepEqual(p.gained, []);
    assert.deepEqual(p.lost, [pair('bob', 'read')]);
    const none = preview(await dryRun(c, [{ op: 'permission.grant', role: 'empty', permission: 'read' }]), 9);
    assert.deepEqual([none.valid, none.gained, none.lost, none.gained_count, none.lost_count], [true, [], [], 0, 0]);
  });

  test('windows count as they would be now: a pending add gains nothing, an expiring one gains at once', async () => {
    const c = await seeded();
    const p = preview(
      await dryRun(c, [
        { op: 'membership.add', user: 'later', role: 'admin', not_before: sent(inSeconds(3600)) },
        { op: 'membership.add', user: 'now', role: 'viewer', expires_at: sent(inSeconds(3600)) },
        { op: 'permission.grant', role: 'viewer', permission: 'soon', not_before: sent(inSeconds(600)), expires_at: sent(inSeconds(900)) },
      ]),
      9,
    );
    assert.deepEqual(
      p.results.map((r) => r.status),
      [201, 201, 201],
    );
    assert.deepEqual(p.gained, [pair('now', 'read')]);
    assert.deepEqual(p.lost, []);
  });

  test('previewed at R then written with If-Match "R": exactly the previewed change', async () => {
    const c = await seeded();
    const items: WriteItem[] = [
      { op: 'membership.add', user: 'dan', role: 'admin' },
      { op: 'role.delete', role: 'viewer' },
    ];
    const p = preview(await dryRun(c, items), 9);
    assert.deepEqual(p.gained, [pair('dan', 'read'), pair('dan', 'write')]);
    assert.deepEqual(p.lost, [pair('bob', 'read')]);
    expectOk(await writes(c, items, ifMatch(p.revision)));
    for (const { user, permission } of p.gained) assert.equal(expectOk(await c.hasPermission(user, permission)).has_permission, true);
    for (const { user, permission } of p.lost) assert.equal(expectOk(await c.hasPermission(user, permission)).has_permission, false);
  });
});

describe('an invalid batch', () => {
  test('the first failure has its status and error, later items 424, valid false, no differences', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const p = preview(
      await dryRun(c, [
        { op: 'role.create', role: 'ops' },
        { op: 'membership.add', user: 'x', role: 'ops' },
        { op: 'role.create', role: 'admin' },
        { op: 'permission.grant', role: 'ops', permission: 'deploy' },
        { op: 'role.create', role: 'admin' },
      ]),
      9,
    );
    assert.equal(p.valid, false);
    assert.deepEqual(
      p.results.map((r) => r.status),
      [201, 201, 409, 424, 424],
    );
    assert.ok(p.results[2]?.error?.includes('admin'), JSON.stringify(p.results[2]));
    assert.deepEqual(p.results[3], { status: 424 });
    assert.deepEqual([p.gained, p.lost, p.gained_count, p.lost_count, p.truncated], [[], [], 0, 0, false]);
    await assertNothingStored(c, before, 'an invalid preview');
  });

  const firstFailures: Array<[string, WriteItem, number, string]> = [
    ['a missing role', { op: 'permission.grant', role: 'ghost', permission: 'p' }, 404, 'ghost'],
    ['a revoke not granted', { op: 'permission.revoke', role: 'empty', permission: 'p' }, 404, 'p'],
    ['a removal of a non-member', { op: 'membership.remove', user: 'nobody', role: 'admin' }, 404, 'nobody'],
    ['a role delete of a missing role', { op: 'role.delete', role: 'ghost' }, 404, 'ghost'],
    ['a member already there', { op: 'membership.add', user: 'bob', role: 'viewer' }, 409, 'bob'],
    ['a bad name', { op: 'membership.add', user: 'a b', role: 'admin' }, 400, 'user'],
    ['a bad window', { op: 'membership.add', user: 'u', role: 'admin', expires_at: 'never' }, 400, 'expires_at'],
    ['an expiry already past', { op: 'permission.grant', role: 'empty', permission: 'p', expires_at: sent(inSeconds(-5)) }, 400, 'expires_at'],
    ['an unknown op', { op: 'role.rename', role: 'admin' }, 400, 'op'],
    ['an unknown key', { op: 'role.create', role: 'z', colour: 'red' }, 400, ''],
  ];
  for (const [title, item, status, name] of firstFailures) {
    test(`${title}: its item is ${status}${name ? ` naming ${name}` : ''}, the next 424`, async () => {
      const c = await seeded();
      const p = preview(await dryRun(c, [{ op: 'role.create', role: 'first' }, item, { op: 'role.create', role: 'after' }]), 9);
      assert.equal(p.valid, false);
      assert.equal(p.results[0]?.status, 201);
      assert.equal(p.results[1]?.status, status, JSON.stringify(p.results[1]));
      assert.equal(typeof p.results[1]?.error, 'string', JSON.stringify(p.results[1]));
      if (name !== '') assert.ok(p.results[1]?.error?.includes(name), JSON.stringify(p.results[1]));
      assert.deepEqual(p.results[2], { status: 424 });
      assert.deepEqual([p.gained, p.lost, p.gained_count, p.lost_count], [[], [], 0, 0]);
    });
  }

  test('bodies /api/writes refuses as a whole are 400 here too; a bad content type 415', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    for (const body of ['{}', '{"writes":[]}', '{"writes":null}', '{"writes":{}}', '[]', '"x"', '{', '{"writes":[{"op":"role.create","role":"x"}],"x":1}']) {
      expectError(await c.request('POST', '/api/dry-run', { rawBody: body, contentType: 'application/json' }), 400, [], 9, body);
    }
    expectError(await c.request('POST', '/api/dry-run'), 400, ['writes'], 9, 'no body');
    const over = Array.from({ length: 1001 }, (_, i) => ({ op: 'role.create', role: `x${i}` }));
    expectError(await dryRun(c, over), 400, ['writes'], 9, '1001 items');
    expectError(await c.request('POST', '/api/dry-run', { rawBody: '{"writes":[]}', contentType: 'text/plain' }), 415, [], 9);
    for (const method of ['GET', 'PUT', 'DELETE']) expectError(await c.request(method, '/api/dry-run'), 405);
    expectError(await c.withKey(undefined).request('POST', '/api/dry-run', { body: { writes: [{ op: 'role.create', role: 'x' }] } }), 401);
    await assertNothingStored(c, before, 'refused previews');
  });
});

describe('stores nothing; who may call it', () => {
  test('no revision, no change, no audit row (AUTH_AUDIT_CHECKS off)', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const previewId = rid('preview');
    preview(await dryRun(c, [{ op: 'role.delete', role: 'admin' }], { requestId: previewId }), 9);
    // A failed write after the preview: once its row is there, a row of the preview would be too.
    const barrier = rid('barrier');
    expectError(await c.request('POST', '/api/role/admin', { requestId: barrier }), 409);
    await waitForRows(c, [barrier]);
    assert.deepEqual(
      (await auditAll(c)).filter((r) => r.request_id === previewId),
      [],
    );
    await assertNothingStored(c, before, 'after a preview');
  });

  test('a read token may preview (and may not write); a write token too', async () => {
    const c = await seeded();
    const mint = async (scope: string): Promise<RbacClient> => {
      const token = expectOk(await c.request<{ token: string }>('POST', '/api/token', { body: { scope } }), 201).token;
      rememberSecret(token, 'token');
      return c.withKey(token);
    };
    const items: WriteItem[] = [{ op: 'membership.add', user: 'eve', role: 'viewer' }];
    const reader = await mint('read');
    assert.deepEqual(preview(await dryRun(reader, items), 9).gained, [pair('eve', 'read')]);
    expectError(await writes(reader, items), 403, [], 9);
    const writer = await mint('write');
    assert.deepEqual(preview(await dryRun(writer, items), 9).gained, [pair('eve', 'read')]);
  });

  test('an empty client previews at revision 0', async () => {
    const c = fresh();
    const p = preview(
      await dryRun(c, [
        { op: 'role.create', role: 'r' },
        { op: 'membership.add', user: 'u', role: 'r' },
      ]),
      0,
    );
    assert.deepEqual([p.valid, p.gained, p.lost], [true, [], []]);
  });
});

describe('big differences', () => {
  test('over 10,000 gained pairs: the first 10,000 in order, exact counts, truncated', async () => {
    const c = fresh();
    const perms = Array.from({ length: 100 }, (_, i) => `p${String(i).padStart(3, '0')}`);
    const users = Array.from({ length: 101 }, (_, i) => `u${String(i).padStart(3, '0')}`);
    expectOk(await writes(c, [{ op: 'role.create', role: 'big' }, ...perms.map((permission) => ({ op: 'permission.grant', role: 'big', permission }))]));
    const adds = users.map((user) => ({ op: 'membership.add', user, role: 'big' }));
    const p = preview(await dryRun(c, adds), 1);
    assert.equal(p.valid, true);
    assert.equal(p.gained_count, 10_100);
    assert.equal(p.gained.length, 10_000);
    assert.equal(p.truncated, true);
    assert.deepEqual(p.gained[0], pair('u000', 'p000'));
    assert.deepEqual(p.gained[1], pair('u000', 'p001'));
    assert.deepEqual(p.gained[9_999], pair('u099', 'p099'));
    assert.deepEqual([p.lost, p.lost_count], [[], 0]);

    expectOk(await writes(c, adds));
    const gone = preview(await dryRun(c, [{ op: 'role.delete', role: 'big' }]), 2);
    assert.deepEqual([gone.lost_count, gone.lost.length, gone.truncated, gone.gained_count], [10_100, 10_000, true, 0]);
    assert.deepEqual(gone.lost[9_999], pair('u099', 'p099'));
    const small = preview(await dryRun(c, [{ op: 'membership.remove', user: 'u100', role: 'big' }]), 2);
    assert.deepEqual([small.lost_count, small.lost.length, small.truncated], [100, 100, false]);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 40);
