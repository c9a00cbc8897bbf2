import { extname } from 'node:path';
import { Piscina } from 'piscina';
import type { Change, ChangeRecord, Snapshot, WriteOutcome } from '../authz/changes.ts';
import { appError, fromWire } from '../errors/index.ts';
import { planThreads, type StoreSettings } from '../store/settings.ts';
import type { PendingWrite, Store } from '../store/port.ts';
import { storeFailure } from '../store/transient.ts';
import type { Task, TaskReply, TaskValue } from './protocol.ts';

/** Writes per batch at most (one SQLite transaction: bounded, so the lock is never held long). */
const MAX_BATCH = 256;

interface Queued extends PendingWrite {
  readonly resolve: (outcome: WriteOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The store, run on a piscina thread pool: every database write and every hydration happens off
 * the event loop, so a slow disk or a long transaction never stalls request handling.
 *
 * Writes are grouped: those that arrive in one turn of the event loop, or while the previous
 * batch is being written, go to the pool as one task (group commit). With SQLite that is one
 * transaction and one fsync for the batch, and one batch in flight at a time, since SQLite takes
 * one writer at a time anyway. With PostgreSQL each write stays its own transaction and as many
 * batches run at once as there are connections; grouping only saves the hand-offs to the thread.
 */
export class PooledStore implements Store {
  readonly #pool: Piscina;
  readonly #queue: Queued[] = [];
  readonly #maxBatches: number;
  #batches = 0;
  #scheduled = false;

  /** `threads` is an upper bound: see {@link planThreads} for how PostgreSQL connections are shared. */
  constructor(settings: StoreSettings, threads: number) {
    const plan = planThreads(settings, threads);
    this.#pool = new Piscina({
      // One task file per adapter, so a thread loads only its driver; it has this module's own
      // extension: .ts under tsx, .js once compiled.
      filename: new URL(`./tasks/${settings.type === 'sqlite' ? 'sqlite' : 'postgres'}-task${extname(import.meta.url)}`, import.meta.url).href,
      workerData: plan.settings,
      // Every thread starts with the pool and stays: one started on demand under load takes up to
      // a second to load its code and open the store here, and the task that asked for it, and the
      // writes waiting on that task, would wait as long.
      minThreads: plan.threads,
      maxThreads: plan.threads,
      concurrentTasksPerWorker: plan.concurrency,
    });
    this.#maxBatches = settings.type === 'sqlite' ? 1 : plan.threads * plan.concurrency;
  }

  async #run<K extends Task['kind']>(task: Task & { kind: K }): Promise<TaskValue[K]> {
    let reply: TaskReply<K>;
    try {
      reply = (await this.#pool.run(task)) as TaskReply<K>;
    } catch (err) {
      // The thread itself failed (a driver error escaped the task and took the thread down;
      // piscina replaces it): catalogue it like any store failure, so an outage is a 503.
      throw storeFailure(err, task.kind);
    }
    if (!reply.ok) throw fromWire(reply.error);
    return reply.value;
  }

  load(tenant: string): Promise<Snapshot> {
    return this.#run({ kind: 'load', tenant });
  }
  revision(tenant: string): Promise<number> {
    return this.#run({ kind: 'revision', tenant });
  }
  revisions(tenants: readonly string[]): Promise<Array<[string, number]>> {
    return this.#run({ kind: 'revisions', tenants });
  }
  write(tenant: string, change: Change): Promise<WriteOutcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ tenant, change, resolve, reject });
      if (this.#scheduled || this.#batches >= this.#maxBatches) return;
      // Wait for the end of this turn, so the writes of every request read in it go together.
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#flush();
      });
    });
  }
  /** Sends queued writes to the pool, as many batches as may be in flight. */
  #flush(): void {
    while (this.#queue.length > 0 && this.#batches < this.#maxBatches) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      this.#batches++;
      this.#run({ kind: 'writeMany', writes: batch.map(({ tenant, change }) => ({ tenant, change })) })
        .then(
          (settled) =>
            batch.forEach((w, i) => {
              const s = settled[i];
              if (s === undefined) w.reject(new Error('the pool answered fewer writes than it was given'));
              else if (s.ok) w.resolve(s.value);
              else w.reject(fromWire(s.error));
            }),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          this.#batches--;
          // What queued while this batch was written goes next, at once.
          this.#flush();
        });
    }
  }
  changes(tenant: string, since: number, limit: number): Promise<ChangeRecord[]> {
    return this.#run({ kind: 'changes', tenant, since, limit });
  }
  async cursorSecret(): Promise<Buffer> {
    return Buffer.from(await this.#run({ kind: 'cursorSecret' }), 'hex');
  }
  async ping(): Promise<void> {
    await this.#run({ kind: 'ping' });
  }
  async close(): Promise<void> {
    // Requests are drained before the store closes; a write still queued here is not written.
    for (const w of this.#queue.splice(0)) w.reject(appError('ERR_STORE_UNAVAILABLE', 'the store is closing'));
    await this.#pool.destroy();
  }
}
