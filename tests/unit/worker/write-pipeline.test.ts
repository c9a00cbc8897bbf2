// The write pipeline with fake stages that the test settles by hand: no clock, no timers, no
// dependence on machine load. Each stage call is recorded and resolved when the test says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditOfWrite, AuditRecord } from '../../../src/audit/record.ts';
import type { Change, WriteOutcome } from '../../../src/authz/changes.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { AppError, toWire } from '../../../src/errors/index.ts';
import type { PendingWrite, ScheduleInput, WriteSettled } from '../../../src/store/port.ts';
import { WritePipeline, type CommittedWrite, type PipelineLimits } from '../../../src/worker/write-pipeline.ts';
import { tenantId } from '../../helpers/tenants.ts';

interface Call<I, O> {
  readonly batch: readonly I[];
  settle(value: O): void;
  fail(err: unknown): void;
}

/** A schedule change as the store was asked to make it: `put` or `delete`, and its arguments. */
type ScheduleCall = Call<readonly ['put', ScheduleInput, number, AuditRecord] | readonly ['delete', TenantId, string, AuditRecord], boolean | undefined>;

/** Stages whose calls wait until the test settles them; `started` names each call as it is made. */
function manualStages() {
  const commits: Array<Call<PendingWrite, WriteSettled[]>> = [];
  const fanOuts: Array<Call<CommittedWrite, void>> = [];
  const schedules: ScheduleCall[] = [];
  const started: string[] = [];
  /** Backoffs under way, by the attempt they follow; `pass` ends one. */
  const waits: Array<{ readonly attempt: number; pass(): void }> = [];
  /** Which failures the store lets be tried again: none unless the test says. */
  const retry = { allowed: (_err: unknown, _attempt: number): boolean => false };
  const record = <I, O>(calls: Array<Call<I, O>>, batch: readonly I[]): Promise<O> => new Promise((settle, fail) => calls.push({ batch, settle, fail }));
  return {
    commits,
    fanOuts,
    schedules,
    started,
    waits,
    retry,
    stages: {
      mayRetryWrite: (err: unknown, attempt: number) => retry.allowed(err, attempt),
      retryWait: (attempt: number) => new Promise<void>((pass) => waits.push({ attempt, pass })),
      writeMany: (batch: readonly PendingWrite[]) => {
        started.push(`commit ${names(batch).join(',')}`);
        return record(commits, batch);
      },
      fanOut: (batch: readonly CommittedWrite[]) => record(fanOuts, batch),
      putSchedule: async (schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> => {
        started.push(`put ${schedule.workflow}`);
        await record(schedules, [['put', schedule, nowMs, audit] as const]);
      },
      deleteSchedule: async (tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> => {
        started.push(`delete ${workflow}`);
        return (await record(schedules, [['delete', tenant, workflow, audit] as const])) === true;
      },
    },
  };
}

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const grant = (role: string, permission: string): Change => ({ op: 'permission.grant', role, permission });
let revision = 0;
/** Every write of a commit call goes in, with the next revisions. */
const committedAll = (batch: readonly PendingWrite[]): WriteSettled[] =>
  batch.map((w) => ({ ok: true, value: { ok: true, revision: ++revision, changes: w.changes, effects: w.changes.map(() => ({})) } }));
/** The permission (or role) a change is about. */
const nameOf = (c: Change): string => ('permission' in c ? c.permission : c.role);
/**
 * The permissions (or roles) each write of a batch is about, joined by `+` when it has several
 * changes; a refusal in a fan-out shows as `refused@<revision>`.
 */
const names = (batch: readonly { changes?: readonly Change[]; outcome?: WriteOutcome }[]): string[] =>
  batch.map((w) => {
    if (w.outcome !== undefined && !w.outcome.ok) return `refused@${w.outcome.revision}`;
    const changes = w.changes ?? (w.outcome?.ok === true ? w.outcome.changes : []);
    return changes.map(nameOf).join('+');
  });

const SQLITE: PipelineLimits = { commitSlots: 1, fanOutSlots: 1, maxBatch: 256 };

test('a lone write goes at once: committed, fanned out, then answered', async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const answered: { outcome?: WriteOutcome } = {};
  void p.write(tenantId('t1'), [grant('r', 'a')]).then((o) => (answered.outcome = o));
  assert.equal(commits.length, 1, 'no waiting for a turn or a timer');
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.equal(fanOuts.length, 1);
  assert.equal(answered.outcome, undefined, 'not answered before every worker has it');
  fanOuts[0]?.settle();
  await flush();
  // Read anew: TypeScript narrowed it to undefined above, not knowing the callback ran since.
  assert.equal((answered.outcome as WriteOutcome | undefined)?.ok, true);
});

test("a write request of several changes is one write for the store, with its If-Match and audit row, and is answered with the store's outcome", async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const t = tenantId('t1');
  const changes: Change[] = [{ op: 'role.create', role: 'ops', description: '' }, grant('ops', 'deploy'), { op: 'membership.add', user: 'alice', role: 'ops' }];
  const audit: AuditOfWrite = { action: 'role.create', resource: '/api/writes', credential: 'key:abc', requestId: 'r1', ip: '127.0.0.1', status: 201 };
  const answered = p.write(t, changes, audit, 4);
  assert.equal(commits.length, 1);
  assert.deepEqual(commits[0]?.batch, [{ tenant: t, changes, ifMatch: 4, audit }], 'one pending write holding every change, in order');
  const outcome: WriteOutcome = { ok: true, revision: 5, changes, effects: [{}, {}, {}] };
  commits[0]?.settle([{ ok: true, value: outcome }]);
  await flush();
  assert.deepEqual(
    fanOuts[0]?.batch.map((w) => [w.tenant, w.outcome]),
    [[t, outcome]],
    'fanned out as one write',
  );
  fanOuts[0]?.settle();
  assert.equal(await answered, outcome, "the store's very outcome");
  // A request refused as a whole (If-Match no longer holds) is answered with that refusal.
  const stale = p.write(t, changes, audit, 4);
  await flush();
  assert.deepEqual(commits[1]?.batch, [{ tenant: t, changes, ifMatch: 4, audit }]);
  const refusal: WriteOutcome = { ok: false, error: { code: 'ERR_CONSISTENCY_PRECONDITION_FAILED', message: 'The client is not at revision 4' }, revision: 5 };
  commits[1]?.settle([{ ok: true, value: refusal }]);
  await flush();
  fanOuts[1]?.settle();
  assert.equal(await stale, refusal);
});

