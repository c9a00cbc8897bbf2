// The write pipeline with fake stages that the test settles by hand: no clock, no timers, no
// dependence on machine load. Each stage call is recorded and resolved when the test says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Change, WriteOutcome } from '../../../src/authz/changes.ts';
import { AppError, toWire } from '../../../src/errors/index.ts';
import type { PendingWrite, WriteSettled } from '../../../src/store/port.ts';
import { WritePipeline, type CommittedWrite, type PipelineLimits } from '../../../src/worker/write-pipeline.ts';
import { tenantId } from '../../helpers/tenants.ts';

interface Call<I, O> {
  readonly batch: readonly I[];
  settle(value: O): void;
  fail(err: unknown): void;
}

/** Stages whose calls wait until the test settles them. */
function manualStages() {
  const commits: Array<Call<PendingWrite, WriteSettled[]>> = [];
  const fanOuts: Array<Call<CommittedWrite, void>> = [];
  const record = <I, O>(calls: Array<Call<I, O>>, batch: readonly I[]): Promise<O> =>
    new Promise((settle, fail) => calls.push({ batch, settle, fail }));
  return {
    commits,
    fanOuts,
    stages: {
      commit: (batch: readonly PendingWrite[]) => record(commits, batch),
      fanOut: (batch: readonly CommittedWrite[]) => record(fanOuts, batch),
    },
  };
}

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const grant = (role: string, permission: string): Change => ({ op: 'permission.grant', role, permission });
let revision = 0;
/** Every write of a commit call goes in, with the next revisions. */
const committedAll = (batch: readonly PendingWrite[]): WriteSettled[] =>
  batch.map((w) => ({ ok: true, value: { ok: true, revision: ++revision, change: w.change } as WriteOutcome }));
/** The permission (or role) each write of a batch is about; a refusal in a fan-out shows as `refused@<revision>`. */
const names = (batch: readonly { change?: Change; outcome?: WriteOutcome }[]): string[] =>
  batch.map((w) => {
    if (w.outcome !== undefined && !w.outcome.ok) return `refused@${w.outcome.revision}`;
    const c = (w.change ?? (w.outcome as { change: Change }).change) as Change & { permission?: string };
    return c.permission ?? c.role;
  });

const SQLITE: PipelineLimits = { commitSlots: 1, fanOutSlots: 1, maxBatch: 256 };

test('a lone write goes at once: committed, fanned out, then answered', async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, SQLITE);
  const answered: { outcome?: WriteOutcome } = {};
  void p.write(tenantId('t1'), grant('r', 'a')).then((o) => (answered.outcome = o));
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

test('writes that arrive while a batch commits go together as the next batch', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, SQLITE);
  void p.write(tenantId('t1'), grant('r', 'a'));
  for (const x of ['b', 'c', 'd']) void p.write(tenantId('t2'), grant('r', x));
  assert.equal(commits.length, 1, 'one commit in flight at a time on SQLite');
  assert.deepEqual(names(commits[0]?.batch ?? []), ['a']);
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.equal(commits.length, 2);
  assert.deepEqual(names(commits[1]?.batch ?? []), ['b', 'c', 'd']);
});

test('the commit of batch k+1 overlaps the fan-out of batch k, and committed batches wait for the fan-out slot', async () => {
  const { commits, fanOuts, stages } = manualStages();
  const p = new WritePipeline(stages, SQLITE);
  void p.write(tenantId('t'), grant('r', 'a'));
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  void p.write(tenantId('t'), grant('r', 'b'));
  assert.equal(fanOuts.length, 1, 'batch 1 is being fanned out');
  assert.equal(commits.length, 2, 'batch 2 commits meanwhile');
  commits[1]?.settle(committedAll(commits[1].batch));
  void p.write(tenantId('t'), grant('r', 'c'));
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
  const p = new WritePipeline(stages, SQLITE);
  const refused = p.write(tenantId('t'), grant('r', 'x'));
  commits[0]?.settle([{ ok: true, value: { ok: false, error: { code: 'ERR_AUTHZ_ROLE_NOT_FOUND', message: "Role 'r' does not exist" }, revision: 7 } }]);
  await flush();
  // The refusal was read at revision 7, which a writer that died may never have announced.
  assert.deepEqual(names(fanOuts[0]?.batch ?? []), ['refused@7']);
  fanOuts[0]?.settle();
  assert.equal((await refused).ok, false);
  const failing = p.write(tenantId('t'), grant('r', 'y'));
  const fine = p.write(tenantId('u'), grant('r', 'z'));
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
  const p = new WritePipeline(stages, SQLITE);
  const a = p.write(tenantId('t'), grant('r', 'a'));
  void p.write(tenantId('t'), grant('r', 'b'));
  commits[0]?.fail(new Error('thread died'));
  await assert.rejects(a, /thread died/);
  await flush();
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.deepEqual(names(commits[1]?.batch ?? []), ['b']);
});

test('with several commit slots, a tenant in flight waits: its writes keep their order', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, { commitSlots: 3, fanOutSlots: 1, maxBatch: 256 });
  void p.write(tenantId('t'), grant('r', 't1'));
  void p.write(tenantId('t'), grant('r', 't2'));
  void p.write(tenantId('u'), grant('r', 'u1'));
  // t1 went alone at once; then t2 waits for t1's batch while u1 takes the next slot.
  assert.deepEqual(commits.map((c) => names(c.batch)), [['t1'], ['u1']]);
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  assert.deepEqual(names(commits[2]?.batch ?? []), ['t2']);
});

test('batches are cut at maxBatch', async () => {
  const { commits, stages } = manualStages();
  const p = new WritePipeline(stages, { commitSlots: 1, fanOutSlots: 1, maxBatch: 2 });
  for (const x of ['a', 'b', 'c', 'd', 'e']) void p.write(tenantId('t'), grant('r', x));
  commits[0]?.settle(committedAll(commits[0].batch));
  await flush();
  commits[1]?.settle(committedAll(commits[1].batch));
  await flush();
  assert.deepEqual(commits.map((c) => names(c.batch)), [['a'], ['b', 'c'], ['d', 'e']]);
});
