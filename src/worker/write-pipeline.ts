import type { Change, WriteOutcome } from '../authz/changes.ts';
import { fromWire } from '../errors/index.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { PendingWrite, ScheduleInput, WorkflowStore, WriteSettled } from '../store/port.ts';
import type { AuditOfWrite, AuditRecord } from '../audit/record.ts';
import { NO_TRACER, type TraceContext, type Tracer } from '../trace/index.ts';

/**
 * A settled write on its way to the other workers: committed, or refused. A refusal changes
 * nothing, but it was read at the database's revision, which may hold changes no worker heard of
 * (their writer died between commit and fan-out): every worker must reach that revision before
 * the refusal is answered, or a read after it could miss what it refused over.
 */
export interface CommittedWrite {
  readonly tenant: TenantId;
  readonly outcome: WriteOutcome;
}

/**
 * What the commit stage writes through (store/wrappers/resilient.ts): a batch of writes, tried
 * once per call; whether and when a write that failed before committing is tried again (the wait
 * is the pipeline's, outside its commit slot); and the commit of a workflow schedule's change
 * (`putSchedule`, `deleteSchedule`: one store call each, with its audit row; no graph holds
 * schedules, so nothing is fanned out).
 */
export interface CommitStore extends Pick<WorkflowStore, 'putSchedule' | 'deleteSchedule'> {
  /**
   * Commits a batch (one pool task; one transaction on SQLite), the writes of any one tenant in
   * the order given, and settles each write on its own.
   */
  writeMany(batch: readonly PendingWrite[]): Promise<WriteSettled[]>;
  /** Whether a write whose attempt number `attempt` failed with `err` may be tried again. */
  mayRetryWrite(err: unknown, attempt: number): boolean;
  /** Resolves once the backoff after attempt number `attempt` has passed. */
  retryWait(attempt: number): Promise<void>;
}

/** The second stage (worker/fan-out.ts). */
export interface FanOutStage {
  /**
   * Makes a batch's settled writes visible on every worker of this instance: committed changes
   * applied, and each refusal's revision reached, on this worker and acknowledged by the others
   * (one message through the primary).
   */
  fanOut(batch: readonly CommittedWrite[]): Promise<void>;
}

export interface PipelineLimits {
  /** Commit batches in flight at once (1 on SQLite, which has one writer anyway). */
  readonly commitSlots: number;
  /** Fan-out batches in flight at once. */
  readonly fanOutSlots: number;
  /** Writes per batch at most (one SQLite transaction stays short). */
  readonly maxBatch: number;
}

/** A change of a tenant's graph, waiting for the commit stage. */
interface QueuedWrite extends PendingWrite {
  readonly kind: 'write';
  /** Attempts made to commit it so far. */
  attempts: number;
  /** Where its request's span was (traces on): its batch's spans are children of its first write's. */
  readonly trace: TraceContext | undefined;
  readonly resolve: (outcome: WriteOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/** A change of a tenant's workflow schedule, waiting for the commit stage: `commit` makes it and settles its caller (never rejects). */
interface QueuedSchedule {
  readonly kind: 'schedule';
  readonly tenant: TenantId;
  readonly commit: () => Promise<void>;
}

type Queued = QueuedWrite | QueuedSchedule;

interface Committing extends CommittedWrite {
  readonly trace: TraceContext | undefined;
  readonly resolve: (outcome: WriteOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * A stage with at most `slots` batches in flight: whatever arrives while they are busy is the
 * next batch. A lone item goes at once; under load, batches grow by themselves. No timers.
 */
export class CoalescingStage<T> {
  readonly #queue: T[] = [];
  readonly #slots: number;
  readonly #take: (queue: T[]) => T[];
  readonly #run: (batch: T[]) => Promise<void>;
  #inFlight = 0;

  /** `take` removes the next batch from the queue (possibly empty); `run` must not reject. */
  constructor(slots: number, take: (queue: T[]) => T[], run: (batch: T[]) => Promise<void>) {
    this.#slots = slots;
    this.#take = take;
    this.#run = run;
  }

  /** Items waiting for a slot. */
  get queued(): number {
    return this.#queue.length;
  }

  push(item: T): void {
    this.#queue.push(item);
    this.#pump();
  }

  /** Items that come before everything queued (writes tried again), in their order. */
  pushFront(items: readonly T[]): void {
    this.#queue.unshift(...items);
    this.#pump();
  }

  /** Several items that belong together: they are queued before any batch is taken. */
  pushAll(items: readonly T[]): void {
    if (items.length === 0) return;
    this.#queue.push(...items);
    this.#pump();
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#inFlight < this.#slots) {
      const batch = this.#take(this.#queue);
      if (batch.length === 0) return;
      this.#inFlight++;
      void this.#run(batch).finally(() => {
        this.#inFlight--;
        this.#pump();
      });
    }
  }
}

/**
 * The one write pipeline of a worker: commit, then fan-out, two coalescing stages. The commit of
 * batch k+1 overlaps the fan-out of batch k; a write is answered once its fan-out is acknowledged
 * (read-your-writes on every connection). Writes of one tenant keep their order: a commit batch
 * never takes a tenant that an earlier batch still in flight holds. A workflow schedule's change
 * is a write of its tenant too: it takes its turn in the commit stage (after the batch's changes
 * of graphs) and is answered once committed.
 */
export class WritePipeline {
  readonly #store: CommitStore;
  readonly #fanOutStage: FanOutStage;
  readonly #commit: CoalescingStage<Queued>;
  readonly #fanOut: CoalescingStage<Committing>;
  /** Tenants of the commit batches in flight or waiting to be tried again, with how many batches hold each. */
  readonly #committing = new Map<TenantId, number>();
  /** Writes waiting out a retry's backoff. */
  #retrying = 0;
  readonly #tracer: Tracer;

