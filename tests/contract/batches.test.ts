/**
 * Atomic batches (CONTRACT §12.2) against the real server: POST /api/writes applies every item in
 * order at one new revision (a later item sees the earlier ones) and answers each item's §5 data;
 * the first item that would fail fails the whole batch with 400/404/409 naming `writes[i]`,
 * nothing stored and the revision unchanged; each item is its own row in /api/changes and the
 * audit trail at the batch's revision; bodies /api/writes refuses as a whole; a read token is 403.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { RbacClient } from '../../src/client/index.ts';
import { auditAll, rid, waitForRows } from '../helpers/audit.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import { rememberSecret } from '../helpers/server.ts';
import { assertNothingStored, changesSince, echoed, expectError, inSeconds, sent, storedBy, writes, type WriteItem } from '../helpers/windows.ts';

const SECRET = randomBytes(36).toString('base64url');
const api = contractServer({ env: { AUTH_JWT_SECRET_KEY: SECRET } });
const { fresh } = api;

/** A client with role `r` granting `p` and member `alice`, role `s` without anything: revision 4. */
async function seeded(): Promise<RbacClient> {
  const c = fresh();
  await seedRole(c, 'r', ['p'], ['alice']);
  expectOk(await c.createRole('s'), 201);
  return c;
}

describe('a batch that succeeds', () => {
  test('every op, in order, at one new revision; results are each item’s §5 data', async () => {
    const c = await seeded();
    const ex = inSeconds(3600);
    const nb = inSeconds(600);
    const items: WriteItem[] = [
      { op: 'role.create', role: 'new', description: 'made in a batch' },
      { op: 'permission.grant', role: 'new', permission: 'read' },
      { op: 'permission.grant', role: 'new', permission: 'soon', not_before: sent(nb), expires_at: sent(ex) },
      { op: 'membership.add', user: 'bob', role: 'new', expires_at: sent(ex) },
      { op: 'membership.add', user: 'carol', role: 'new' },
      { op: 'permission.revoke', role: 'r', permission: 'p' },
      { op: 'membership.remove', user: 'alice', role: 'r' },
      { op: 'role.delete', role: 's' },
      { op: 'role.create', role: 's' },
    ];
    const res = await writes(c, items);
    const data = expectOk(res, 200);
    expectRev(res, 5);
    assert.deepEqual(data, {
      revision: 5,
      results: [
        { role: 'new', description: 'made in a batch', revision: 5 },
        { role: 'new', permission: 'read', revision: 5 },
        { role: 'new', permission: 'soon', revision: 5, not_before: echoed(nb), expires_at: echoed(ex) },
        { user: 'bob', role: 'new', revision: 5, expires_at: echoed(ex) },
        { user: 'carol', role: 'new', revision: 5 },
        { role: 'r', permission: 'p', revision: 5 },
        { user: 'alice', role: 'r', revision: 5 },
        { role: 's', permissions_removed: 0, memberships_removed: 0, revision: 5 },
        { role: 's', description: '', revision: 5 },
      ],
    });
    assert.equal(await revisionOf(c), 5);
    assert.deepEqual(expectOk(await c.listRoles()), [
      { role: 'new', description: 'made in a batch' },
      { role: 'r', description: '' },
      { role: 's', description: '' },
    ]);
    assert.deepEqual(expectOk(await c.whichUsersCan('read')), [{ user: 'bob' }, { user: 'carol' }]);
    assert.deepEqual(expectOk(await c.isMember('bob', 'new')), { is_member: true, expires_at: echoed(ex) });
    assert.deepEqual(expectOk(await c.roleHasPermission('new', 'soon')), { has_permission: false, not_before: echoed(nb), expires_at: echoed(ex) });
    assert.deepEqual(expectOk(await c.hasPermission('alice', 'p')), { has_permission: false });
  });

  test('one changelog row per item, in order, all at the batch’s revision', async () => {
    const c = await seeded();
    const ex = inSeconds(3600);
    expectOk(
      await writes(c, [
        { op: 'role.create', role: 't' },
        { op: 'permission.grant', role: 't', permission: 'x', expires_at: sent(ex) },
        { op: 'membership.add', user: 'dan', role: 't' },
        { op: 'role.delete', role: 'r' },
      ]),
    );
    const rows = (await changesSince(c, 4)).map(({ timestamp: _t, ...rest }) => rest);
    assert.deepEqual(rows, [
      { revision: 5, op: 'role.create', role: 't' },
      { revision: 5, op: 'permission.grant', role: 't', permission: 'x', expires_at: echoed(ex) },
      { revision: 5, op: 'membership.add', role: 't', user: 'dan' },
      { revision: 5, op: 'role.delete', role: 'r' },
    ]);
    // The next write is one more revision, whatever the batch's size.
    assert.equal(expectOk(await c.createRole('u'), 201).revision, 6);
  });

  test('one audit row per item, each with its op, the batch’s revision and request id', async () => {
    const c = await seeded();
    const requestId = rid('batch');
    expectOk(
      await writes(
        c,
        [
          { op: 'role.create', role: 't' },
          { op: 'membership.add', user: 'dan', role: 't' },
          { op: 'permission.grant', role: 't', permission: 'x' },
        ],
        { requestId },
      ),
    );
    const rows = (await auditAll(c)).filter((r) => r.request_id === requestId);
    assert.deepEqual(rows.map((r) => r.action).sort(), ['membership.add', 'permission.grant', 'role.create']);
    for (const row of rows) {
      assert.equal(row.revision, 5, JSON.stringify(row));
      assert.equal(row.resource, '/api/writes', JSON.stringify(row));
    }
  });

  test('1000 items are one batch; a batch of one is like its single route', async () => {
    const c = fresh();
    const items = Array.from({ length: 1000 }, (_, i) => ({ op: 'role.create', role: `role-${String(i).padStart(4, '0')}` }));
    const res = await writes(c, items);
    const data = expectOk(res);
    assert.equal(data.revision, 1);
    assert.equal(data.results.length, 1000);
    assert.equal((await c.listRoles()).data?.length, 1000);
    const one = await writes(c, [{ op: 'membership.add', user: 'u', role: 'role-0000' }]);
    assert.deepEqual(expectOk(one), { revision: 2, results: [{ user: 'u', role: 'role-0000', revision: 2 }] });
  });
});

