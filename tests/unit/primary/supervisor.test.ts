// The supervisor on a stand-in for node:cluster and a clock the test moves (tests/helpers/clock.ts):
// a dead worker is replaced after a backoff that doubles and resets once a worker lived long
// enough; draining tells the workers, stops them after the delay and replaces nobody meanwhile;
// workers that do not stop in time are killed. Nothing here forks a process or sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:cluster';
import type { Config } from '../../../src/config/index.ts';
import type { ToWorker } from '../../../src/ipc/protocol.ts';
import { SHUTDOWN_GRACE_MS, STOP_MARGIN_MS } from '../../../src/ipc/timing.ts';
import { createLogger } from '../../../src/log/index.ts';
import { ChangeHub } from '../../../src/primary/hub.ts';
import { ChangeRelay } from '../../../src/primary/relay.ts';
import { WorkerScrape } from '../../../src/primary/scrape.ts';
import { Supervisor, type WorkerCluster } from '../../../src/primary/supervisor.ts';
import { ManualClock } from '../../helpers/clock.ts';

interface FakeWorker {
  readonly worker: Worker;
  readonly sent: ToWorker[];
  readonly kills: string[];
  /** The worker says something to the primary. */
  say(message: unknown): void;
}

/** node:cluster's part the supervisor uses: forks make fake workers, and the test makes them exit. */
class FakeCluster implements WorkerCluster {
  readonly workers: NodeJS.Dict<Worker> = {};
  readonly forked: FakeWorker[] = [];
  #exit: (w: Worker, code: number, signal: string) => void = () => undefined;

  on(_event: 'exit', listener: (w: Worker, code: number, signal: string) => void): this {
    this.#exit = listener;
    return this;
  }

  fork(): Worker {
    const id = this.forked.length + 1;
    const listeners = new Map<string, (m: unknown) => void>();
    const fake: FakeWorker = {
      sent: [],
      kills: [],
      say: (m) => listeners.get('message')?.(m),
      worker: {
        id,
        isConnected: () => true,
        send: (m: ToWorker) => fake.sent.push(m) > 0,
        on: (event: string, fn: (m: unknown) => void) => void listeners.set(event, fn),
        process: { pid: 1000 + id, kill: (signal: string) => fake.kills.push(signal) > 0 },
      } as unknown as Worker,
    };
    this.workers[id] = fake.worker;
    this.forked.push(fake);
    return fake.worker;
  }

  /** The worker's process ends. */
  exit(fake: FakeWorker, code: number): void {
    delete this.workers[fake.worker.id];
    this.#exit(fake.worker, code, '');
  }

  /** The ids of the workers alive. */
  get alive(): number[] {
    return Object.keys(this.workers).map(Number);
  }
}

const DELAY_MS = 3000;

function supervised(workers: number): { s: Supervisor; cluster: FakeCluster; clock: ManualClock; restarts: number[] } {
  const config = { AUTH_WORKERS: workers, AUTH_SHUTDOWN_DELAY_MS: DELAY_MS, AUTH_SERVER_HOST: '127.0.0.1', AUTH_DATABASE_TYPE: 'sqlite' } as Config;
  const log = createLogger('silent');
  const cluster = new FakeCluster();
  const clock = new ManualClock();
  const restarts: number[] = [];
  const hooks = { scrape: new WorkerScrape(), restarted: () => void restarts.push(clock.now()), listening: () => undefined };
  const s = new Supervisor(config, log, 'node', new ChangeRelay(new ChangeHub(2000, log, clock), undefined), hooks, { cluster, clock });
  s.start();
  for (const w of cluster.forked) w.say({ t: 'ready', port: 8080 });
  return { s, cluster, clock, restarts };
}

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
