/**
 * POST /api/check (docs/api.md §2) against the real server: results in request order, all and
 * any, the 1..1000 bounds and the bodies refused with 400.
 */
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RbacClient } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectOk, expectErr, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';

const api = contractServer();
const { fresh } = api;

// ---------------------------------------------------------------------------------------------
// Batch check
// ---------------------------------------------------------------------------------------------

describe('POST /api/check', () => {
  let c: RbacClient;
  let rev = 0;

  before(async () => {
    c = fresh();
    await seedRole(c, 'admin', ['read', 'write'], ['alice']);
    await seedRole(c, 'viewer', ['read'], ['bob']);
    rev = await revisionOf(c);
  });

  test('results in request order (duplicates kept), all and any', async () => {
    const checks = [
      { user: 'bob', permission: 'write' },
      { user: 'alice', permission: 'write' },
      { user: 'nobody', permission: 'read' },
      { user: 'bob', permission: 'read' },
      { user: 'alice', permission: 'write' },
      { user: 'alice', permission: 'unknown' },
    ];
    const res = await c.check(checks);
    const data = expectOk(res);
    assert.deepEqual(data, {
      results: [
        { user: 'bob', permission: 'write', has_permission: false },
        { user: 'alice', permission: 'write', has_permission: true },
        { user: 'nobody', permission: 'read', has_permission: false },
        { user: 'bob', permission: 'read', has_permission: true },
        { user: 'alice', permission: 'write', has_permission: true },
        { user: 'alice', permission: 'unknown', has_permission: false },
      ],
      all: false,
      any: true,
    });
    expectRev(res, rev);
  });

  test('all true and all false', async () => {
    const yes = expectOk(
      await c.check([
        { user: 'alice', permission: 'read' },
        { user: 'bob', permission: 'read' },
      ]),
    );
    assert.equal(yes.all, true);
    assert.equal(yes.any, true);
    const no = expectOk(
      await c.check([
        { user: 'alice', permission: 'x' },
        { user: 'zed', permission: 'read' },
      ]),
    );
    assert.equal(no.all, false);
    assert.equal(no.any, false);
    const one = expectOk(await c.check([{ user: 'alice', permission: 'write' }]));
    assert.deepEqual(one, { results: [{ user: 'alice', permission: 'write', has_permission: true }], all: true, any: true });
  });

  test('1000 items are accepted; 0 and 1001 are 400 naming checks', async () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({ user: i % 2 === 0 ? 'alice' : `user${i}`, permission: 'read' }));
    const res = await c.check(many);
    const data = expectOk(res);
    assert.equal(data.results.length, 1000);
    for (const [i, r] of data.results.entries()) {
      assert.deepEqual(r, { user: many[i]?.user, permission: 'read', has_permission: i % 2 === 0 });
    }
    assert.equal(data.all, false);
    assert.equal(data.any, true);

    const none = await c.check([]);
    expectErr(none, 400, 'checks');
    expectRev(none, rev);
    const tooMany = await c.check([...many, { user: 'alice', permission: 'read' }]);
    expectErr(tooMany, 400, 'checks');
    expectRev(tooMany, rev);
  });

  test('bad bodies are 400', async () => {
    const bodies: unknown[] = [
      {},
      { checks: null },
      { checks: {} },
      { checks: 'alice' },
      { checks: [null] },
      { checks: ['alice:read'] },
      { checks: [{ user: 'alice' }] },
      { checks: [{ permission: 'read' }] },
      { checks: [{ user: 'alice', permission: 'read', role: 'admin' }] },
      { checks: [{ user: 'alice', permission: 1 }] },
      { checks: [{ user: 'alice', permission: null }] },
      { checks: [{ user: 'alice', permission: 'read' }], extra: true },
    ];
    for (const body of bodies) {
      const res = await c.request('POST', '/api/check', { body });
      expectErr(res, 400);
      expectRev(res, rev);
    }
    for (const [user, permission] of [
      ['a b', 'read'],
      ['', 'read'],
      ['alice', ''],
      ['alice', 'r/w'],
      ['x'.repeat(129), 'read'],
      ['alice', 'p'.repeat(129)],
      ['caf\u00e9', 'read'],
    ] as const) {
      const res = await c.check([
        { user: 'alice', permission: 'read' },
        { user, permission },
      ]);
      expectErr(res, 400, /checks|user|permission/);
      expectRev(res, rev);
    }
    const ok = await c.check([{ user: 'u'.repeat(128), permission: 'p'.repeat(128) }]);
    assert.deepEqual(expectOk(ok).results, [{ user: 'u'.repeat(128), permission: 'p'.repeat(128), has_permission: false }]);
    const noBody = await c.request('POST', '/api/check');
    expectErr(noBody, 400, 'checks');
    assert.equal(await revisionOf(c), rev);
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 30);
