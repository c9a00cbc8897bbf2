/**
 * Workflow schedules and runs at the store port, on SQLite and PostgreSQL alike (docs/api.md §6
 * workflow routes, §8, §10): schedules with their audit rows; runs that diff who holds the
 * permission against the previous run, at one revision, once per due time, skipping missed
 * intervals; the scheduler lease; delivery claims; paging; client isolation; and an
 * EncryptedStore over each adapter leaving no workflow, user, webhook URL or secret in plaintext.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AuditRecord } from '../../../../src/audit/record.ts';
import type { Change } from '../../../../src/authz/changes.ts';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import { FieldCipher } from '../../../../src/crypto/field-cipher.ts';
import { EncryptedStore } from '../../../../src/store/wrappers/encrypted.ts';
import type { Store } from '../../../../src/store/port.ts';
import type { RunEntry, ScheduleInput } from '../../../../src/workflow/records.ts';
import { rawCells } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant as tenant } from '../../../helpers/tenants.ts';

/** 2030-01-01T00:00:00Z: the tests' clock starts here, far from the real one. */
const T0 = Date.UTC(2030, 0, 1);
const MINUTE = 60_000;
const cipher = new FieldCipher('test-encryption-password');

function auditRow(t: TenantId, action: string, resource: string, status = 201): AuditRecord {
  return {
    tenant: t,
    at: '2030-01-01T00:00:00.000000',
    action,
    resource,
    status,
    credential: 'key:0123456789ab',
    requestId: randomBytes(8).toString('hex'),
    ip: '::1',
  };
}

function scheduleOf(t: TenantId, workflow: string, intervalSeconds = 60, webhookUrl: string | null = null): ScheduleInput {
  return { tenant: t, workflow, intervalSeconds, webhookUrl, webhookSecret: `whsec_${randomBytes(24).toString('base64')}` };
}

/** Applies `changes` to the tenant, each committed (a refusal fails the test). */
async function apply(store: Store, t: TenantId, changes: readonly Change[]): Promise<void> {
  const settled = await store.writeMany(changes.map((change) => ({ tenant: t, changes: [change] })));
  settled.forEach((s, i) => assert.ok(s.ok && s.value.ok, `change ${i} commits: ${JSON.stringify(s)}`));
}

const grant = (role: string, permission: string): Change => ({ op: 'permission.grant', role, permission });
const revoke = (role: string, permission: string): Change => ({ op: 'permission.revoke', role, permission });
const join = (user: string, role: string): Change => ({ op: 'membership.add', user, role });
const leave = (user: string, role: string): Change => ({ op: 'membership.remove', user, role });
const role = (name: string): Change => ({ op: 'role.create', role: name, description: '' });

/** The run's diff and size, what these tests compare. */
const diff = (r: RunEntry | undefined): unknown => r && { added: r.added, removed: r.removed, usersCount: r.usersCount };