test('writes that arrive while a batch commits go together as the next batch', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  void p.write(tenantId('t1'), [grant('r', 'a')]);
  for (const x of ['b', 'c', 'd']) void p.write(tenantId('t2'), [grant('r', x)]);
  assert.equal(commits.length, 1, 'one commit in flight at a time on SQLite');
  assert.deepEqual(names(commits[0]?.batch ?? []), ['a']);
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.equal(commits.length, 2);
  assert.deepEqual(names(commits[1]?.batch ?? []), ['b', 'c', 'd']);
});

test('the commit of batch k+1 overlaps the fan-out of batch k, and committed batches wait for the fan-out slot', async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  void p.write(tenantId('t'), [grant('r', 'a')]);
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  void p.write(tenantId('t'), [grant('r', 'b')]);
  assert.equal(fanOuts.length, 1, 'batch 1 is being fanned out');
  assert.equal(commits.length, 2, 'batch 2 commits meanwhile');
  commits[1]?.settle(committedAll(commits[1].batch));
  void p.write(tenantId('t'), [grant('r', 'c')]);
  await flush();
  commits[2]?.settle(committedAll(commits[2].batch));
  await flush();
  assert.equal(fanOuts.length, 1, 'one fan-out in flight');
  fanOuts[0]?.settle();
  await flush();
  assert.equal(fanOuts.length, 2);
  assert.deepEqual(names(fanOuts[1]?.batch ?? []), ['b', 'c'], 'what committed meanwhile travels as one message');
});

test('a refusal is answered once every worker is at its revision; a failure rejects only its own write', async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const refused = p.write(tenantId('t'), [grant('r', 'x')]);
  commits[0]?.settle([{ ok: true, value: { ok: false, error: { code: 'ERR_AUTHZ_ROLE_NOT_FOUND', message: "Role 'r' does not exist" }, revision: 7 } }]);
  await flush();
  // The refusal was read at revision 7, which a writer that died may never have announced.
  assert.deepEqual(names(fanOuts[0]?.batch ?? []), ['refused@7']);
  fanOuts[0]?.settle();
  assert.equal((await refused).ok, false);
  const failing = p.write(tenantId('t'), [grant('r', 'y')]);
  const fine = p.write(tenantId('u'), [grant('r', 'z')]);
  await flush();
  // y went alone at once; z waits for the next batch.
  assert.deepEqual(names(commits[1]?.batch ?? []), ['y']);
  commits[1]?.settle([{ ok: false, error: toWire(new AppError('ERR_STORE_UNAVAILABLE', 'down')) }]);
  await assert.rejects(failing, (err: unknown) => err instanceof AppError && err.code === 'ERR_STORE_UNAVAILABLE');
  await flush();
  commits[2]?.settle(committedAll(commits[2].batch));
  await flush();
  assert.deepEqual(names(fanOuts[1]?.batch ?? []), ['z'], 'a failed write is not fanned out');
  fanOuts[1]?.settle();
  assert.equal((await fine).ok, true);
});

