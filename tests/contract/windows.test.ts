/**
 * Windows on grants and memberships (CONTRACT §12.1) against the real server: POST with a window,
 * PUT that creates (201) or replaces (200) it, the echo in UTC, pending edges (409 on POST, DELETE
 * 200, `{"is_member":false,"not_before":…}`), lists showing only active edges with their window,
 * derived lists without it, checks and explain counting only active edges, GET /api/windows in
 * boundary order and paged, the change feed and audit of a window change, and every bad bound a
 * 400 naming its field with nothing stored. Boundaries passing in real time: tests/features/boundaries.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RbacClient } from '../../src/client/index.ts';
import { auditAll } from '../helpers/audit.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { allowOf, expectOk, expectRev, revisionOf, seedRole } from '../helpers/envelopes.ts';
import {
  assertNothingStored,
  changesSince,
  DAY,
  echoed,
  edgeData,
  edgePath,
  expectError,
  grantOf,
  inSeconds,
  member,
  onEdge,
  sent,
  storedBy,
  windowsPage,
  type Edge,
  type WindowItem,
} from '../helpers/windows.ts';

const api = contractServer();
const { fresh } = api;

const HOUR = 3_600_000;

/** A client with role `r` granting `p`, and role `s` granting `q`: revision 4. */
async function seeded(): Promise<RbacClient> {
  const c = fresh();
  await seedRole(c, 'r', ['p']);
  await seedRole(c, 's', ['q']);
  return c;
}

describe('POST with a window', () => {
  test('both routes answer 201 with §5 data plus the window, echoed in UTC with 6 digits and Z', async () => {
    const c = await seeded();
    const nb = inSeconds(3600);
    const ex = nb + DAY;
    const m = member('alice', 'r');
    const res = await onEdge(c, 'POST', m, { not_before: sent(nb), expires_at: sent(ex) });
    assert.deepEqual(expectOk(res, 201), edgeData(m, 5, { notBefore: nb, expiresAt: ex }));
    expectRev(res, 5);
    const g = grantOf('r', 'later');
    const only = await onEdge(c, 'POST', g, { expires_at: sent(ex) });
    assert.deepEqual(expectOk(only, 201), edgeData(g, 6, { expiresAt: ex }));
  });

  test('offsets, fewer fractional digits and lower precision are stored as the same UTC instant', async () => {
    const c = await seeded();
    const base = new Date(inSeconds((2 * DAY) / 1000));
    const y = base.getUTCFullYear();
    const mo = String(base.getUTCMonth() + 1).padStart(2, '0');
    const d = String(base.getUTCDate()).padStart(2, '0');
    // 11:30:00.5+02:00 is 09:30:00.500000Z; 10:30:00.123456Z keeps all six digits.
    const res = await onEdge(c, 'POST', member('u', 'r'), { not_before: `${y}-${mo}-${d}T11:30:00.5+02:00`, expires_at: `${y}-${mo}-${d}T10:30:00.123456Z` });
    const data = expectOk(res, 201);
    assert.equal(data.not_before, `${y}-${mo}-${d}T09:30:00.500000Z`);
    assert.equal(data.expires_at, `${y}-${mo}-${d}T10:30:00.123456Z`);
    const minus = await onEdge(c, 'POST', member('v', 'r'), { expires_at: `${y}-${mo}-${d}T05:00:00-04:30` });
    assert.equal(expectOk(minus, 201).expires_at, `${y}-${mo}-${d}T09:30:00.000000Z`);
  });

  test('without a body, or with {}, both routes behave exactly as in §5 (no window fields)', async () => {
    const c = await seeded();
    assert.deepEqual(expectOk(await onEdge(c, 'POST', member('a', 'r')), 201), { user: 'a', role: 'r', revision: 5 });
    assert.deepEqual(expectOk(await onEdge(c, 'POST', member('b', 'r'), {}), 201), { user: 'b', role: 'r', revision: 6 });
    assert.deepEqual(expectOk(await onEdge(c, 'POST', grantOf('r', 'x')), 201), { role: 'r', permission: 'x', revision: 7 });
    assert.deepEqual(expectOk(await c.isMember('a', 'r')), { is_member: true });
    assert.deepEqual(expectOk(await c.roleHasPermission('r', 'x')), { has_permission: true });
  });

  test('a not_before already past is active at once and echoed', async () => {
    const c = await seeded();
    const nb = inSeconds(-60);
    const ex = inSeconds(3600);
    const res = await onEdge(c, 'POST', member('now', 'r'), { not_before: sent(nb), expires_at: sent(ex) });
    assert.deepEqual(expectOk(res, 201), edgeData(member('now', 'r'), 5, { notBefore: nb, expiresAt: ex }));
    assert.equal(expectOk(await c.isMember('now', 'r')).is_member, true);
    assert.equal(expectOk(await c.hasPermission('now', 'p')).has_permission, true);
  });
});

