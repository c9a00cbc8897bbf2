import { extname } from 'node:path';
import { Piscina } from 'piscina';
import { fromWire } from '../errors/index.ts';
import type { StoreAnswer, StoreArgs } from '../store/calls.ts';
import type { StoreMethod } from '../store/port.ts';
import { planThreads, type StoreSettings } from '../store/settings.ts';
import { storeFailure } from '../store/transient.ts';
import { DelegatingStore } from '../store/wrappers/delegating.ts';
import type { Task, TaskReply } from './protocol.ts';

/**
 * The store, run on a piscina thread pool: every database write and every hydration happens off
 * the event loop, so a slow disk or a long transaction never stalls request handling. Writes
 * come in batches (the worker's write pipeline makes them): one task each, which on SQLite is one
 * transaction and one fsync; on PostgreSQL each write stays its own transaction. Every store call
 * is one task, `{ method, args }`, run by the method's name in the thread (tasks/store-task.ts).
 */
export class PooledStore extends DelegatingStore {
  readonly #pool: Piscina;
  /** Write batches that may run at once: 1 on SQLite (one writer anyway), one per connection on PostgreSQL. */
  readonly writeSlots: number;
  /** Database connections of the threads: one per SQLite thread, the PostgreSQL budget split over them. */
  readonly #connections: number;
  #running = 0;

  /**
   * `threads` is an upper bound: see {@link planThreads} for how PostgreSQL connections are shared.
   * `onThreadError` hears of a thread that failed outside any task (piscina replaces it).
   */
  constructor(settings: StoreSettings, threads: number, onThreadError: (err: unknown) => void = () => undefined) {
    super();
    const plan = planThreads(settings, threads);
    this.#pool = new Piscina({
      // One task file per adapter, so a thread loads only its driver: the store factory inside
      // threads (store/index.ts `openStore` is the one outside). It has this module's own
      // extension: .ts under tsx, .js once compiled.
      filename: new URL(`./tasks/${settings.type === 'sqlite' ? 'sqlite' : 'postgres'}-task${extname(import.meta.url)}`, import.meta.url).href,
      // Each task file exports its handler as `runStoreTask` (no default exports in the project).
      name: 'runStoreTask',
      workerData: plan.settings,
      // Every thread starts with the pool and stays: one started on demand under load takes up to
      // a second to load its code and open the store here, and the task that asked for it, and the
      // writes waiting on that task, would wait as long.
      minThreads: plan.threads,
      maxThreads: plan.threads,
      concurrentTasksPerWorker: plan.concurrency,
    });
    // Unheard, piscina's 'error' event would throw and take the whole process down with the thread.
    this.#pool.on('error', onThreadError);
    this.writeSlots = settings.type === 'sqlite' ? 1 : plan.threads * plan.concurrency;
    this.#connections = plan.threads * plan.concurrency;
  }

  /** The connections as the pool sees them: in use by a task (a task uses one at a time) or idle, and tasks queued for one. */
  connections(): { total: number; idle: number; waiting: number } {
    return { total: this.#connections, idle: Math.max(0, this.#connections - this.#running), waiting: this.#pool.queueSize };
  }

  protected async call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
    const task: Task<K> = { method, args };
    let reply: TaskReply;
    this.#running++;
    try {
      reply = (await this.#pool.run(task)) as TaskReply;
    } catch (err) {
      // The thread itself failed (a driver error escaped the task and took the thread down;
      // piscina replaces it): catalogue it like any store failure, so an outage is a 503.
      throw storeFailure(err, method);
    } finally {
      this.#running--;
    }
    if (!reply.ok) throw fromWire(reply.error);
    // What the thread's store answered, as structured clone carried it back.
    return asBuffer(reply.value) as StoreAnswer<K>;
  }

  override async close(): Promise<void> {
    await this.#pool.destroy();
  }
}

/** A byte string as the port answers it: structured clone turns a Buffer into a plain Uint8Array. */
function asBuffer(value: unknown): unknown {
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
}