test('a commit call that throws rejects its batch; the pipeline goes on', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const a = p.write(tenantId('t'), [grant('r', 'a')]);
  void p.write(tenantId('t'), [grant('r', 'b')]);
  commits[0]?.fail(new Error('thread died'));
  await assert.rejects(a, /thread died/);
  await flush();
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.deepEqual(names(commits[1]?.batch ?? []), ['b']);
});

test('with several commit slots, a tenant in flight waits: its writes keep their order', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, stages, { commitSlots: 3, fanOutSlots: 1, maxBatch: 256 });
  void p.write(tenantId('t'), [grant('r', 't1')]);
  void p.write(tenantId('t'), [grant('r', 't2')]);
  void p.write(tenantId('u'), [grant('r', 'u1')]);
  // t1 went alone at once; then t2 waits for t1's batch while u1 takes the next slot.
  assert.deepEqual(
    commits.map((c) => names(c.batch)),
    [['t1'], ['u1']],
  );
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.deepEqual(names(commits[2]?.batch ?? []), ['t2']);
});

test('batches are cut at maxBatch', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, stages, { commitSlots: 1, fanOutSlots: 1, maxBatch: 2 });
  for (const x of ['a', 'b', 'c', 'd', 'e']) void p.write(tenantId('t'), [grant('r', x)]);
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.deepEqual(
    commits.map((c) => names(c.batch)),
    [['a'], ['b', 'c'], ['d', 'e']],
  );
});

const auditOf = (tenant: TenantId, action: string): AuditRecord => ({
  tenant,
  at: '2026-01-01T00:00:00.000000',
  action,
  resource: '/api/workflow/schedule/daily',
  status: 201,
  credential: 'key:abc',
  requestId: 'r1',
  ip: '127.0.0.1',
});
const scheduleOf = (tenant: TenantId, workflow: string): ScheduleInput => ({
  tenant,
  workflow,
  intervalSeconds: 60,
  webhookUrl: null,
  webhookSecret: 'whsec_x',
});

