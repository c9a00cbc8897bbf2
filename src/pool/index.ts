import { extname } from 'node:path';
import { Piscina } from 'piscina';
import { fromWire } from '../errors/index.ts';
import type { StoreAnswer, StoreArgs } from '../store/calls.ts';
import type { StoreMethod } from '../store/port.ts';
import { planThreads, type StoreSettings } from '../store/settings.ts';
import { storeFailure } from '../store/transient.ts';
import { DelegatingStore } from '../store/wrappers/delegating.ts';
import { NO_TRACER, type Tracer } from '../trace/index.ts';
import type { SharedTask, Task, TaskReply } from './protocol.ts';

/**
 * The store, run on a piscina thread pool: every database write and every hydration happens off
 * the event loop, so a slow disk or a long transaction never stalls request handling. Writes
 * come in batches (the worker's write pipeline makes them): one task each, which on SQLite is one
 * transaction and one fsync; on PostgreSQL each write stays its own transaction. Every store call
 * is one task, `{ method, args }`, run by the method's name in the thread (tasks/store-task.ts).
 */
/** The young generation of a pool thread's heap, MiB. */
const POOL_YOUNG_GENERATION_MB = 16;
/** Hydrations one shared task carries at most, so that none waits long behind the others. */
const SHARED_MAX = 32;

/** A hydration waiting for a connection. */
interface HeldCall {
  readonly task: Task<'loadGraph'>;
  resolve(value: StoreAnswer<'loadGraph'>): void;
  reject(err: unknown): void;
}

export class PooledStore extends DelegatingStore {
  readonly #pool: Piscina;
  /** Write batches that may run at once: 1 on SQLite (one writer anyway), one per connection on PostgreSQL. */
  readonly writeSlots: number;
  /** Database connections of the threads: one per SQLite thread, the PostgreSQL budget split over them. */
  readonly #connections: number;
  #running = 0;
  /**
   * Hydrations that came while every connection was busy: the next task to end sends them as one
   * (a burst of many small clients' first requests, each far cheaper than its trip to a thread).
   */
  #held: HeldCall[] = [];
  readonly #tracer: Tracer;
  /** `db.system.name` of its spans. */
  readonly #system: string;

  /**
   * `threads` is an upper bound: see {@link planThreads} for how PostgreSQL connections are shared.
   * `onThreadError` hears of a thread that failed outside any task (piscina replaces it). With
   * traces on, each trip to a thread made inside a span (a traced request, hydration or delivery)
   * is a span of its own, `db <method>`: the wait for a thread and the thread's work.
   */
  constructor(settings: StoreSettings, threads: number, onThreadError: (err: unknown) => void = () => undefined, tracer: Tracer = NO_TRACER) {
    super();
    this.#tracer = tracer;
    this.#system = settings.type;
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
      // A pool thread's garbage is short-lived rows and strings; V8's default young generation
      // (tens of MiB per thread) stays resident once a burst of hydrations grew it.
      resourceLimits: { maxYoungGenerationSizeMb: POOL_YOUNG_GENERATION_MB },
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

  protected call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
    return this.#runAlone({ method, args });
  }

  /** `hop` in a span of the database call `method` (traces on only: off, callers make no closure). */
  #dbSpan<T>(method: string, hop: () => Promise<T>): Promise<T> {
    return this.#tracer.span(`db ${method}`, hop, {
      kind: 'client',
      childOnly: true,
      attributes: { 'db.operation.name': method, 'db.system.name': this.#system },
    });
  }

  /** A hydration: a task of its own, or, while every connection is busy, a place in the next shared one. */
  override loadGraph(...args: StoreArgs<'loadGraph'>): Promise<StoreAnswer<'loadGraph'>> {
    const task: Task<'loadGraph'> = { method: 'loadGraph', args };
    if (this.#running < this.#connections) return this.#runAlone(task);
    const held = (): Promise<StoreAnswer<'loadGraph'>> => new Promise((resolve, reject) => this.#held.push({ task, resolve, reject }));
    return this.#tracer.enabled ? this.#dbSpan('loadGraph', held) : held();
  }

  #runAlone<K extends StoreMethod>(task: Task<K>): Promise<StoreAnswer<K>> {
    if (!this.#tracer.enabled) return this.#hop(task);
    return this.#dbSpan(task.method, () => this.#hop(task));
  }

  async #hop<K extends StoreMethod>(task: Task<K>): Promise<StoreAnswer<K>> {
    let reply: TaskReply;
    this.#running++;
    try {
      reply = (await this.#pool.run(task)) as TaskReply;
    } catch (err) {
      // The thread itself failed (a driver error escaped the task and took the thread down;
      // piscina replaces it): catalogue it like any store failure, so an outage is a 503.
      throw storeFailure(err, task.method);
    } finally {
      this.#running--;
      this.#sendHeld();
    }
    return valueOf(reply) as StoreAnswer<K>;
  }

  /** The held hydrations (up to {@link SHARED_MAX}) as one task, once a connection is free. */
  #sendHeld(): void {
    if (this.#held.length === 0 || this.#running >= this.#connections) return;
    const calls = this.#held.splice(0, SHARED_MAX);
    const shared: SharedTask = { calls: calls.map((c) => c.task) };
    this.#running++;
    (this.#pool.run(shared) as Promise<TaskReply[]>)
      .then(
        (replies) => calls.forEach((c, i) => settle(c, replies[i])),
        (err: unknown) => calls.forEach((c) => c.reject(storeFailure(err, c.task.method))),
      )
      .finally(() => {
        this.#running--;
        this.#sendHeld();
      });
  }

  override async close(): Promise<void> {
    for (const c of this.#held.splice(0)) c.reject(storeFailure(new Error('the store is closing'), c.task.method));
    await this.#pool.destroy();
  }
}

/** A reply's value as structured clone carried it back, or its failure thrown as the catalogued error it was in the thread. */
function valueOf(reply: TaskReply): unknown {
  if (!reply.ok) throw fromWire(reply.error);
  return asBuffer(reply.value);
}

function settle(call: HeldCall, reply: TaskReply | undefined): void {
  try {
    if (reply === undefined) throw new Error('a shared task answered fewer calls than it carried');
    call.resolve(valueOf(reply) as StoreAnswer<'loadGraph'>);
  } catch (err) {
    call.reject(err);
  }
}

/** A byte string as the port answers it: structured clone turns a Buffer into a plain Uint8Array. */
function asBuffer(value: unknown): unknown {
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
}