describe('pending edges', () => {
  test('a pending edge answers false with its window; an active windowed edge true with it', async () => {
    const c = await seeded();
    const nb = inSeconds(3600);
    const ex = inSeconds(7200);
    expectOk(await onEdge(c, 'POST', member('later', 'r'), { not_before: sent(nb) }), 201);
    expectOk(await onEdge(c, 'POST', member('until', 'r'), { expires_at: sent(ex) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'soon'), { not_before: sent(nb), expires_at: sent(ex) }), 201);
    assert.deepEqual(expectOk(await c.isMember('later', 'r')), { is_member: false, not_before: echoed(nb) });
    assert.deepEqual(expectOk(await c.isMember('until', 'r')), { is_member: true, expires_at: echoed(ex) });
    assert.deepEqual(expectOk(await c.roleHasPermission('r', 'soon')), { has_permission: false, not_before: echoed(nb), expires_at: echoed(ex) });
    assert.deepEqual(expectOk(await c.isMember('nobody', 'r')), { is_member: false });
    assert.deepEqual(expectOk(await c.roleHasPermission('r', 'p')), { has_permission: true });
  });

  test('POST on an existing edge, active or pending, with or without a window, is 409; nothing stored', async () => {
    const c = await seeded();
    const nb = inSeconds(3600);
    expectOk(await onEdge(c, 'POST', member('later', 'r'), { not_before: sent(nb) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'soon'), { not_before: sent(nb) }), 201);
    const before = await storedBy(c);
    for (const [edge, name] of [
      [member('later', 'r'), 'later'],
      [grantOf('r', 'soon'), 'soon'],
      [grantOf('r', 'p'), 'p'],
    ] as const) {
      for (const body of [undefined, {}, { not_before: sent(nb + HOUR) }, { expires_at: sent(nb + DAY) }]) {
        expectError(await onEdge(c, 'POST', edge, body), 409, [name], 6, `POST ${JSON.stringify(edge)} ${JSON.stringify(body)}`);
      }
    }
    await assertNothingStored(c, before, '409 on existing edges');
  });

  test('DELETE removes a pending edge (200, §5 data); then it is gone', async () => {
    const c = await seeded();
    const nb = inSeconds(3600);
    expectOk(await onEdge(c, 'POST', member('later', 'r'), { not_before: sent(nb) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'soon'), { not_before: sent(nb) }), 201);
    assert.deepEqual(expectOk(await onEdge(c, 'DELETE', member('later', 'r'))), { user: 'later', role: 'r', revision: 7 });
    assert.deepEqual(expectOk(await onEdge(c, 'DELETE', grantOf('r', 'soon'))), { role: 'r', permission: 'soon', revision: 8 });
    assert.deepEqual(expectOk(await c.isMember('later', 'r')), { is_member: false });
    assert.deepEqual(expectOk(await c.roleHasPermission('r', 'soon')), { has_permission: false });
    assert.deepEqual(expectOk(await windowsPage(c)), []);
    expectError(await onEdge(c, 'DELETE', member('later', 'r')), 404, ['later'], 8);
  });
});