describe('a batch that fails stores nothing', () => {
  const failing: Array<{ title: string; items: WriteItem[]; status: number; names: string[] }> = [
    {
      title: 'a role that exists (409)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'role.create', role: 'r' },
      ],
      status: 409,
      names: ['writes[1]', 'r'],
    },
    {
      title: 'an item made to conflict by an earlier one (409)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'permission.grant', role: 'x', permission: 'a' },
        { op: 'permission.grant', role: 'x', permission: 'a' },
      ],
      status: 409,
      names: ['writes[2]', 'a'],
    },
    {
      title: 'a grant already there (409)',
      items: [{ op: 'permission.grant', role: 'r', permission: 'p' }],
      status: 409,
      names: ['writes[0]', 'p'],
    },
    {
      title: 'a member already there (409)',
      items: [
        { op: 'membership.add', user: 'bob', role: 's' },
        { op: 'membership.add', user: 'alice', role: 'r', expires_at: sent(inSeconds(60)) },
      ],
      status: 409,
      names: ['writes[1]', 'alice'],
    },
    {
      title: 'a grant to a missing role (404)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'permission.grant', role: 'ghost', permission: 'a' },
      ],
      status: 404,
      names: ['writes[1]', 'ghost'],
    },
    {
      title: 'an item on a role an earlier one deleted (404)',
      items: [
        { op: 'role.delete', role: 'r' },
        { op: 'membership.add', user: 'bob', role: 'r' },
      ],
      status: 404,
      names: ['writes[1]', 'r'],
    },
    {
      title: 'a role delete of a missing role (404)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'role.delete', role: 'ghost' },
      ],
      status: 404,
      names: ['writes[1]', 'ghost'],
    },
    {
      title: 'a revoke not granted (404)',
      items: [{ op: 'permission.revoke', role: 'r', permission: 'never' }],
      status: 404,
      names: ['writes[0]', 'never'],
    },
    {
      title: 'a removal of a non-member (404)',
      items: [
        { op: 'membership.add', user: 'bob', role: 's' },
        { op: 'membership.remove', user: 'nobody', role: 'r' },
      ],
      status: 404,
      names: ['writes[1]', 'nobody'],
    },
    {
      title: 'a bad name in a later item (400)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'role.create', role: 'y' },
        { op: 'role.create', role: 'bad name' },
      ],
      status: 400,
      names: ['writes[2]', 'role'],
    },
    {
      title: 'a bad window in an item (400)',
      items: [
        { op: 'role.create', role: 'x' },
        { op: 'membership.add', user: 'u', role: 'x', expires_at: 'soon' },
      ],
      status: 400,
      names: ['writes[1]', 'expires_at'],
    },
    {
      title: 'an expiry already past (400)',
      items: [{ op: 'permission.grant', role: 's', permission: 'q', expires_at: sent(inSeconds(-10)) }],
      status: 400,
      names: ['writes[0]', 'expires_at'],
    },
  ];

  for (const { title, items, status, names } of failing) {
    test(`${title}: ${status} naming ${names.join(', ')}`, async () => {
      const c = await seeded();
      const before = await storedBy(c);
      expectError(await writes(c, items), status, names, 4, title);
      await assertNothingStored(c, before, title);
    });
  }

  test('the failed batch is audited once per batch or item, without a revision, and changes nothing after', async () => {
    const c = await seeded();
    const requestId = rid('failed');
    expectError(
      await writes(
        c,
        [
          { op: 'role.create', role: 'x' },
          { op: 'role.create', role: 'r' },
        ],
        { requestId },
      ),
      409,
      ['writes[1]'],
    );
    const rows = (await waitForRows(c, [requestId])).filter((r) => r.request_id === requestId);
    assert.ok(rows.length >= 1, JSON.stringify(rows));
    for (const row of rows) {
      assert.equal(row.status, 409, JSON.stringify(row));
      assert.equal(row.revision, undefined, JSON.stringify(row));
      assert.equal(row.resource, '/api/writes', JSON.stringify(row));
    }
    assert.equal(await revisionOf(c), 4);
  });
});