test('a schedule change is made by the commit stage with its arguments and answers what the store answered; nothing is fanned out', async () => {
  const { schedules, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const t = tenantId('t1');
  const put = p.putSchedule(scheduleOf(t, 'daily'), 1234, auditOf(t, 'workflow.schedule'));
  assert.equal(schedules.length, 1, 'a lone change goes at once');
  assert.deepEqual(schedules[0]?.batch, [['put', scheduleOf(t, 'daily'), 1234, auditOf(t, 'workflow.schedule')]]);
  schedules[0]?.settle(undefined);
  assert.equal(await put, undefined);
  await flush();
  const gone = p.deleteSchedule(t, 'daily', auditOf(t, 'workflow.unschedule'));
  await flush();
  assert.deepEqual(schedules[1]?.batch, [['delete', t, 'daily', auditOf(t, 'workflow.unschedule')]]);
  schedules[1]?.settle(false);
  assert.equal(await gone, false, 'no such schedule: false, as the store said');
  assert.equal(fanOuts.length, 0, 'no graph holds schedules');
  assert.equal(p.queued, 0);
});

test("a schedule change waits for its tenant's commit in flight, and that tenant's later writes wait for it; other tenants' go along", async () => {
  const { commits, schedules, started, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const [t, u] = [tenantId('t'), tenantId('u')];
  void p.write(t, [grant('r', 'a')]);
  const put = p.putSchedule(scheduleOf(t, 'daily'), 1, auditOf(t, 'workflow.schedule'));
  void p.write(t, [grant('r', 'b')]);
  void p.write(u, [grant('r', 'c')]);
  assert.equal(schedules.length, 0, "t's write a is committing");
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  // The next batch: t's schedule change and u's write; t's write b waits for the change before it.
  assert.deepEqual(started, ['commit a', 'commit c'], 'the batch commits its writes of graphs first');
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.deepEqual(started, ['commit a', 'commit c', 'put daily']);
  assert.equal(commits.length, 2, 'b waits while the schedule change of its tenant is made');
  schedules[0]?.settle(undefined);
  await put;
  await flush();
  assert.deepEqual(started, ['commit a', 'commit c', 'put daily', 'commit b']);
});

test("a failed schedule change rejects its caller with the store's error, alone; a failed commit does not stop a change of its batch", async () => {
  const { commits, schedules, stages } = manualStages();
  const p = new WritePipeline(stages, stages, SQLITE);
  const [t, u, v] = [tenantId('t'), tenantId('u'), tenantId('v')];
  const down = new AppError('ERR_STORE_UNAVAILABLE', 'down');
  const failing = p.putSchedule(scheduleOf(t, 'daily'), 1, auditOf(t, 'workflow.schedule'));
  schedules[0]?.fail(down);
  await assert.rejects(failing, (err: unknown) => err === down, 'the very error the store threw');
  await flush();
  void p.write(v, [grant('r', 'w')]);
  const lost = p.write(u, [grant('r', 'x')]);
  const gone = p.deleteSchedule(t, 'daily', auditOf(t, 'workflow.unschedule'));
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.deepEqual(names(commits[1]?.batch ?? []), ['x'], 'x and the deletion are the next batch');
  commits[1]?.fail(new Error('thread died'));
  await assert.rejects(lost, /thread died/);
  await flush();
  assert.equal(schedules.length, 2, "the batch's schedule change is made although its writes failed");
  schedules[1]?.settle(true);
  assert.equal(await gone, true);
});

/** A failure that says nothing committed, as a batch settles it for one write. */
const unavailable = (): WriteSettled => ({ ok: false, error: toWire(new AppError('ERR_STORE_UNAVAILABLE', 'down')) });
/** The store's rule: a failure that says nothing committed, at most `attempts` attempts in all. */
const retryable = (attempts: number) => (err: unknown, attempt: number) => err instanceof AppError && err.retryable && attempt < attempts;

test("a write tried again waits out its backoff holding its tenant but no commit slot: other tenants' writes commit meanwhile", async () => {
  const { commits, fanOuts, waits, retry, stages } = manualStages();
  retry.allowed = retryable(3);
  const p = new WritePipeline(stages, stages, SQLITE);
  const [t, u] = [tenantId('t'), tenantId('u')];
  const a = p.write(t, [grant('r', 'a')]);
  commits[0]?.settle([unavailable()]);
  await flush();
  assert.deepEqual(
    waits.map((w) => w.attempt),
    [1],
    'a waits the backoff after its first attempt',
  );
  assert.equal(p.queued, 1, 'a waiting write counts as queued (a graceful stop waits for it)');
  void p.write(u, [grant('r', 'b')]);
  void p.write(t, [grant('r', 'c')]);
  assert.equal(commits.length, 2, 'the commit slot is free during the backoff');
  assert.deepEqual(names(commits[1]?.batch ?? []), ['b'], "t's later write c does not overtake a");
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.equal(commits.length, 2, 'c still waits for a');
  waits[0]?.pass();
  await flush();
  assert.deepEqual(names(commits[2]?.batch ?? []), ['a', 'c'], 'a is tried again first, then c');
  commits[2]?.settle(committedAll(commits[2].batch));
  await flush();
  fanOuts[0]?.settle();
  await flush();
  assert.deepEqual(names(fanOuts[1]?.batch ?? []), ['a', 'c']);
  fanOuts[1]?.settle();
  assert.equal((await a).ok, true);
  assert.equal(p.queued, 0);
});

test('a write is tried again only as the store allows, a failed batch call included; then it is rejected with its failure', async () => {
  const { commits, waits, retry, stages } = manualStages();
  retry.allowed = retryable(2);
  const p = new WritePipeline(stages, stages, SQLITE);
  const a = p.write(tenantId('t'), [grant('r', 'a')]);
  commits[0]?.fail(new AppError('ERR_STORE_UNAVAILABLE', 'connection refused'));
  await flush();
  assert.equal(waits.length, 1, 'the whole batch failed before committing: tried again');
  waits[0]?.pass();
  await flush();
  assert.deepEqual(names(commits[1]?.batch ?? []), ['a']);
  commits[1]?.settle([unavailable()]);
  await assert.rejects(a, (err: unknown) => err instanceof AppError && err.code === 'ERR_STORE_UNAVAILABLE', 'no attempt left');
  assert.equal(waits.length, 1);
  const b = p.write(tenantId('t'), [grant('r', 'b')]);
  await flush();
  commits[2]?.settle([{ ok: false, error: toWire(new AppError('ERR_STORE_COMMIT_UNKNOWN', 'cut off')) }]);
  await assert.rejects(b, /cut off/, 'a commit that may have happened is never tried again');
  assert.equal(waits.length, 1);
});