describe('PUT', () => {
  for (const kind of ['membership', 'permission'] as const) {
    const edge: Edge = kind === 'membership' ? member('alice', 'r') : grantOf('r', 'w');
    const [created, replaced] = kind === 'membership' ? ['membership.add', 'membership.window'] : ['permission.grant', 'permission.window'];

    test(`${kind}: 201 when created, 200 when replaced, {} or no body makes it permanent; each +1 revision and a change`, async () => {
      const c = await seeded();
      const ex = inSeconds(3600);
      const nb = inSeconds(600);
      const first = await onEdge(c, 'PUT', edge, { expires_at: sent(ex) });
      assert.deepEqual(expectOk(first, 201), edgeData(edge, 5, { expiresAt: ex }));
      const second = await onEdge(c, 'PUT', edge, { not_before: sent(nb), expires_at: sent(ex + HOUR) });
      assert.deepEqual(expectOk(second, 200), edgeData(edge, 6, { notBefore: nb, expiresAt: ex + HOUR }));
      assert.deepEqual(expectOk(await onEdge(c, 'PUT', edge, {}), 200), edgeData(edge, 7));
      assert.deepEqual(expectOk(await onEdge(c, 'PUT', edge, { expires_at: sent(ex) }), 200), edgeData(edge, 8, { expiresAt: ex }));
      const bare = await c.request('PUT', edgePath(edge), { rawBody: '', contentType: 'application/json' });
      assert.deepEqual(expectOk(bare, 200), edgeData(edge, 9));
      assert.deepEqual(expectOk(await onEdge(c, 'PUT', edge), 200), edgeData(edge, 10), 'PUT of the same (no) window is still a change');
      const now = expectOk(await onEdge(c, 'GET', edge));
      assert.deepEqual(now, kind === 'membership' ? { is_member: true } : { has_permission: true });

      const rows = (await changesSince(c, 4)).map(({ timestamp: _t, ...rest }) => rest);
      const names = kind === 'membership' ? { role: 'r', user: 'alice' } : { role: 'r', permission: 'w' };
      assert.deepEqual(rows, [
        { revision: 5, op: created, ...names, expires_at: echoed(ex) },
        { revision: 6, op: replaced, ...names, not_before: echoed(nb), expires_at: echoed(ex + HOUR) },
        { revision: 7, op: replaced, ...names },
        { revision: 8, op: replaced, ...names, expires_at: echoed(ex) },
        { revision: 9, op: replaced, ...names },
        { revision: 10, op: replaced, ...names },
      ]);
    });

    test(`${kind}: PUT on a missing role is 404 naming the role; nothing stored`, async () => {
      const c = await seeded();
      const before = await storedBy(c);
      const ghost: Edge = kind === 'membership' ? member('alice', 'ghost') : grantOf('ghost', 'w');
      for (const body of [undefined, {}, { expires_at: sent(inSeconds(60)) }]) {
        const res = await onEdge(c, 'PUT', ghost, body);
        expectError(res, 404, ['ghost'], 4);
        assert.equal(res.error, `Role 'ghost' does not exist`);
      }
      await assertNothingStored(c, before, 'PUT on a missing role');
    });
  }

  test('a PUT is audited as the change it made: *.add / *.grant when it created, *.window when it replaced', async () => {
    const c = await seeded();
    expectOk(await onEdge(c, 'PUT', member('alice', 'r'), {}), 201);
    expectOk(await onEdge(c, 'PUT', member('alice', 'r'), { expires_at: sent(inSeconds(60)) }), 200);
    expectOk(await onEdge(c, 'PUT', grantOf('r', 'w'), { expires_at: sent(inSeconds(60)) }), 201);
    expectOk(await onEdge(c, 'PUT', grantOf('r', 'w'), {}), 200);
    const rows = (await auditAll(c)).slice(0, 4).reverse();
    assert.deepEqual(
      rows.map((r) => [r.action, r.resource, r.status, r.revision]),
      [
        ['membership.add', '/api/membership/alice/r', 201, 5],
        ['membership.window', '/api/membership/alice/r', 200, 6],
        ['permission.grant', '/api/permission/r/w', 201, 7],
        ['permission.window', '/api/permission/r/w', 200, 8],
      ],
    );
  });

  test('the edge routes take PUT: a method they do not take is 405 whose Allow lists it', async () => {
    const c = fresh();
    for (const path of ['/api/membership/u/r', '/api/permission/r/p']) {
      const res = await c.request('PATCH', path);
      expectError(res, 405);
      const allow = allowOf(res.headers);
      for (const m of ['DELETE', 'GET', 'POST', 'PUT']) assert.ok(allow.includes(m), `${path}: Allow ${allow.join(',')} lacks ${m}`);
    }
  });
});