describe('bodies /api/writes refuses', () => {
  const shapes: Array<[string, string[]]> = [
    ['{}', ['writes']],
    ['{"writes":[]}', ['writes']],
    ['{"writes":null}', ['writes']],
    ['{"writes":{}}', ['writes']],
    ['{"writes":"role.create"}', ['writes']],
    ['{"writes":[null]}', ['writes[0]']],
    ['{"writes":[[]]}', ['writes[0]']],
    ['{"writes":["role.create"]}', ['writes[0]']],
    ['{"writes":[{}]}', ['writes[0]', 'op']],
    ['{"writes":[{"role":"x"}]}', ['writes[0]', 'op']],
    ['{"writes":[{"op":"role.rename","role":"x"}]}', ['writes[0]', 'op']],
    ['{"writes":[{"op":"permission.window","role":"r","permission":"p"}]}', ['writes[0]', 'op']],
    ['{"writes":[{"op":"membership.expire","role":"r","user":"alice"}]}', ['writes[0]', 'op']],
    ['{"writes":[{"op":1}]}', ['writes[0]', 'op']],
    ['{"writes":[{"op":"role.create"}]}', ['writes[0]', 'role']],
    ['{"writes":[{"op":"role.create","role":7}]}', ['writes[0]', 'role']],
    ['{"writes":[{"op":"role.create","role":""}]}', ['writes[0]', 'role']],
    ['{"writes":[{"op":"role.create","role":"x","description":5}]}', ['writes[0]', 'description']],
    ['{"writes":[{"op":"role.create","role":"x","permission":"p"}]}', ['writes[0]']],
    ['{"writes":[{"op":"role.create","role":"x","expires_at":"2030-01-01T00:00:00Z"}]}', ['writes[0]']],
    ['{"writes":[{"op":"role.delete","role":"r","description":""}]}', ['writes[0]']],
    ['{"writes":[{"op":"permission.grant","role":"r"}]}', ['writes[0]', 'permission']],
    ['{"writes":[{"op":"permission.grant","role":"r","permission":"a/b"}]}', ['writes[0]', 'permission']],
    ['{"writes":[{"op":"permission.grant","role":"r","permission":"a","user":"u"}]}', ['writes[0]']],
    ['{"writes":[{"op":"permission.revoke","role":"r","permission":"p","expires_at":"2030-01-01T00:00:00Z"}]}', ['writes[0]']],
    ['{"writes":[{"op":"membership.add","role":"r"}]}', ['writes[0]', 'user']],
    ['{"writes":[{"op":"membership.add","role":"r","user":"u","not_before":5}]}', ['writes[0]', 'not_before']],
    [
      '{"writes":[{"op":"membership.add","role":"r","user":"u","not_before":"2031-01-01T00:00:00Z","expires_at":"2030-01-01T00:00:00Z"}]}',
      ['writes[0]', 'expires_at'],
    ],
    ['{"writes":[{"op":"membership.remove","role":"r","user":"alice","not_before":"2030-01-01T00:00:00Z"}]}', ['writes[0]']],
    ['{"writes":[{"op":"role.create","role":"x"}],"dry":true}', []],
    ['[{"op":"role.create","role":"x"}]', []],
    ['"writes"', []],
    ['{"writes":[{"op":"role.create","role":"x"}]', []],
  ];

  test('wrong shapes, unknown ops and keys, missing or bad fields: 400 naming writes or writes[i] and the field', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    for (const [body, names] of shapes) {
      expectError(await c.request('POST', '/api/writes', { rawBody: body, contentType: 'application/json' }), 400, names, 4, body);
    }
    expectError(await c.request('POST', '/api/writes'), 400, ['writes'], 4, 'no body');
    expectError(await c.request('POST', '/api/writes', { rawBody: '', contentType: 'application/json' }), 400, ['writes'], 4, 'empty body');
    expectError(await c.request('POST', '/api/writes', { rawBody: '{"writes":[]}', contentType: 'text/plain' }), 415, [], 4);
    await assertNothingStored(c, before, 'refused bodies');
  });

  test('over 1000 items is 400 naming writes; nothing stored', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    const items = Array.from({ length: 1001 }, (_, i) => ({ op: 'role.create', role: `x${i}` }));
    expectError(await writes(c, items), 400, ['writes'], 4);
    await assertNothingStored(c, before, '1001 items');
  });

  test('/api/writes takes only POST (405); without a credential 401', async () => {
    const c = fresh();
    for (const method of ['GET', 'PUT', 'DELETE']) expectError(await c.request(method, '/api/writes'), 405);
    expectError(await c.withKey(undefined).request('POST', '/api/writes', { body: { writes: [{ op: 'role.create', role: 'x' }] } }), 401);
  });

  test('a read token is 403 before the body is looked at; a write token writes', async () => {
    const c = await seeded();
    const mint = async (scope: string): Promise<RbacClient> => {
      const res = await c.request<{ token: string }>('POST', '/api/token', { body: { scope } });
      const token = expectOk(res, 201).token;
      rememberSecret(token, 'token');
      return c.withKey(token);
    };
    const reader = await mint('read');
    const before = await storedBy(c);
    expectError(await writes(reader, [{ op: 'role.create', role: 'x' }]), 403, [], 4);
    expectError(await reader.request('POST', '/api/writes', { rawBody: '{', contentType: 'application/json' }), 403, [], 4);
    await assertNothingStored(c, before, 'read token');
    const writer = await mint('write');
    assert.equal(expectOk(await writes(writer, [{ op: 'role.create', role: 'x' }])).revision, 5);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 60);