export function workflowCases(topic: StoreTopic): void {
  const { backend, it, open, alone } = topic;

  it('putSchedule creates and replaces, schedules() lists, deleteSchedule removes; each commits its audit row', async () => {
    const t = tenant();
    const [daily, hourly] = [scheduleOf(t, 'daily', 86_400, 'https://hooks.example/a'), scheduleOf(t, 'hourly', 3600)];
    await topic.store.putSchedule(daily, T0, auditRow(t, 'workflow.schedule', '/api/workflow/schedule/daily'));
    await topic.store.putSchedule(hourly, T0, auditRow(t, 'workflow.schedule', '/api/workflow/schedule/hourly'));
    const listed = (await topic.store.schedules(t)).sort((a, b) => (a.workflow < b.workflow ? -1 : 1));
    assert.deepEqual(listed, [
      { workflow: 'daily', intervalSeconds: 86_400, webhookUrl: 'https://hooks.example/a', lastRunAt: null },
      { workflow: 'hourly', intervalSeconds: 3600, webhookUrl: null, lastRunAt: null },
    ]);
    const made = await topic.store.runSchedule({ tenant: t, workflow: 'daily' }, T0, 'msg_1');
    assert.equal(made?.runAt, '2030-01-01T00:00:00.000000');

    await topic.store.putSchedule(
      { ...daily, intervalSeconds: 120, webhookUrl: null },
      T0 + 1,
      auditRow(t, 'workflow.schedule', '/api/workflow/schedule/daily'),
    );
    const replaced = (await topic.store.schedules(t)).find((s) => s.workflow === 'daily');
    assert.deepEqual(replaced, { workflow: 'daily', intervalSeconds: 120, webhookUrl: null, lastRunAt: made?.runAt }, 'replaced, its last run kept');
    assert.deepEqual(
      (await topic.store.runs(t, 'daily', undefined, 10))?.map((r) => r.id),
      [made?.id],
      'its runs kept',
    );

    assert.equal(await topic.store.deleteSchedule(t, 'daily', auditRow(t, 'workflow.unschedule', '/api/workflow/schedule/daily', 200)), true);
    assert.deepEqual(
      (await topic.store.schedules(t)).map((s) => s.workflow),
      ['hourly'],
    );
    assert.equal(await topic.store.runs(t, 'daily', undefined, 10), undefined, 'no schedule, no runs');
    assert.equal(await topic.store.deleteSchedule(t, 'daily', auditRow(t, 'workflow.unschedule', '/x', 200)), false);
    assert.equal(await topic.store.deleteSchedule(t, 'never', auditRow(t, 'workflow.unschedule', '/y', 200)), false);

    const trail = await topic.store.audit(t, undefined, 10);
    assert.deepEqual(
      trail.map((e) => [e.action, e.resource, 'revision' in e]),
      [
        ['workflow.unschedule', '/api/workflow/schedule/daily', false],
        ['workflow.schedule', '/api/workflow/schedule/daily', false],
        ['workflow.schedule', '/api/workflow/schedule/hourly', false],
        ['workflow.schedule', '/api/workflow/schedule/daily', false],
      ],
      'one row per schedule write, none for a deletion of nothing',
    );
    assert.equal(await topic.store.revision(t), 0, 'schedules and runs do not change the revision');
  });

  it('a first run lists every holder as added; later runs the diff after grants, revokes, memberships and role deletion', async () => {
    const t = tenant();
    await apply(topic.store, t, [role('admin'), role('editor'), role('viewer'), grant('admin', 'deploy'), grant('editor', 'deploy'), grant('viewer', 'read')]);
    await apply(topic.store, t, [join('alice', 'admin'), join('bob', 'admin'), join('bob', 'editor'), join('dave', 'editor'), join('carol', 'viewer')]);
    await topic.store.putSchedule(scheduleOf(t, 'deploy'), T0, auditRow(t, 'workflow.schedule', '/s'));
    const runAt = (k: number): Promise<RunEntry | undefined> => topic.store.runSchedule({ tenant: t, workflow: 'deploy' }, T0 + k * MINUTE, `msg_${k}`);

    const first = await runAt(0);
    assert.deepEqual(diff(first), { added: ['alice', 'bob', 'dave'], removed: [], usersCount: 3 });
    assert.equal(first?.revision, await topic.store.revision(t));
    assert.deepEqual(first?.delivery, { status: 'none', attempts: 0, lastStatus: null });
    assert.deepEqual(diff(await runAt(1)), { added: [], removed: [], usersCount: 3 }, 'nothing changed');

    await apply(topic.store, t, [
      grant('viewer', 'deploy'),
      leave('dave', 'editor'),
      leave('bob', 'admin'),
      role('ops'),
      join('Zed', 'ops'),
      join('_x', 'ops'),
      join('|y', 'ops'),
      grant('ops', 'deploy'),
    ]);
    const second = await runAt(2);
    assert.deepEqual(diff(second), { added: ['Zed', '_x', 'carol', '|y'], removed: ['dave'], usersCount: 6 }, 'bob is still an editor; sorted by code point');
    assert.equal(second?.revision, await topic.store.revision(t));

    await apply(topic.store, t, [{ op: 'role.delete', role: 'editor' }, join('alice', 'ops')]);
    assert.deepEqual(diff(await runAt(3)), { added: [], removed: ['bob'], usersCount: 5 }, 'alice still holds it through admin and ops');

    await apply(topic.store, t, [revoke('admin', 'deploy'), revoke('viewer', 'deploy'), { op: 'role.delete', role: 'ops' }]);
    assert.deepEqual(diff(await runAt(4)), { added: [], removed: ['Zed', '_x', 'alice', 'carol', '|y'], usersCount: 0 }, 'the permission left every role');
    assert.deepEqual(diff(await runAt(5)), { added: [], removed: [], usersCount: 0 });
    await apply(topic.store, t, [grant('admin', 'deploy')]);
    assert.deepEqual(diff(await runAt(6)), { added: ['alice'], removed: [], usersCount: 1 }, 'back again');

    const runs = (await topic.store.runs(t, 'deploy', undefined, 100)) ?? [];
    assert.deepEqual(
      runs.map((r) => r.runAt),
      [6, 5, 4, 3, 2, 1, 0].map((k) => new Date(T0 + k * MINUTE).toISOString().replace('Z', '000')),
      'newest first',
    );
    assert.deepEqual(runs.at(-1), first, 'stored as answered');
  });

  it('a client without data has a run with nobody; a schedule of an unknown tenant row is fine', async () => {
    const t = tenant();
    await topic.store.putSchedule(scheduleOf(t, 'anything'), T0, auditRow(t, 'workflow.schedule', '/s'));
    const made = await topic.store.runSchedule({ tenant: t, workflow: 'anything' }, T0, 'msg');
    assert.deepEqual(diff(made), { added: [], removed: [], usersCount: 0 });
    assert.equal(made?.revision, 0);
    assert.equal(await topic.store.runSchedule({ tenant: t, workflow: 'missing' }, T0, 'msg'), undefined, 'no such schedule');
  });

  it('a due time runs once; a run far overdue is made once, then runs are on the interval grid again', async () => {
    const s = await alone();
    const t = tenant();
    const due = { tenant: t, workflow: 'w' };
    await s.putSchedule(scheduleOf(t, 'w', 60), T0, auditRow(t, 'workflow.schedule', '/s'));
    assert.deepEqual(await s.dueSchedules(T0 - 1, 10), []);
    assert.deepEqual(await s.dueSchedules(T0, 10), [due], 'due at once');
    assert.ok(await s.runSchedule(due, T0, 'msg_a'));
    assert.equal(await s.runSchedule(due, T0, 'msg_b'), undefined, 'the same due time again: not due');
    assert.deepEqual(await s.dueSchedules(T0 + MINUTE - 1, 10), []);
    assert.deepEqual(await s.dueSchedules(T0 + MINUTE, 10), [due]);

    const late = T0 + 10.5 * MINUTE;
    const overdue = await s.runSchedule(due, late, 'msg_c');
    assert.equal(overdue?.runAt, new Date(late).toISOString().replace('Z', '000'));
    assert.equal(await s.runSchedule(due, late + 1000, 'msg_d'), undefined, 'missed intervals are not replayed');
    assert.deepEqual(await s.dueSchedules(T0 + 11 * MINUTE - 1, 10), [], 'next on the grid, after now');
    assert.deepEqual(await s.dueSchedules(T0 + 11 * MINUTE, 10), [due]);
    assert.ok(await s.runSchedule(due, T0 + 11 * MINUTE, 'msg_e'));
    assert.equal((await s.runs(t, 'w', undefined, 10))?.length, 3);
    assert.deepEqual((await s.schedules(t))[0]?.lastRunAt, new Date(T0 + 11 * MINUTE).toISOString().replace('Z', '000'));

    // Oldest due first, at most `limit`; a schedule replaced is due at once again.
    const [u, v] = [tenant(), tenant()];
    await s.putSchedule(scheduleOf(u, 'x'), T0 + 2, auditRow(u, 'workflow.schedule', '/s'));
    await s.putSchedule(scheduleOf(v, 'y'), T0 + 1, auditRow(v, 'workflow.schedule', '/s'));
    await s.putSchedule(scheduleOf(t, 'w', 60), T0 + 3, auditRow(t, 'workflow.schedule', '/s'));
    assert.deepEqual(await s.dueSchedules(T0 + 5, 2), [
      { tenant: v, workflow: 'y' },
      { tenant: u, workflow: 'x' },
    ]);
    assert.deepEqual(await s.dueSchedules(T0 + 5, 10), [{ tenant: v, workflow: 'y' }, { tenant: u, workflow: 'x' }, due]);
    await s.deleteSchedule(u, 'x', auditRow(u, 'workflow.unschedule', '/s', 200));
    assert.equal(await s.runSchedule({ tenant: u, workflow: 'x' }, T0 + 5, 'msg'), undefined, 'deleted: not run');
  });

  it('runSchedule from two stores at once makes exactly one run', async () => {
    const settings = await backend.fresh();
    const [a, b] = [open(settings), open(settings)];
    const t = tenant();
    await apply(a, t, [role('r'), grant('r', 'p'), ...Array.from({ length: 50 }, (_, i) => join(`user${i}`, 'r'))]);
    for (let k = 0; k < 5; k++) {
      const nowMs = T0 + k * MINUTE;
      if (k === 0) await a.putSchedule(scheduleOf(t, 'p', 60, 'https://hooks.example/'), T0, auditRow(t, 'workflow.schedule', '/s'));
      const due = { tenant: t, workflow: 'p' };
      const made = await Promise.all([a, b, a, b, a, b].map((s, i) => s.runSchedule(due, nowMs, `msg_${k}_${i}`)));
      assert.equal(made.filter((r) => r !== undefined).length, 1, `round ${k}: one run`);
    }
    const runs = (await b.runs(t, 'p', undefined, 100)) ?? [];
    assert.equal(runs.length, 5);
    assert.deepEqual(
      runs.map((r) => r.added.length),
      [0, 0, 0, 0, 50],
      'each diff against the previous run',
    );
    assert.equal((await a.claimDeliveries(T0 + 5 * MINUTE, 1000, 100)).length, 5, 'one delivery per run');
  });

  it('lease: taken, renewed, refused to another owner, taken over once expired, released', async () => {
    const s = await alone();
    assert.equal(await s.takeLease('a', T0, 1000), true, 'free');
    assert.equal(await s.takeLease('b', T0 + 500, 1000), false, 'held by a');
    assert.equal(await s.takeLease('a', T0 + 900, 1000), true, 'renewed until T0 + 1900');
    assert.equal(await s.takeLease('b', T0 + 1900, 1000), false, 'not expired at its expiry');
    assert.equal(await s.takeLease('b', T0 + 1901, 1000), true, 'expired: taken over');
    assert.equal(await s.takeLease('a', T0 + 1902, 1000), false);
    await s.releaseLease('a');
    assert.equal(await s.takeLease('a', T0 + 1903, 1000), false, "a cannot release b's lease");
    await s.releaseLease('b');
    assert.equal(await s.takeLease('a', T0 + 1904, 1000), true, 'released: free');
    const together = await Promise.all(['c', 'd', 'e'].map((o) => s.takeLease(o, T0 + 10_000, 1000)));
    assert.equal(together.filter(Boolean).length, 1, 'one of several at once');
  });

  it('claimDeliveries claims once until claimMs passes; recordDelivery shows in runs(); a run without a webhook any more fails', async () => {
    const s = await alone();
    const t = tenant();
    await apply(s, t, [role('r'), grant('r', 'p'), join('u', 'r')]);
    const sched = scheduleOf(t, 'p', 60, 'https://hooks.example/p');
    await s.putSchedule(sched, T0, auditRow(t, 'workflow.schedule', '/s'));
    const made = await s.runSchedule({ tenant: t, workflow: 'p' }, T0, 'msg_first');
    assert.deepEqual(made?.delivery, { status: 'pending', attempts: 0, lastStatus: null });
    assert.deepEqual(await s.claimDeliveries(T0 - 1, 30_000, 10), [], 'not due before the run');

    const [job] = await s.claimDeliveries(T0, 30_000, 10);
    assert.deepEqual(job, { run: made, tenant: t, webhookUrl: sched.webhookUrl, webhookSecret: sched.webhookSecret, webhookId: 'msg_first' });
    assert.deepEqual(await s.claimDeliveries(T0, 30_000, 10), [], 'claimed: not again');
    assert.deepEqual(await s.claimDeliveries(T0 + 29_999, 30_000, 10), []);
    assert.equal((await s.claimDeliveries(T0 + 30_000, 30_000, 10))[0]?.webhookId, 'msg_first', 'the claim lapsed: again, same id');

    await s.recordDelivery({ runId: made?.id ?? 0, status: 'pending', attempts: 1, lastStatus: 500, nextAttemptAtMs: T0 + 61_000 });
    assert.deepEqual((await s.runs(t, 'p', undefined, 1))?.[0]?.delivery, { status: 'pending', attempts: 1, lastStatus: 500 });
    assert.deepEqual(await s.claimDeliveries(T0 + 60_999, 30_000, 10), []);
    assert.equal((await s.claimDeliveries(T0 + 61_000, 30_000, 10))[0]?.run.delivery.attempts, 1);
    await s.recordDelivery({ runId: made?.id ?? 0, status: 'delivered', attempts: 2, lastStatus: 204, nextAttemptAtMs: null });
    assert.deepEqual((await s.runs(t, 'p', undefined, 1))?.[0]?.delivery, { status: 'delivered', attempts: 2, lastStatus: 204 });
    assert.deepEqual(await s.claimDeliveries(T0 + 10 * MINUTE, 30_000, 10), [], 'delivered: never claimed again');

    // Three more runs: at most `limit` claimed per call.
    for (let k = 1; k <= 3; k++) await s.runSchedule({ tenant: t, workflow: 'p' }, T0 + k * MINUTE, `msg_${k}`);
    assert.deepEqual((await s.claimDeliveries(T0 + 3 * MINUTE, 30_000, 2)).map((j) => j.webhookId).sort(), ['msg_1', 'msg_2']);
    // Replaced without a webhook: the remaining pending delivery can never be made.
    await s.putSchedule({ ...sched, webhookUrl: null }, T0 + 3 * MINUTE, auditRow(t, 'workflow.schedule', '/s'));
    assert.deepEqual(await s.claimDeliveries(T0 + 4 * MINUTE, 30_000, 10), []);
    assert.deepEqual((await s.runs(t, 'p', undefined, 1))?.[0]?.delivery, { status: 'failed', attempts: 0, lastStatus: null });
    const next = await s.runSchedule({ tenant: t, workflow: 'p' }, T0 + 3 * MINUTE, 'msg_none');
    assert.equal(next?.delivery.status, 'none');
  });

  it('runs(before, limit) pages newest first', async () => {
    const t = tenant();
    await topic.store.putSchedule(scheduleOf(t, 'w', 60), T0, auditRow(t, 'workflow.schedule', '/s'));
    for (let k = 0; k < 5; k++) await topic.store.runSchedule({ tenant: t, workflow: 'w' }, T0 + k * MINUTE, `m${k}`);
    const pages: string[][] = [];
    for (let cursor: number | undefined; ;) {
      const page = (await topic.store.runs(t, 'w', cursor, 2)) ?? [];
      if (page.length === 0) break;
      pages.push(page.map((r) => r.runAt.slice(11, 16)));
      cursor = page.at(-1)?.id;
    }
    assert.deepEqual(pages, [['00:04', '00:03'], ['00:02', '00:01'], ['00:00']]);
    const oldest = (await topic.store.runs(t, 'w', undefined, 10))?.at(-1)?.id;
    assert.deepEqual(await topic.store.runs(t, 'w', oldest, 10), [], 'a schedule, no run below the cursor');
  });

  it('clients are isolated: the same workflow name, other holders, other runs', async () => {
    const [a, b] = [tenant(), tenant()];
    await apply(topic.store, a, [role('r'), grant('r', 'p'), join('ann', 'r')]);
    await apply(topic.store, b, [role('r'), grant('r', 'p'), join('ben', 'r')]);
    await topic.store.putSchedule(scheduleOf(a, 'p'), T0, auditRow(a, 'workflow.schedule', '/s'));
    assert.equal(await topic.store.runs(b, 'p', undefined, 10), undefined, "b has no schedule of a's");
    assert.equal(await topic.store.runSchedule({ tenant: b, workflow: 'p' }, T0, 'm'), undefined);
    await topic.store.putSchedule(scheduleOf(b, 'p'), T0, auditRow(b, 'workflow.schedule', '/s'));
    assert.deepEqual((await topic.store.runSchedule({ tenant: a, workflow: 'p' }, T0, 'm'))?.added, ['ann']);
    assert.deepEqual((await topic.store.runSchedule({ tenant: b, workflow: 'p' }, T0, 'm'))?.added, ['ben']);
    assert.equal(await topic.store.deleteSchedule(a, 'p', auditRow(a, 'workflow.unschedule', '/s', 200)), true);
    assert.deepEqual(
      (await topic.store.runs(b, 'p', undefined, 10))?.map((r) => r.added),
      [['ben']],
      "b's runs stay",
    );
    assert.deepEqual(
      (await topic.store.schedules(b)).map((s) => s.workflow),
      ['p'],
    );
    assert.deepEqual(await topic.store.schedules(a), []);
    assert.deepEqual(
      (await topic.store.audit(b, undefined, 10)).map((e) => e.action),
      ['workflow.schedule'],
    );
  });

  it('EncryptedStore: no workflow, user, webhook URL or secret in plaintext in any table; plaintext answers, sorted', async () => {
    const settings = await backend.fresh();
    const enc = new EncryptedStore(open(settings), cipher);
    const t = tenant();
    const tag = randomBytes(5).toString('hex');
    const users = ['alice', 'Bob', 'carol', 'dave', 'Erin', '_frank', 'grace', `user-${tag}`];
    const workflow = `deploy-${tag}`;
    await apply(enc, t, [role('admin'), grant('admin', workflow), ...users.map((u) => join(u, 'admin'))]);
    const sched = {
      ...scheduleOf(t, workflow, 60, `https://hooks-${tag}.example/path`),
      webhookSecret: `whsec_${Buffer.from(`secret-${tag}-0123456789`).toString('base64')}`,
    };
    await enc.putSchedule(sched, T0, auditRow(t, 'workflow.schedule', `/api/workflow/schedule/${workflow}`));
    assert.deepEqual(await enc.dueSchedules(T0, 10), [{ tenant: t, workflow }]);
    const first = await enc.runSchedule({ tenant: t, workflow }, T0, 'msg_enc');
    assert.deepEqual(first?.added, [...users].sort(), 'sorted by plaintext');
    assert.equal(first?.workflow, workflow);
    await apply(enc, t, [leave('carol', 'admin'), leave('alice', 'admin'), leave(`user-${tag}`, 'admin'), join('Zoe', 'admin'), join('@yan', 'admin')]);
    const second = await enc.runSchedule({ tenant: t, workflow }, T0 + MINUTE, 'msg_enc2');
    assert.deepEqual(diff(second), { added: ['@yan', 'Zoe'], removed: ['alice', 'carol', `user-${tag}`], usersCount: 7 });
    assert.deepEqual(await enc.runs(t, workflow, undefined, 10), [second, first]);
    assert.deepEqual(await enc.schedules(t), [{ workflow, intervalSeconds: 60, webhookUrl: sched.webhookUrl, lastRunAt: second?.runAt }]);
    const jobs = await enc.claimDeliveries(T0 + MINUTE, 1000, 10);
    const byId = [...jobs].sort((x, y) => x.run.id - y.run.id);
    assert.deepEqual(
      byId.map((j) => [j.run.id, j.webhookUrl, j.webhookSecret]),
      [first, second].map((r) => [r?.id, sched.webhookUrl, sched.webhookSecret]),
    );
    assert.deepEqual(jobs.find((j) => j.run.id === second?.id)?.run, second);

    const cells = await rawCells(backend, settings);
    for (const table of ['workflow_schedules', 'workflow_runs', 'workflow_holders', 'audit'])
      assert.ok((cells.get(table)?.length ?? 0) > 0, `${table} holds rows`);
    for (const [table, values] of cells) {
      // Five characters and more: a shorter name could turn up inside a base64 ciphertext by chance.
      for (const plain of [tag, 'alice', 'grace', 'carol', 'hooks', 'whsec_', 'deploy']) {
        const hit = values.find((v) => v.includes(plain));
        assert.equal(hit, undefined, `table ${table} holds '${plain}' in plaintext: ${hit}`);
      }
    }
    assert.ok(cells.get('workflow_schedules')?.includes(cipher.encrypt(sched.webhookSecret)), 'the secret is stored as its ciphertext');

    assert.equal(await enc.deleteSchedule(t, workflow, auditRow(t, 'workflow.unschedule', `/api/workflow/schedule/${workflow}`, 200)), true);
    assert.equal(await enc.runs(t, workflow, undefined, 10), undefined);
    assert.deepEqual(
      (await enc.audit(t, undefined, 10)).map((e) => e.resource),
      [`/api/workflow/schedule/${workflow}`, `/api/workflow/schedule/${workflow}`],
    );
  });
}
