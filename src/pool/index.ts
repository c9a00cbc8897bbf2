import { extname } from 'node:path';
import { Piscina } from 'piscina';
import type { AuditEntry, AuditRecord } from '../audit/record.ts';
import type { ChangeRecord, Snapshot } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import { fromWire } from '../errors/index.ts';
import { planThreads, type StoreSettings } from '../store/settings.ts';
import type { BatchStore, CreatedTenants, PendingWrite, WriteSettled } from '../store/port.ts';
import { storeFailure } from '../store/transient.ts';
import type { Task, TaskReply, TaskValue } from './protocol.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../workflow/records.ts';

/**
 * The store, run on a piscina thread pool: every database write and every hydration happens off
 * the event loop, so a slow disk or a long transaction never stalls request handling. Writes
 * come in batches (the worker's write pipeline makes them): one task each, which on SQLite is one
 * transaction and one fsync; on PostgreSQL each write stays its own transaction.
 */
export class PooledStore implements BatchStore {
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
    const plan = planThreads(settings, threads);
    this.#pool = new Piscina({
      // One task file per adapter, so a thread loads only its driver: the store factory inside
      // threads (store/index.ts `openStore` is the one outside). It has this module's own
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
    // Unheard, piscina's 'error' event would throw and take the whole process down with the thread.
    this.#pool.on('error', onThreadError);
    this.writeSlots = settings.type === 'sqlite' ? 1 : plan.threads * plan.concurrency;
    this.#connections = plan.threads * plan.concurrency;
  }

  /** The connections as the pool sees them: in use by a task (a task uses one at a time) or idle, and tasks queued for one. */
  connections(): { total: number; idle: number; waiting: number } {
    return { total: this.#connections, idle: Math.max(0, this.#connections - this.#running), waiting: this.#pool.queueSize };
  }

  async #run<K extends Task['kind']>(task: Task & { kind: K }): Promise<TaskValue[K]> {
    let reply: TaskReply<K>;
    this.#running++;
    try {
      reply = (await this.#pool.run(task)) as TaskReply<K>;
    } catch (err) {
      // The thread itself failed (a driver error escaped the task and took the thread down;
      // piscina replaces it): catalogue it like any store failure, so an outage is a 503.
      throw storeFailure(err, task.kind);
    } finally {
      this.#running--;
    }
    if (!reply.ok) throw fromWire(reply.error);
    return reply.value;
  }

  load(tenant: TenantId): Promise<Snapshot> {
    return this.#run({ kind: 'load', tenant });
  }
  revision(tenant: TenantId): Promise<number> {
    return this.#run({ kind: 'revision', tenant });
  }
  revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    return this.#run({ kind: 'revisions', tenants });
  }
  tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    return this.#run({ kind: 'tenantsSince', cursor });
  }
  writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    return this.#run({ kind: 'writeMany', writes });
  }
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    return this.#run({ kind: 'changes', tenant, since, limit });
  }
  async appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    await this.#run({ kind: 'appendAudit', rows });
  }
  audit(tenant: TenantId, before: number | undefined, limit: number): Promise<AuditEntry[]> {
    return this.#run({ kind: 'audit', tenant, before, limit });
  }
  pruneAudit(before: string, limit: number): Promise<number> {
    return this.#run({ kind: 'pruneAudit', before, limit });
  }
  async putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    await this.#run({ kind: 'putSchedule', schedule, nowMs, audit });
  }
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#run({ kind: 'deleteSchedule', tenant, workflow, audit });
  }
  schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return this.#run({ kind: 'schedules', tenant });
  }
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return this.#run({ kind: 'runs', tenant, workflow, before, limit });
  }
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return this.#run({ kind: 'takeLease', owner, nowMs, ttlMs });
  }
  async releaseLease(owner: string): Promise<void> {
    await this.#run({ kind: 'releaseLease', owner });
  }
  dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return this.#run({ kind: 'dueSchedules', nowMs, limit });
  }
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return this.#run({ kind: 'runSchedule', due, nowMs, webhookId });
  }
  claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    return this.#run({ kind: 'claimDeliveries', nowMs, claimMs, limit });
  }
  async recordDelivery(update: DeliveryUpdate): Promise<void> {
    await this.#run({ kind: 'recordDelivery', update });
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
