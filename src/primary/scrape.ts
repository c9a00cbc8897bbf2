import cluster, { type Worker } from 'node:cluster';
import type { MetricJson } from '../metrics/requests.ts';
import { addCumulative } from '../metrics/retained.ts';

/** A scrape waits this long for the workers' answers; a worker still silent then is represented by its last answer. */
const SCRAPE_TIMEOUT_MS = 1_000;

interface Pending {
  readonly waiting: Set<number>;
  readonly done: () => void;
}

/**
 * Asks every worker for its metrics over IPC and keeps what they answer, so that the totals the
 * primary serves never go down while it runs (docs/operations.md §2): a worker slower than the scrape
 * timeout contributes its last answer, and a worker that exits leaves its last counters and
 * histograms behind in {@link #retired} (its replacement starts from 0 and adds to them).
 */
export class WorkerScrape {
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  /** Each live worker's latest answer, by worker id. */
  readonly #latest = new Map<number, MetricJson[]>();
  /** The counters and histograms of every worker that exited, summed. */
  #retired: MetricJson[] = [];

  /** The snapshots to aggregate: every live worker's latest answer, and the exited workers' totals. */
  async collect(): Promise<MetricJson[][]> {
    await this.#ask();
    return [...this.#latest.values(), this.#retired];
  }

  /** A worker's answer, in time for its scrape or late: either way its newest figures. */
  answered(w: Worker, id: number, snapshot: MetricJson[]): void {
    this.#latest.set(w.id, snapshot);
    const p = this.#pending.get(id);
    if (p !== undefined && p.waiting.delete(w.id) && p.waiting.size === 0) p.done();
  }

  /** A worker exited: its last answer's counters stay in the totals. */
  exited(workerId: number): void {
    const last = this.#latest.get(workerId);
    this.#latest.delete(workerId);
    if (last !== undefined) this.#retired = addCumulative(this.#retired, last);
  }

  /** Asks every connected worker; resolves when all answered or after the timeout. */
  #ask(): Promise<void> {
    const id = this.#nextId++;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected());
    if (workers.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.#pending.delete(id);
        resolve();
      };
      const timer = setTimeout(finish, SCRAPE_TIMEOUT_MS);
      this.#pending.set(id, { waiting: new Set(workers.map((w) => w.id)), done: finish });
      for (const w of workers) w.send({ t: 'metrics', id });
    });
  }
}
