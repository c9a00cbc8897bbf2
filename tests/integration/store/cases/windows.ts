/**
 * Write requests of many changes, If-Match, windows and their boundaries at the store port
 * (docs/api.md §12), on SQLite and PostgreSQL alike: a request is all or nothing at one revision
 * with a changelog and an audit row per change; a refusal names the change; windows are stored,
 * replaced, read back by load() and changes(); each boundary is committed once however many
 * stores call at the same moment, and a replaced window is left alone; field encryption answers
 * all of it in plaintext.
 */
import assert from 'node:assert/strict';
import type { AuditOfWrite } from '../../../../src/audit/record.ts';
import type { Change, WriteOutcome } from '../../../../src/authz/changes.ts';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import { FieldCipher } from '../../../../src/crypto/field-cipher.ts';
import { fromWire } from '../../../../src/errors/index.ts';
import type { BoundaryCommitted, PendingWrite, Store } from '../../../../src/store/port.ts';
import { EncryptedStore } from '../../../../src/store/wrappers/encrypted.ts';
import { wireOfMicros } from '../../../../src/store/edge-windows.ts';
import { rawCells } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant as tenant } from '../../../helpers/tenants.ts';

const HOUR = 3_600_000_000;
/** Now, in microseconds since the epoch (a whole millisecond, as a wire timestamp round-trips it). */
const nowMicros = (): number => Date.now() * 1000;

const AUDIT: AuditOfWrite = { action: 'batch', resource: '/api/writes', status: 200, credential: 'key:0123456789ab', requestId: 'req-1', ip: '::1' };

/** One request through the port; its failure thrown as the error it crossed as. */
async function request(store: Store, w: PendingWrite): Promise<WriteOutcome> {
  const [settled] = await store.writeMany([w]);
  if (settled === undefined) throw new Error('writeMany settled nothing');
  if (!settled.ok) throw fromWire(settled.error);
  return settled.value;
}

const roleOf = (role: string): Change => ({ op: 'role.create', role, description: '' });

/** A fresh database's store, and a second store on the same database. */
async function twoStores(topic: StoreTopic): Promise<[Store, Store]> {
  const settings = await topic.backend.fresh();
  return [topic.open(settings), topic.open(settings)];
}

