// The supervisor on a stand-in for node:cluster and a clock the test moves (tests/helpers/clock.ts):
// a dead worker is replaced after a backoff that doubles and resets once a worker lived long
// enough; draining tells the workers, stops them after the delay and replaces nobody meanwhile;
// workers that do not stop in time are killed. Nothing here forks a process or sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHUTDOWN_GRACE_MS, STOP_MARGIN_MS } from '../../../src/ipc/timing.ts';
import type { ManualClock } from '../../helpers/clock.ts';
import { DELAY_MS, supervised, type FakeCluster, type FakeWorker } from '../../helpers/fake-cluster.ts';

/** Kills the newest worker and says after how long (ms of the clock) its replacement was forked. */
async function replaceTime(cluster: FakeCluster, clock: ManualClock): Promise<number> {
  const forks = cluster.forked.length;
  cluster.exit(cluster.forked.at(-1) as FakeWorker, 1);
  const from = clock.now();
  for (let step = 0; step <= 200; step++) {
    await clock.advance(step === 0 ? 0 : 50);
    if (cluster.forked.length > forks) return clock.now() - from;
  }
  throw new Error('no replacement within 10 s');
}

test('a worker that dies is replaced after a backoff that doubles up to 5 s, and resets once a worker lived 10 s', async () => {
  const { cluster, clock, restarts } = supervised(2);
  assert.deepEqual(cluster.alive, [1, 2]);
  const backoffs: number[] = [];
  for (let i = 0; i < 8; i++) backoffs.push(await replaceTime(cluster, clock));
  assert.deepEqual(backoffs, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  assert.equal(restarts.length, 8);
  await clock.advance(10_001);
  assert.equal(await replaceTime(cluster, clock), 0, 'a worker that lived over 10 s: replaced at once');
  assert.equal(cluster.alive.length, 2);
});

test('draining: every worker is told at once, replaced by nobody, and asked to shut down after the delay', async () => {
  const { s, cluster, clock } = supervised(2);
  s.drainThenStop();
  assert.deepEqual(
    cluster.forked.map((w) => w.sent.map((m) => m.t)),
    [['drain'], ['drain']],
  );
  cluster.exit(cluster.forked[1] as FakeWorker, 1);
  await clock.advance(DELAY_MS - 1);
  assert.equal(cluster.forked.length, 2, 'a worker that exits while draining is not replaced');
  assert.deepEqual(
    cluster.forked[0]?.sent.map((m) => m.t),
    ['drain'],
    'still serving through the delay',
  );
  await clock.advance(1);
  assert.deepEqual(
    cluster.forked[0]?.sent.map((m) => m.t),
    ['drain', 'shutdown'],
  );
  let code: number | undefined;
  void s.done.then((c) => (code = c));
  cluster.exit(cluster.forked[0] as FakeWorker, 0);
  await clock.advance(0);
  assert.equal(code, 0, 'stopped once the last worker exited');
});

test('workers that do not stop within the grace are killed, and the service exits 1', async () => {
  const { s, cluster, clock } = supervised(2);
  let code: number | undefined;
  void s.done.then((c) => (code = c));
  s.stop(0);
  await clock.advance(SHUTDOWN_GRACE_MS + STOP_MARGIN_MS - 1);
  assert.deepEqual(
    cluster.forked.map((w) => w.kills),
    [[], []],
    'not before the grace and its margin',
  );
  await clock.advance(1);
  assert.deepEqual(
    cluster.forked.map((w) => w.kills),
    [['SIGKILL'], ['SIGKILL']],
  );
  assert.equal(code, 1);
});
