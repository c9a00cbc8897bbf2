import cluster, { type Worker } from 'node:cluster';
import type { MetricJson } from '../metrics/requests.ts';

/** A worker that does not answer within this long is left out of a scrape (it may be starting or stuck). */
const SCRAPE_TIMEOUT_MS = 1_000;

interface Pending {
  readonly snapshots: MetricJson[][];
  readonly waiting: Set<number>;
  readonly done: () => void;
}

/** Asks every worker for its metrics over IPC and gathers the answers of one scrape. */
export class WorkerScrape {
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();

  /** Every connected worker's snapshot (those that answered in time). */
  collect(): Promise<MetricJson[][]> {
    const id = this.#nextId++;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected());
    return new Promise((resolve) => {
      const snapshots: MetricJson[][] = [];
      const timer = setTimeout(() => finish(), SCRAPE_TIMEOUT_MS);
      const finish = (): void => {
        clearTimeout(timer);
        this.#pending.delete(id);
        resolve(snapshots);
      };
      const pending: Pending = { snapshots, waiting: new Set(workers.map((w) => w.id)), done: finish };
      if (pending.waiting.size === 0) return finish();
      this.#pending.set(id, pending);
      for (const w of workers) w.send({ t: 'metrics', id });
    });
  }

  /** A worker's answer. */
  answered(w: Worker, id: number, snapshot: MetricJson[]): void {
    const p = this.#pending.get(id);
    if (p === undefined || !p.waiting.delete(w.id)) return;
    p.snapshots.push(snapshot);
    if (p.waiting.size === 0) p.done();
  }
}