describe('reads count only active edges', () => {
  /** alice: active r (until ex); bob: pending r; carol: permanent s; r grants p, pending w, expiring e. */
  async function mixed(): Promise<{ c: RbacClient; nb: number; ex: number }> {
    const c = await seeded();
    const nb = inSeconds(3600);
    const ex = inSeconds(7200);
    expectOk(await onEdge(c, 'POST', member('alice', 'r'), { expires_at: sent(ex) }), 201);
    expectOk(await onEdge(c, 'POST', member('bob', 'r'), { not_before: sent(nb) }), 201);
    expectOk(await c.addMember('carol', 's'), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'w'), { not_before: sent(nb), expires_at: sent(ex) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'e'), { expires_at: sent(ex) }), 201);
    return { c, nb, ex };
  }

  test('edge lists show active edges; windowed items carry their window, others only their name', async () => {
    const { c, ex } = await mixed();
    assert.deepEqual(expectOk(await c.members('r')), [{ user: 'alice', expires_at: echoed(ex) }]);
    assert.deepEqual(expectOk(await c.members('s')), [{ user: 'carol' }]);
    assert.deepEqual(expectOk(await c.rolePermissions('r')), [{ name: 'e', expires_at: echoed(ex) }, { name: 'p' }]);
    assert.deepEqual(expectOk(await c.userRoles('alice')), [{ role: 'r', expires_at: echoed(ex) }]);
    assert.deepEqual(expectOk(await c.userRoles('bob')), []);
    assert.deepEqual(expectOk(await c.userRoles('carol')), [{ role: 's' }]);
  });

  test('derived lists, checks and explain count only active edges, and carry no window', async () => {
    const { c } = await mixed();
    assert.deepEqual(expectOk(await c.userPermissions('alice')), [{ name: 'e' }, { name: 'p' }]);
    assert.deepEqual(expectOk(await c.userPermissions('bob')), []);
    assert.deepEqual(expectOk(await c.whichUsersCan('p')), [{ user: 'alice' }]);
    assert.deepEqual(expectOk(await c.whichUsersCan('w')), []);
    assert.deepEqual(expectOk(await c.whichRolesCan('e')), [{ role: 'r' }]);
    assert.deepEqual(expectOk(await c.whichRolesCan('w')), []);
    assert.deepEqual(expectOk(await c.hasPermission('alice', 'p')), { has_permission: true });
    assert.deepEqual(expectOk(await c.hasPermission('bob', 'p')), { has_permission: false });
    assert.deepEqual(expectOk(await c.hasPermission('alice', 'w')), { has_permission: false });
    const batch = expectOk(
      await c.check([
        { user: 'alice', permission: 'e' },
        { user: 'bob', permission: 'p' },
        { user: 'alice', permission: 'w' },
      ]),
    );
    assert.deepEqual(
      batch.results.map((r) => r.has_permission),
      [true, false, false],
    );
    assert.deepEqual(expectOk(await c.explain('bob', 'p')).granted_by, []);
    assert.deepEqual(expectOk(await c.explain('alice', 'p')).granted_by, ['r']);
    assert.deepEqual(expectOk(await c.canRun('bob', 'p')), { can_run: false });
    assert.deepEqual(expectOk(await c.workflowUsers('p')), [{ user: 'alice' }]);
    const decide = async (user: string, permission: string): Promise<boolean | undefined> =>
      (await c.evaluation({ subject: { type: 'user', id: user }, action: { name: permission }, resource: { type: 'doc', id: '1' } })).value?.decision;
    assert.deepEqual([await decide('alice', 'p'), await decide('bob', 'p'), await decide('alice', 'w')], [true, false, false]);
    const who = await c.searchSubjects({ subject: { type: 'user' }, action: { name: 'p' }, resource: { type: 'doc', id: '1' } });
    assert.deepEqual(who.value?.results, [{ type: 'user', id: 'alice' }]);
  });
});

