// A stand-in for node:cluster (src/primary/supervisor.ts WorkerCluster) and a supervisor on it and a
// clock the test moves: forks make fake workers, and the test decides when each one exits.
import type { Worker } from 'node:cluster';
import type { Config } from '../../src/config/index.ts';
import type { ToWorker } from '../../src/ipc/protocol.ts';
import { createLogger } from '../../src/log/index.ts';
import { ChangeHub } from '../../src/primary/hub.ts';
import { ChangeRelay } from '../../src/primary/relay.ts';
import { WorkerScrape } from '../../src/primary/scrape.ts';
import { Supervisor, type WorkerCluster } from '../../src/primary/supervisor.ts';
import { ManualClock } from './clock.ts';

export interface FakeWorker {
  readonly worker: Worker;
  readonly sent: ToWorker[];
  readonly kills: string[];
  /** The worker says something to the primary. */
  say(message: unknown): void;
}

/** node:cluster's part the supervisor uses: forks make fake workers, and the test makes them exit. */
export class FakeCluster implements WorkerCluster {
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

  /**
   * The worker's process ends. As node:cluster does, a worker whose IPC channel is still open at
   * its exit (`disconnected` false) stays listed in `workers` until the channel closes.
   */
  exit(fake: FakeWorker, code: number, disconnected = true): void {
    if (disconnected) delete this.workers[fake.worker.id];
    this.#exit(fake.worker, code, '');
  }

  /** The ids of the workers alive. */
  get alive(): number[] {
    return Object.keys(this.workers).map(Number);
  }
}

/** The shutdown delay of {@link supervised}'s settings. */
export const DELAY_MS = 3000;

/** A started supervisor of `workers` fake workers (all ready), its cluster, clock and restart times. */
export function supervised(workers: number): { s: Supervisor; cluster: FakeCluster; clock: ManualClock; restarts: number[] } {
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
