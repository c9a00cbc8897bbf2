/**
 * Writes and the changelog at the store port (DESIGN.md, "one store conformance suite"): every
 * change kind committed or refused as a value, revisions + 1 per write and unchanged on refusal,
 * the changelog and its pages, deletes that take grants and memberships along, isolated clients,
 * names and descriptions kept exactly. Both adapters must give the same outcomes (compared by
 * conformance.test.ts through {@link outcomes}).
 */
import assert from 'node:assert/strict';
import type { Change, ChangeRecord, WriteOutcome } from '../../../../src/authz/changes.ts';
import { TenantGraph } from '../../../../src/authz/graph.ts';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import type { Store } from '../../../../src/store/port.ts';
import { TIMESTAMP_RE } from '../../../helpers/contract.ts';
import { writeOne } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant } from '../../../helpers/tenants.ts';
import { graphOfSnapshot } from '../../../helpers/graphs.ts';

const tenant = randomTenant;

/** Expected outcome: the revision a write commits at, or the refusal's code and the unchanged revision. */
type Expect = number | readonly [code: string, revision: number];

/** Every change kind, applied and refused, on one tenant. */
const SCRIPT: ReadonlyArray<readonly [Change, Expect]> = [
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'permission.revoke', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'membership.remove', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'role.delete', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'role.create', role: 'admin', description: 'Administrators' }, 1],
  [{ op: 'role.create', role: 'admin', description: 'again' }, ['ERR_AUTHZ_ROLE_EXISTS', 1]],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, 2],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_GRANT_EXISTS', 2]],
  [{ op: 'permission.revoke', role: 'admin', permission: 'write' }, ['ERR_AUTHZ_GRANT_NOT_FOUND', 2]],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, 3],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_MEMBERSHIP_EXISTS', 3]],
  [{ op: 'membership.remove', user: 'bob', role: 'admin' }, ['ERR_AUTHZ_MEMBERSHIP_NOT_FOUND', 3]],
  [{ op: 'permission.grant', role: 'admin', permission: 'write' }, 4],
  [{ op: 'permission.revoke', role: 'admin', permission: 'write' }, 5],
  [{ op: 'membership.add', user: 'bob', role: 'admin' }, 6],
  [{ op: 'membership.remove', user: 'bob', role: 'admin' }, 7],
  [{ op: 'role.create', role: 'Admin', description: '' }, 8],
  [{ op: 'role.delete', role: 'admin' }, 9],
  [{ op: 'role.delete', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 9]],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 9]],
  [{ op: 'role.create', role: 'admin', description: '' }, 10],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, 11],
];

const DESCRIPTIONS = ['', 'Ünïcødé — ✓', '😀'.repeat(1024), 'x'.repeat(1024), 'line1\nline2 "quoted" \\ \'single\' </script> \u0000 end', '  spaced  '];

/** Outcomes of SCRIPT per backend, compared with each other at the end. */
export const outcomes = new Map<string, WriteOutcome[]>();

async function runScript(store: Store, t: TenantId): Promise<WriteOutcome[]> {
  const seen: WriteOutcome[] = [];
  for (const [change, expect] of SCRIPT) {
    const outcome = await writeOne(store, t, change);
    seen.push(outcome);
    const what = JSON.stringify(change);
    if (typeof expect === 'number') {
      assert.ok(outcome.ok, `${what} commits`);
      assert.equal(outcome.revision, expect, `${what} commits at ${expect}`);
      assert.deepEqual(outcome.changes, [change]);
    } else {
      assert.ok(!outcome.ok, `${what} is refused`);
      assert.equal(outcome.error.code, expect[0], what);
      assert.match(outcome.error.message, new RegExp(`'${change.role}'`), `${what}: the message names the role`);
      assert.equal(outcome.revision, expect[1], `${what}: refused at the current revision`);
    }
    assert.equal(await store.revision(t), typeof expect === 'number' ? expect : expect[1]);
  }
  return seen;
}

