import { Piscina } from 'piscina';
import type { Change, ChangeRecord, Snapshot, WriteOutcome } from '../authz/changes.ts';
import { fromWire } from '../errors/index.ts';
import { planThreads, type StoreSettings } from '../store/settings.ts';
import type { Store } from '../store/port.ts';
import { storeFailure } from '../store/transient.ts';
import type { Task, TaskReply, TaskValue } from './protocol.ts';

/**
 * The store, run on a piscina thread pool: every database write and every hydration happens off
 * the event loop, so a slow disk or a long transaction never stalls request handling.
 */
export class PooledStore implements Store {
  readonly #pool: Piscina;

  /** `threads` is an upper bound: see {@link planThreads} for how PostgreSQL connections are shared. */
  constructor(settings: StoreSettings, threads: number) {
    const plan = planThreads(settings, threads);
    this.#pool = new Piscina({
      filename: new URL('./tasks/store-task.ts', import.meta.url).href,
      workerData: plan.settings,
      minThreads: 1,
      maxThreads: plan.threads,
      concurrentTasksPerWorker: plan.concurrency,
      idleTimeout: 60_000,
    });
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
    return this.#run({ kind: 'write', tenant, change });
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
    await this.#pool.destroy();
  }
}