export function windowsCases(topic: StoreTopic): void {
  const { it } = topic;

  it('a request commits all its changes at one revision, a changelog and an audit row per change in order', async () => {
    const t = tenant();
    const changes: Change[] = [roleOf('r'), { op: 'permission.grant', role: 'r', permission: 'p' }, { op: 'membership.add', user: 'u', role: 'r' }];
    const outcome = await request(topic.store, { tenant: t, changes, audit: AUDIT });
    assert.deepEqual(outcome, { ok: true, revision: 1, changes, effects: [{}, {}, {}] });
    const log = await topic.store.changes(t, 0, 100);
    assert.deepEqual(
      log.map((r) => [r.revision, r.change]),
      changes.map((c) => [1, c]),
    );
    assert.equal(new Set(log.map((r) => r.at)).size, 1, 'one commit time');
    const audit = await topic.store.audit(t, undefined, 10);
    assert.deepEqual(audit.map((r) => [r.action, r.revision, r.resource, r.requestId]).reverse(), [
      ['role.create', 1, '/api/writes', 'req-1'],
      ['permission.grant', 1, '/api/writes', 'req-1'],
      ['membership.add', 1, '/api/writes', 'req-1'],
    ]);
    // A page never ends inside a revision.
    assert.equal((await topic.store.changes(t, 0, 1)).length, 3);
  });

  it('the first change refused refuses the whole request with its index; nothing written; other requests unaffected', async () => {
    const t = tenant();
    const bad: Change[] = [roleOf('r'), { op: 'permission.grant', role: 'r', permission: 'p' }, { op: 'permission.grant', role: 'r', permission: 'p' }];
    const settled = await topic.store.writeMany([
      { tenant: t, changes: bad, audit: AUDIT },
      { tenant: t, changes: [roleOf('a')] },
      { tenant: t, changes: [{ op: 'membership.add', user: 'u', role: 'nope' }, roleOf('b')] },
      { tenant: t, changes: [roleOf('b')] },
    ]);
    const values = settled.map((s) => (s.ok ? s.value : assert.fail('settled as a failure')));
    assert.deepEqual(
      values.map((v) => (v.ok ? v.revision : [v.error.code, v.index, v.revision])),
      [['ERR_AUTHZ_GRANT_EXISTS', 2, 0], 1, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0, 1], 2],
    );
    const snap = await topic.store.load(t);
    assert.deepEqual(snap.roles, [
      ['a', ''],
      ['b', ''],
    ]);
    assert.deepEqual(snap.grants, []);
    assert.deepEqual((await topic.store.audit(t, undefined, 10)).length, 0);
    // Refused on a tenant that never existed: still unknown.
    const fresh = tenant();
    const refused = await request(topic.store, { tenant: fresh, changes: bad });
    assert.ok(!refused.ok && refused.index === 2);
    assert.deepEqual(await topic.store.revisions([fresh]), []);
  });

  it('If-Match: a request commits only at the revision named, else ERR_CONSISTENCY_PRECONDITION_FAILED and nothing written', async () => {
    const t = tenant();
    assert.ok((await request(topic.store, { tenant: t, changes: [roleOf('r')], ifMatch: 0 })).ok);
    const stale = await request(topic.store, { tenant: t, changes: [roleOf('s')], ifMatch: 0, audit: AUDIT });
    assert.ok(!stale.ok);
    assert.equal(stale.error.code, 'ERR_CONSISTENCY_PRECONDITION_FAILED');
    assert.equal(stale.index, undefined);
    assert.equal(stale.revision, 1);
    assert.match(stale.error.message, /"0".*1/);
    assert.equal(await topic.store.revision(t), 1);
    assert.ok((await request(topic.store, { tenant: t, changes: [roleOf('s')], ifMatch: 1 })).ok);
  });

  it('windows: stored, read back by load() and changes(); a past notBefore dropped; 409 on a pending edge; revoke and role.delete take them', async () => {
    const t = tenant();
    const now = nowMicros();
    const [nb, exp] = [now + HOUR, now + 2 * HOUR];
    const grant: Change = { op: 'permission.grant', role: 'r', permission: 'p', notBefore: nb, expiresAt: exp };
    const add: Change = { op: 'membership.add', user: 'u', role: 'r', notBefore: now - HOUR, expiresAt: exp };
    const outcome = await request(topic.store, { tenant: t, changes: [roleOf('r'), grant, add] });
    assert.ok(outcome.ok);
    assert.deepEqual(outcome.changes[2], { op: 'membership.add', user: 'u', role: 'r', expiresAt: exp }, 'a notBefore already past is dropped');
    const snap = await topic.store.load(t);
    assert.deepEqual(snap.grants, [['r', 'p']]);
    assert.deepEqual(snap.memberships, [['u', 'r']]);
    assert.deepEqual(snap.windows, [
      { kind: 'permission', role: 'r', permission: 'p', notBefore: nb, expiresAt: exp },
      { kind: 'membership', user: 'u', role: 'r', expiresAt: exp },
    ]);
    assert.deepEqual(
      (await topic.store.changes(t, 0, 10)).map((r) => r.change),
      [roleOf('r'), grant, { op: 'membership.add', user: 'u', role: 'r', expiresAt: exp }],
    );
    const again = await request(topic.store, { tenant: t, changes: [{ op: 'permission.grant', role: 'r', permission: 'p' }] });
    assert.ok(!again.ok && again.error.code === 'ERR_AUTHZ_GRANT_EXISTS', 'a pending edge exists');
    assert.ok((await request(topic.store, { tenant: t, changes: [{ op: 'permission.revoke', role: 'r', permission: 'p' }] })).ok);
    assert.deepEqual((await topic.store.load(t)).windows, [{ kind: 'membership', user: 'u', role: 'r', expiresAt: exp }]);
    const del = await request(topic.store, { tenant: t, changes: [{ op: 'role.delete', role: 'r' }] });
    assert.ok(del.ok);
    assert.deepEqual(del.effects, [{ permissionsRemoved: 0, membershipsRemoved: 1 }]);
    assert.deepEqual((await topic.store.load(t)).windows, []);
  });

  it('*.window: creates an absent edge (committed as its creation), replaces a present one, {} makes it permanent, 404 without the role', async () => {
    const t = tenant();
    const exp = nowMicros() + HOUR;
    const set = (w: object): Change => ({ op: 'membership.window', user: 'u', role: 'r', ...w });
    const missing = await request(topic.store, { tenant: t, changes: [set({ expiresAt: exp })] });
    assert.ok(!missing.ok && missing.error.code === 'ERR_AUTHZ_ROLE_NOT_FOUND' && missing.index === 0);
    const created = await request(topic.store, { tenant: t, changes: [roleOf('r'), set({ expiresAt: exp })] });
    assert.ok(created.ok);
    assert.deepEqual(created.changes[1], { op: 'membership.add', user: 'u', role: 'r', expiresAt: exp });
    const replaced = await request(topic.store, { tenant: t, changes: [set({ expiresAt: exp + HOUR })] });
    assert.ok(replaced.ok);
    assert.deepEqual(replaced.changes, [set({ expiresAt: exp + HOUR })]);
    assert.deepEqual((await topic.store.load(t)).windows, [{ kind: 'membership', user: 'u', role: 'r', expiresAt: exp + HOUR }]);
    const permanent = await request(topic.store, { tenant: t, changes: [set({})] });
    assert.ok(permanent.ok && permanent.revision === 3);
    const snap = await topic.store.load(t);
    assert.deepEqual([snap.memberships, snap.windows], [[['u', 'r']], []]);
    assert.deepEqual(
      (await topic.store.changes(t, 2, 10)).map((r) => r.change),
      [set({})],
    );
    const grantWindow: Change = { op: 'permission.window', role: 'r', permission: 'p', expiresAt: exp };
    const granted = await request(topic.store, { tenant: t, changes: [grantWindow, grantWindow] });
    assert.ok(granted.ok);
    assert.deepEqual(
      granted.changes.map((c) => c.op),
      ['permission.grant', 'permission.window'],
    );
  });

  it('commitBoundaries: each due bound once, oldest first, timed at the boundary, audited by system', async () => {
    const [store] = await twoStores(topic);
    const t = tenant();
    const now = nowMicros();
    const [nb, exp] = [now + HOUR, now + 2 * HOUR];
    await request(store, {
      tenant: t,
      changes: [
        roleOf('r'),
        { op: 'permission.grant', role: 'r', permission: 'p', notBefore: nb, expiresAt: exp },
        { op: 'membership.add', user: 'u', role: 'r', expiresAt: exp + 1 },
      ],
    });
    assert.deepEqual(await store.commitBoundaries(now, 10), []);
    const first = await store.commitBoundaries(nb + 5, 10);
    assert.deepEqual(first, [
      { tenant: t, revision: 2, change: { op: 'permission.activate', role: 'r', permission: 'p', notBefore: nb }, at: wireOfMicros(nb) },
    ]);
    assert.deepEqual(await store.commitBoundaries(nb + 5, 10), [], 'committed once');
    assert.deepEqual((await store.load(t)).windows, [
      { kind: 'permission', role: 'r', permission: 'p', expiresAt: exp },
      { kind: 'membership', user: 'u', role: 'r', expiresAt: exp + 1 },
    ]);
    const limited = await store.commitBoundaries(exp + 10, 1);
    assert.deepEqual(
      limited.map((b) => [b.revision, b.change.op]),
      [[3, 'permission.expire']],
    );
    const rest = await store.commitBoundaries(exp + 10, 10);
    assert.deepEqual(
      rest.map((b) => [b.revision, b.change, b.at]),
      [[4, { op: 'membership.expire', user: 'u', role: 'r', expiresAt: exp + 1 }, wireOfMicros(exp + 1)]],
    );
    const snap = await store.load(t);
    assert.deepEqual([snap.revision, snap.grants, snap.memberships, snap.windows], [4, [], [], []]);
    const log = await store.changes(t, 1, 10);
    assert.deepEqual(
      log.map((r) => [r.revision, r.change.op, r.at]),
      [
        [2, 'permission.activate', wireOfMicros(nb)],
        [3, 'permission.expire', wireOfMicros(exp)],
        [4, 'membership.expire', wireOfMicros(exp + 1)],
      ],
    );
    assert.deepEqual(log[0]?.change, first[0]?.change);
    const audit = (await store.audit(t, undefined, 10)).filter((r) => r.credential === 'system');
    assert.deepEqual(audit.map((r) => [r.action, r.resource, r.status, r.revision, r.requestId, r.ip, r.at]).reverse(), [
      ['permission.activate', '/api/permission/r/p', 200, 2, '', '', wireOfMicros(nb)],
      ['permission.expire', '/api/permission/r/p', 200, 3, '', '', wireOfMicros(exp)],
      ['membership.expire', '/api/membership/u/r', 200, 4, '', '', wireOfMicros(exp + 1)],
    ]);
  });

  it('commitBoundaries: a window replaced before its bound is left alone; its new bound is committed', async () => {
    const [store] = await twoStores(topic);
    const t = tenant();
    const now = nowMicros();
    await request(store, { tenant: t, changes: [roleOf('r'), { op: 'permission.grant', role: 'r', permission: 'p', notBefore: now + HOUR }] });
    await request(store, { tenant: t, changes: [{ op: 'permission.window', role: 'r', permission: 'p', notBefore: now + 3 * HOUR }] });
    assert.deepEqual(await store.commitBoundaries(now + 2 * HOUR, 10), []);
    const later = await store.commitBoundaries(now + 4 * HOUR, 10);
    assert.deepEqual(
      later.map((b) => b.change),
      [{ op: 'permission.activate', role: 'r', permission: 'p', notBefore: now + 3 * HOUR }],
    );
    assert.equal(await store.revision(t), 3);
  });

  it('commitBoundaries from two stores at the same moment: every boundary committed exactly once', async () => {
    const [a, b] = await twoStores(topic);
    const now = nowMicros();
    const tenants: TenantId[] = [tenant(), tenant(), tenant()];
    for (const t of tenants) {
      const changes: Change[] = [roleOf('r')];
      for (let i = 0; i < 10; i++) changes.push({ op: 'membership.add', user: `u${i}`, role: 'r', notBefore: now + HOUR + i, expiresAt: now + 2 * HOUR + i });
      assert.ok((await request(a, { tenant: t, changes })).ok);
    }
    const all = (
      await Promise.all([a.commitBoundaries(now + 3 * HOUR, 100), b.commitBoundaries(now + 3 * HOUR, 100), a.commitBoundaries(now + 3 * HOUR, 100)])
    ).flat();
    const key = (c: BoundaryCommitted): string => `${c.tenant} ${JSON.stringify(c.change)}`;
    assert.equal(all.length, 60, 'activate and expire of 10 memberships in 3 tenants');
    assert.equal(new Set(all.map(key)).size, 60, 'none twice');
    for (const t of tenants) {
      assert.equal(await a.revision(t), 21);
      const revisions = all.filter((c) => c.tenant === t).map((c) => c.revision);
      assert.deepEqual(
        [...revisions].sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, i) => i + 2),
      );
      assert.deepEqual((await a.load(t)).memberships, []);
    }
    assert.deepEqual(await b.commitBoundaries(now + 3 * HOUR, 100), []);
  });

  it('workflow runs count only the edges active at their time, at one revision too (a bound passed, its change not committed)', async () => {
    const t = tenant();
    const t0 = Date.UTC(2030, 0, 1);
    const [minute, at] = [60_000, (ms: number): number => ms * 1000];
    await request(topic.store, {
      tenant: t,
      changes: [
        roleOf('r'),
        { op: 'permission.grant', role: 'r', permission: 'p', notBefore: at(t0 + minute), expiresAt: at(t0 + 3 * minute) },
        { op: 'membership.add', user: 'u1', role: 'r' },
        { op: 'membership.add', user: 'u2', role: 'r', expiresAt: at(t0 + 2 * minute) },
      ],
    });
    const schedule = { tenant: t, workflow: 'p', intervalSeconds: 60, webhookUrl: null, webhookSecret: 'whsec_x' };
    const audit = {
      tenant: t,
      at: '2030-01-01T00:00:00.000000',
      action: 'workflow.schedule',
      resource: '/x',
      status: 201,
      credential: 'k',
      requestId: 'r',
      ip: '',
    };
    await topic.store.putSchedule(schedule, t0, audit);
    const runAt = async (ms: number): Promise<unknown> => {
      const r = await topic.store.runSchedule({ tenant: t, workflow: 'p' }, ms, `msg_${ms}`);
      return r && [r.revision, r.usersCount, r.added, r.removed];
    };
    assert.deepEqual(await runAt(t0), [1, 0, [], []], 'the grant is pending');
    assert.deepEqual(await runAt(t0 + minute), [1, 2, ['u1', 'u2'], []], 'active from its notBefore, at the same revision');
    assert.deepEqual(await runAt(t0 + 2 * minute), [1, 1, [], ['u2']], "u2's membership expired");
    assert.deepEqual(await runAt(t0 + 3 * minute), [1, 0, [], ['u1']], 'the grant expired');
  });

  it('EncryptedStore: requests, windows, refusals, boundaries and their audit paths in plaintext; no name stored in plaintext', async () => {
    const settings = await topic.backend.fresh();
    const enc = new EncryptedStore(topic.open(settings), new FieldCipher('windows-test-password'));
    const t = tenant();
    const now = nowMicros();
    const grant: Change = { op: 'permission.grant', role: 'Readers', permission: 'doc:read', notBefore: now + HOUR };
    const add: Change = { op: 'membership.add', user: 'carol@example.com', role: 'Readers', expiresAt: now + 2 * HOUR };
    const outcome = await request(enc, { tenant: t, changes: [roleOf('Readers'), grant, add], audit: AUDIT });
    assert.deepEqual(outcome, { ok: true, revision: 1, changes: [roleOf('Readers'), grant, add], effects: [{}, {}, {}] });
    const refused = await request(enc, { tenant: t, changes: [{ op: 'membership.window', user: 'dave', role: 'Readers' }, add] });
    assert.deepEqual(refused.ok ? refused : [refused.index, refused.error.message], [1, "User 'carol@example.com' is already a member of role 'Readers'"]);
    assert.deepEqual((await enc.load(t)).windows, [
      { kind: 'permission', role: 'Readers', permission: 'doc:read', notBefore: now + HOUR },
      { kind: 'membership', user: 'carol@example.com', role: 'Readers', expiresAt: now + 2 * HOUR },
    ]);
    assert.deepEqual(
      (await enc.changes(t, 0, 10)).map((r) => r.change),
      [roleOf('Readers'), grant, add],
    );
    const boundaries = await enc.commitBoundaries(now + 3 * HOUR, 10);
    assert.deepEqual(
      boundaries.map((b) => b.change),
      [
        { op: 'permission.activate', role: 'Readers', permission: 'doc:read', notBefore: now + HOUR },
        { op: 'membership.expire', user: 'carol@example.com', role: 'Readers', expiresAt: now + 2 * HOUR },
      ],
    );
    const system = (await enc.audit(t, undefined, 10)).filter((r) => r.credential === 'system');
    assert.deepEqual(system.map((r) => r.resource).reverse(), ['/api/permission/Readers/doc:read', '/api/membership/carol@example.com/Readers']);
    const cells = [...(await rawCells(topic.backend, settings)).values()].flat();
    for (const name of ['Readers', 'doc:read', 'carol@example.com']) {
      assert.ok(!cells.some((c) => c.includes(name)), `${name} is stored encrypted only`);
    }
  });
}