describe('GET /api/windows', () => {
  test('every edge with a boundary ahead, by next boundary, ties by kind, role, then user or permission', async () => {
    const c = await seeded();
    const t1 = inSeconds(600);
    const t2 = inSeconds(1200);
    const t3 = inSeconds(1800);
    expectOk(await c.addMember('permanent', 'r'), 201);
    expectOk(await onEdge(c, 'POST', member('past-start', 'r'), { not_before: sent(inSeconds(-60)) }), 201);
    expectOk(await onEdge(c, 'POST', member('zed', 's'), { expires_at: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('s', 'x'), { expires_at: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', member('amy', 's'), { expires_at: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'y'), { expires_at: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', member('bo', 'r'), { expires_at: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'pending'), { not_before: sent(t1), expires_at: sent(t3) }), 201);
    expectOk(await onEdge(c, 'POST', member('late', 'r'), { not_before: sent(t3) }), 201);
    const want: WindowItem[] = [
      { kind: 'permission', role: 'r', permission: 'pending', not_before: echoed(t1), expires_at: echoed(t3) },
      { kind: 'membership', role: 'r', user: 'bo', expires_at: echoed(t2) },
      { kind: 'membership', role: 's', user: 'amy', expires_at: echoed(t2) },
      { kind: 'membership', role: 's', user: 'zed', expires_at: echoed(t2) },
      { kind: 'permission', role: 'r', permission: 'y', expires_at: echoed(t2) },
      { kind: 'permission', role: 's', permission: 'x', expires_at: echoed(t2) },
      { kind: 'membership', role: 'r', user: 'late', not_before: echoed(t3) },
    ];
    const all = await windowsPage(c);
    assert.deepEqual(expectOk(all), want);
    expectRev(all, 13);
    assert.equal(all.nextCursor, undefined);

    const paged: WindowItem[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await windowsPage(c, cursor === undefined ? { limit: 3 } : { limit: 3, cursor });
      const items = expectOk(res);
      assert.ok(items.length <= 3, `page of ${items.length}`);
      paged.push(...items);
      cursor = res.nextCursor;
      if (cursor === undefined) break;
    }
    assert.deepEqual(paged, want);
  });

  test('an empty client has no windows; bad limit or cursor is 400', async () => {
    const c = fresh();
    assert.deepEqual(expectOk(await windowsPage(c)), []);
    const d = await seeded();
    for (const q of ['limit=0', 'limit=10001', 'limit=x', 'limit=-1', 'cursor=garbage', 'limit=1&cursor=%00']) {
      expectError(await d.request('GET', `/api/windows?${q}`), 400, [q.startsWith('limit') && !q.includes('cursor') ? 'limit' : 'cursor'], 4, q);
    }
    // A cursor of another route, or of another client, is 400.
    expectOk(await d.createRole('t'), 201);
    const roles = await d.listRoles({ limit: 1 });
    assert.ok(roles.nextCursor !== undefined);
    expectError(await windowsPage(d, { limit: 1, cursor: roles.nextCursor }), 400, ['cursor']);
    for (const u of ['a', 'b']) expectOk(await onEdge(d, 'POST', member(u, 'r'), { expires_at: sent(inSeconds(60)) }), 201);
    const page = await windowsPage(d, { limit: 1 });
    assert.ok(page.nextCursor !== undefined, 'a cut page has next_cursor');
    expectError(await windowsPage(c, { limit: 1, cursor: page.nextCursor }), 400, ['cursor']);
  });
});

describe('bad windows are 400 naming the field; nothing stored', () => {
  const malformed = [
    '2030-01-01',
    '2030-01-01T00:00:00',
    '2030-01-01 00:00:00Z',
    '2030-01-01T00:00:00.1234567Z',
    '2030-02-30T00:00:00Z',
    '2030-13-01T00:00:00Z',
    '2030-01-01T24:00:01Z',
    '2030-01-01T00:60:00Z',
    '2030-01-01T00:00:00+25:00',
    '2030-01-01T00:00:00+0100',
    '2030-01-01T00:00:00.Z',
    'tomorrow',
    '',
    ' 2030-01-01T00:00:00Z',
    '1893456000',
  ];
  const notStrings: unknown[] = [1893456000, null, true, [], {}, ['2030-01-01T00:00:00Z']];

  for (const method of ['POST', 'PUT']) {
    test(`${method}: malformed or non-string bounds, order and range violations, unknown keys`, async () => {
      const c = await seeded();
      const before = await storedBy(c);
      for (const edge of [member('alice', 'r'), grantOf('r', 'w')]) {
        for (const field of ['not_before', 'expires_at']) {
          for (const value of [...malformed, ...notStrings]) {
            expectError(await onEdge(c, method, edge, { [field]: value }), 400, [field], 4, `${method} ${field}=${JSON.stringify(value)}`);
          }
        }
        const soon = inSeconds(600);
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ not_before: sent(soon), expires_at: sent(soon) }, 'expires_at'],
          [{ not_before: sent(soon + 1000), expires_at: sent(soon) }, 'expires_at'],
          [{ expires_at: sent(inSeconds(-1)) }, 'expires_at'],
          [{ not_before: sent(inSeconds(-7200)), expires_at: sent(inSeconds(-3600)) }, 'expires_at'],
          [{ expires_at: sent(Date.now() + 3654 * DAY) }, 'expires_at'],
          [{ not_before: sent(Date.now() + 3654 * DAY) }, 'not_before'],
          [{ not_before: '9999-12-31T23:59:59Z' }, 'not_before'],
          [{ expires_at: '9999-12-31T23:59:59Z' }, 'expires_at'],
          // Unknown keys (§4): 400, whatever the error names.
          [{ window: {} }, ''],
          [{ not_before: sent(soon), description: 'x' }, ''],
          [{ Expires_at: sent(soon) }, ''],
        ];
        for (const [body, field] of cases) {
          expectError(await onEdge(c, method, edge, body), 400, field === '' ? [] : [field], 4, `${method} ${JSON.stringify(body)}`);
        }
        for (const raw of ['[]', '"2030-01-01T00:00:00Z"', '{', 'null']) {
          expectError(await c.request(method, edgePath(edge), { rawBody: raw, contentType: 'application/json' }), 400, [], 4, raw);
        }
        expectError(await c.request(method, edgePath(edge), { rawBody: '{}', contentType: 'text/plain' }), 415, [], 4);
      }
      await assertNothingStored(c, before, `${method} with bad windows`);
    });
  }

  test('a body error comes before the operation: bad window on a missing role is 400, on an existing edge 400', async () => {
    const c = await seeded();
    const before = await storedBy(c);
    expectError(await onEdge(c, 'PUT', member('alice', 'ghost'), { expires_at: 'x' }), 400, ['expires_at']);
    expectError(await onEdge(c, 'POST', grantOf('ghost', 'w'), { not_before: 'x' }), 400, ['not_before']);
    expectError(await onEdge(c, 'POST', grantOf('r', 'p'), { expires_at: sent(inSeconds(-5)) }), 400, ['expires_at']);
    await assertNothingStored(c, before, 'bad windows before 404/409');
    assert.equal(await revisionOf(c), 4);
  });

  test('just under ten years ahead is accepted', async () => {
    const c = await seeded();
    const far = Date.now() + 3650 * DAY - DAY;
    assert.equal(expectOk(await onEdge(c, 'POST', member('far', 'r'), { expires_at: sent(far) }), 201).expires_at, echoed(far));
  });
});

answersMatchTheDocument('every answer this suite received matches /openapi.json: status, body schema and headers', 150);