  /** With traces on, each batch's commit and fan-out is a span (`write.commit`, `write.fan_out`). */
  constructor(store: CommitStore, fanOut: FanOutStage, limits: PipelineLimits, tracer: Tracer = NO_TRACER) {
    this.#store = store;
    this.#tracer = tracer;
    this.#fanOutStage = fanOut;
    this.#commit = new CoalescingStage(
      limits.commitSlots,
      (q) => this.#takeCommitBatch(q, limits.maxBatch),
      (b) => this.#commitBatch(b),
    );
    this.#fanOut = new CoalescingStage(
      limits.fanOutSlots,
      (q) => q.splice(0, limits.maxBatch),
      (b) => this.#fanOutBatch(b),
    );
  }

  /**
   * Commits a write request's `changes` (one or more, all or none, at one revision; only while
   * the tenant is at `ifMatch` when given) and resolves once every worker of this instance sees
   * them (or with the refusal).
   */
  write(tenant: TenantId, changes: readonly Change[], audit?: AuditOfWrite, ifMatch?: number): Promise<WriteOutcome> {
    return new Promise((resolve, reject) =>
      this.#commit.push({ kind: 'write', tenant, changes, ifMatch, audit, attempts: 0, trace: this.#tracer.active(), resolve, reject }),
    );
  }

  /** Creates or replaces a schedule with its audit row (see WorkflowStore.putSchedule), in its tenant's turn. */
  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.#scheduleChange(schedule.tenant, () => this.#store.putSchedule(schedule, nowMs, audit));
  }

  /** Deletes a schedule with its runs and commits its audit row (see WorkflowStore.deleteSchedule), in its tenant's turn; false when there was none. */
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#scheduleChange(tenant, () => this.#store.deleteSchedule(tenant, workflow, audit));
  }

  /**
   * Runs `commit` in the tenant's turn among its writes, like a schedule's change (an import,
   * docs/api.md §17, which commits and fans out by itself), and answers what it answers.
   */
  inTurn<T>(tenant: TenantId, commit: () => Promise<T>): Promise<T> {
    return this.#scheduleChange(tenant, commit);
  }

  #scheduleChange<T>(tenant: TenantId, commit: () => Promise<T>): Promise<T> {
    const trace = this.#tracer.active();
    return new Promise((resolve, reject) => {
      const run = async (): Promise<void> => {
        try {
          resolve(await this.#tracer.within(trace, commit));
        } catch (err) {
          reject(err);
        }
      };
      this.#commit.push({ kind: 'schedule', tenant, commit: run });
    });
  }

  /** Writes not yet handed to a stage, or waiting to be tried again (for a graceful stop). */
  get queued(): number {
    return this.#commit.queued + this.#fanOut.queued + this.#retrying;
  }

  /**
   * The next commit batch: queued writes in order, skipping tenants an in-flight batch holds. A
   * batch commits its changes of graphs before its schedule changes, so a tenant's change of its
   * graph queued after a schedule change of its own waits for the next batch, and so does
   * everything of a tenant after one of its writes that waits.
   */
  #takeCommitBatch(queue: Queued[], max: number): Queued[] {
    if (this.#committing.size === 0 && queue.length <= max && !queue.some((q) => q.kind === 'schedule')) return queue.splice(0);
    const batch: Queued[] = [];
    const rest: Queued[] = [];
    const waiting = new Set<TenantId>();
    const scheduled = new Set<TenantId>();
    for (const q of queue) {
      const take = batch.length < max && !this.#committing.has(q.tenant) && !waiting.has(q.tenant) && !(q.kind === 'write' && scheduled.has(q.tenant));
      if (!take) {
        rest.push(q);
        waiting.add(q.tenant);
        continue;
      }
      batch.push(q);
      if (q.kind === 'schedule') scheduled.add(q.tenant);
    }
    queue.splice(0, queue.length, ...rest);
    return batch;
  }

  async #commitBatch(batch: Queued[]): Promise<void> {
    this.#hold(batch);
    try {
      const writes = batch.filter((q): q is QueuedWrite => q.kind === 'write');
      if (writes.length > 0) await this.#commitWrites(writes);
      // One after the other, after the batch's writes: the order they were queued in.
      for (const q of batch) if (q.kind === 'schedule') await q.commit();
    } finally {
      this.#release(batch);
    }
  }

  /** Counts a batch's tenants as held: no later write of theirs is taken until it is released. */
  #hold(batch: readonly Queued[]): void {
    for (const w of batch) this.#committing.set(w.tenant, (this.#committing.get(w.tenant) ?? 0) + 1);
  }

  #release(batch: readonly Queued[]): void {
    for (const w of batch) {
      const n = (this.#committing.get(w.tenant) ?? 1) - 1;
      if (n === 0) this.#committing.delete(w.tenant);
      else this.#committing.set(w.tenant, n);
    }
  }

  /** One attempt at a batch; what failed before committing and may be tried again is, after the backoff. */
  async #commitWrites(batch: QueuedWrite[]): Promise<void> {
    for (const w of batch) w.attempts++;
    let settled: WriteSettled[];
    const pending = batch.map(({ tenant, changes, ifMatch, audit }) => ({ tenant, changes, ifMatch, audit }));
    try {
      settled = await (this.#tracer.enabled ? this.#batchSpan('write.commit', batch, () => this.#store.writeMany(pending)) : this.#store.writeMany(pending));
    } catch (err) {
      // The whole batch failed: each write is tried again or rejected with that failure.
      return this.#retryLater(batch.filter((w) => this.#settle(w, err)));
    }
    const committed: Committing[] = [];
    const again = batch.filter((w, i) => this.#afterCommit(w, settled[i], committed));
    // The batch's committed writes go on together, as one fan-out batch when that stage is free.
    this.#fanOut.pushAll(committed);
    this.#retryLater(again);
  }

  /**
   * Settles a failed write at once, or, when the store says it may be tried again, answers true
   * and leaves it to the caller; a committed or refused one joins `committed`.
   */
  #afterCommit(w: QueuedWrite, settled: WriteSettled | undefined, committed: Committing[]): boolean {
    if (settled === undefined) {
      w.reject(new Error('the store settled fewer writes than it was given'));
      return false;
    }
    if (!settled.ok) return this.#settle(w, fromWire(settled.error));
    // A refusal goes through the fan-out too, so that every worker is at its revision first.
    committed.push({ tenant: w.tenant, outcome: settled.value, trace: w.trace, resolve: w.resolve, reject: w.reject });
    return false;
  }

  /** True when `w`, failed with `err`, may be tried again; else rejects it. */
  #settle(w: QueuedWrite, err: unknown): boolean {
    if (this.#store.mayRetryWrite(err, w.attempts)) return true;
    w.reject(err);
    return false;
  }

  /**
   * Writes to try again, once the backoff has passed, ahead of everything queued and in their
   * order. The wait holds their tenants (no later write of theirs overtakes them) but no commit
   * slot: other tenants' batches commit meanwhile.
   */
  #retryLater(writes: QueuedWrite[]): void {
    if (writes.length === 0) return;
    this.#hold(writes);
    this.#retrying += writes.length;
    void this.#store.retryWait(Math.max(...writes.map((w) => w.attempts))).finally(() => {
      this.#retrying -= writes.length;
      this.#release(writes);
      this.#commit.pushFront(writes);
    });
  }

  /** `work` in a span named `name`, in the trace of the batch's first write (traces on only). */
  #batchSpan<T>(name: string, batch: ReadonlyArray<{ readonly trace: TraceContext | undefined }>, work: () => Promise<T>): Promise<T> {
    return this.#tracer.within(batch[0]?.trace, () => this.#tracer.span(name, work, { attributes: { 'rbac.batch.writes': batch.length } }));
  }

  async #fanOutBatch(batch: Committing[]): Promise<void> {
    try {
      await (this.#tracer.enabled ? this.#batchSpan('write.fan_out', batch, () => this.#fanOutStage.fanOut(batch)) : this.#fanOutStage.fanOut(batch));
      for (const c of batch) c.resolve(c.outcome);
    } catch (err) {
      for (const c of batch) c.reject(err);
    }
  }
}