export function writesCases(topic: StoreTopic): void {
  const { backend, it } = topic;

  it('an unknown tenant is empty at revision 0', async () => {
    const t = tenant();
    assert.deepEqual(await topic.store.load(t), { revision: 0, roles: [], grants: [], memberships: [], windows: [] });
    assert.equal(await topic.store.revision(t), 0);
    assert.deepEqual(await topic.store.changes(t, 0, 100), []);
    assert.deepEqual(await topic.store.revisions([t]), []);
    assert.deepEqual(await topic.store.revisions([]), []);
  });

  it('writeMany: a batch settles each write as one write at a time would, in order per tenant', async () => {
    const [a, b] = [tenant(), tenant()];
    // The script on two tenants, interleaved, as one batch.
    const writes = SCRIPT.flatMap(([change]) => [
      { tenant: a, changes: [change] },
      { tenant: b, changes: [change] },
    ]);
    const settled = await topic.store.writeMany(writes);
    assert.equal(settled.length, writes.length);
    settled.forEach((s, i) => {
      const [change, expect] = SCRIPT[Math.floor(i / 2)] as (typeof SCRIPT)[number];
      const what = `${JSON.stringify(change)} on tenant ${i % 2 === 0 ? 'a' : 'b'}`;
      assert.ok(s.ok, `${what}: settled as a value, not a failure`);
      if (typeof expect === 'number') {
        assert.ok(s.value.ok, `${what} commits`);
        assert.equal(s.value.revision, expect, `${what} commits at ${expect}`);
      } else {
        assert.ok(!s.value.ok, `${what} is refused`);
        assert.equal(s.value.error.code, expect[0], what);
        assert.equal(s.value.revision, expect[1], what);
      }
    });
    for (const t of [a, b]) {
      assert.equal(await topic.store.revision(t), 11);
      assert.deepEqual(
        (await topic.store.changes(t, 0, 100)).map((c) => c.revision),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      );
    }
    assert.deepEqual(await topic.store.load(a), await topic.store.load(b));
    assert.deepEqual(await topic.store.writeMany([]), []);
  });

  it('every change kind commits or is refused as a value; revision + 1 per write, unchanged on refusal', async () => {
    const t = tenant();
    outcomes.set(backend.name, await runScript(topic.store, t));
    assert.deepEqual(await topic.store.load(t), {
      revision: 11,
      roles: [
        ['Admin', ''],
        ['admin', ''],
      ],
      grants: [],
      memberships: [['alice', 'admin']],
      windows: [],
    });
  });

  it('the changelog holds every committed change, in order, and nothing refused', async () => {
    const t = tenant();
    await runScript(topic.store, t);
    const committed = SCRIPT.filter(([, e]) => typeof e === 'number').map(([c]) => c);
    const log = await topic.store.changes(t, 0, 1000);
    assert.deepEqual(
      log.map((r) => r.revision),
      committed.map((_, i) => i + 1),
    );
    assert.deepEqual(
      log.map((r) => r.change),
      committed,
    );
    for (const r of log) assert.match(r.at, TIMESTAMP_RE);
    assert.deepEqual(
      [...log.map((r) => r.at)].sort(),
      log.map((r) => r.at),
      'commit times do not go back',
    );
  });

  it('changes(since, limit) pages through the changelog', async () => {
    const t = tenant();
    await runScript(topic.store, t);
    const revs = async (since: number, limit: number): Promise<number[]> => (await topic.store.changes(t, since, limit)).map((r) => r.revision);
    assert.deepEqual(await revs(0, 4), [1, 2, 3, 4]);
    assert.deepEqual(await revs(4, 4), [5, 6, 7, 8]);
    assert.deepEqual(await revs(8, 4), [9, 10, 11]);
    assert.deepEqual(await revs(11, 4), []);
    assert.deepEqual(await revs(100, 4), []);
    assert.deepEqual(await revs(10, 1), [11]);
    assert.deepEqual(await topic.store.changes(tenant(), 0, 10), []);
  });

  it('deleting a role removes its grants and memberships in the same write', async () => {
    const t = tenant();
    for (const c of [
      { op: 'role.create', role: 'r1', description: 'one' },
      { op: 'role.create', role: 'r2', description: 'two' },
      { op: 'permission.grant', role: 'r1', permission: 'p1' },
      { op: 'permission.grant', role: 'r1', permission: 'p2' },
      { op: 'permission.grant', role: 'r2', permission: 'p1' },
      { op: 'membership.add', user: 'alice', role: 'r1' },
      { op: 'membership.add', user: 'alice', role: 'r2' },
      { op: 'membership.add', user: 'bob', role: 'r1' },
    ] as const) {
      assert.ok((await writeOne(topic.store, t, c)).ok);
    }
    assert.deepEqual(await writeOne(topic.store, t, { op: 'role.delete', role: 'r1' }), {
      ok: true,
      revision: 9,
      changes: [{ op: 'role.delete', role: 'r1' }],
      effects: [{ permissionsRemoved: 2, membershipsRemoved: 2 }],
    });
    assert.deepEqual(await topic.store.load(t), { revision: 9, roles: [['r2', 'two']], grants: [['r2', 'p1']], memberships: [['alice', 'r2']], windows: [] });
    assert.deepEqual(
      (await topic.store.changes(t, 8, 10)).map((r) => r.change),
      [{ op: 'role.delete', role: 'r1' }],
    );
    const empty = await writeOne(topic.store, t, { op: 'role.create', role: 'r3', description: '' });
    const del = await writeOne(topic.store, t, { op: 'role.delete', role: 'r3' });
    assert.deepEqual(del.ok ? [del.revision, del.effects[0]?.permissionsRemoved, del.effects[0]?.membershipsRemoved] : del, [11, 0, 0]);
    assert.equal(empty.revision, 10);
  });

  it('tenants are isolated: roles, refusals, revisions', async () => {
    const [a, b] = [tenant(), tenant()];
    await writeOne(topic.store, a, { op: 'role.create', role: 'admin', description: '' });
    await writeOne(topic.store, a, { op: 'permission.grant', role: 'admin', permission: 'read' });
    const refused = await writeOne(topic.store, b, { op: 'role.delete', role: 'admin' });
    assert.deepEqual(refused.ok ? undefined : [refused.error.code, refused.revision], ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]);
    assert.equal((await writeOne(topic.store, b, { op: 'role.create', role: 'admin', description: 'b' })).revision, 1);
    assert.equal((await writeOne(topic.store, b, { op: 'membership.add', user: 'u', role: 'admin' })).revision, 2);
    assert.deepEqual(await topic.store.load(a), { revision: 2, roles: [['admin', '']], grants: [['admin', 'read']], memberships: [], windows: [] });
    assert.deepEqual(await topic.store.load(b), { revision: 2, roles: [['admin', 'b']], grants: [], memberships: [['u', 'admin']], windows: [] });
    assert.deepEqual(
      (await topic.store.revisions([a, b, tenant()])).sort(),
      [
        [a, 2],
        [b, 2],
      ].sort(),
    );
    assert.deepEqual(
      (await topic.store.changes(b, 0, 10)).map((r) => r.change.op),
      ['role.create', 'membership.add'],
    );
  });

  it('names and descriptions come back exactly as written', async () => {
    const t = tenant();
    const names = ['L'.repeat(128), 'x|y', 'a.b:c@d+e_f-g', 'Z', '_', 'a'];
    for (const [i, description] of DESCRIPTIONS.entries()) {
      assert.ok((await writeOne(topic.store, t, { op: 'role.create', role: `r${i}`, description })).ok);
    }
    for (const n of names) {
      assert.ok((await writeOne(topic.store, t, { op: 'permission.grant', role: 'r0', permission: n })).ok);
      assert.ok((await writeOne(topic.store, t, { op: 'membership.add', user: n, role: 'r1' })).ok);
    }
    const snap = await topic.store.load(t);
    assert.deepEqual(
      snap.roles,
      DESCRIPTIONS.map((d, i) => [`r${i}`, d]),
    );
    const binary = [...names].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    assert.deepEqual(
      snap.grants,
      binary.map((n) => ['r0', n]),
      'in key order, by code point',
    );
    assert.deepEqual(
      snap.memberships,
      binary.map((n) => [n, 'r1']),
    );
    const created = (await topic.store.changes(t, 0, DESCRIPTIONS.length)).map((r: ChangeRecord) =>
      r.change.op === 'role.create' ? r.change.description : undefined,
    );
    assert.deepEqual(created, DESCRIPTIONS);
  });

  it('loadGraph builds the graph that load holds: one read, as buffers and as rows', async () => {
    const t = tenant();
    const unknown = TenantGraph.fromImage(await topic.store.loadGraph(tenant()));
    assert.deepEqual([unknown.revision, unknown.roles()], [0, []]);
    const roles = ['r1', 'r2', 'r3', 'gone'];
    const users = ['a', 'b', 'c|d', 'e.f:g@h+i_j-k', 'L'.repeat(128)];
    const changes: Change[] = [
      ...roles.map((role) => ({ op: 'role.create' as const, role, description: `about ${role}` })),
      ...roles.flatMap((role, i) => ['p1', 'p2', `p${i + 3}`].map((permission) => ({ op: 'permission.grant' as const, role, permission }))),
      ...users.flatMap((user, i) => roles.filter((_, j) => (i + j) % 2 === 0).map((role) => ({ op: 'membership.add' as const, user, role }))),
      { op: 'role.delete', role: 'gone' },
      { op: 'membership.remove', user: 'a', role: 'r1' },
    ];
    for (const change of changes) assert.ok((await writeOne(topic.store, t, change)).ok, JSON.stringify(change));
    const built = TenantGraph.fromImage(await topic.store.loadGraph(t));
    const loaded = graphOfSnapshot(await topic.store.load(t));
    assert.equal(built.revision, changes.length);
    assert.deepEqual(built.roles(), loaded.roles());
    for (const role of roles) {
      assert.deepEqual(
        [built.members(role), built.rolePermissions(role), built.description(role)],
        [loaded.members(role), loaded.rolePermissions(role), loaded.description(role)],
        role,
      );
    }
    for (const user of [...users, 'nobody'])
      assert.deepEqual([built.userRoles(user), built.userPermissions(user)], [loaded.userRoles(user), loaded.userPermissions(user)], user);
    for (const p of ['p1', 'p2', 'p3', 'p5', 'p6']) assert.deepEqual(built.whichUsersCan(p), loaded.whichUsersCan(p), p);
    assert.deepEqual(built.userRoles('a'), ['r3']);
  });
}
