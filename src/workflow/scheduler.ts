import type { Logger, LogMessage } from '../log/index.ts';
import { every, type Clock, type Repeating, type Timer } from '../time/clock.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, WorkflowStore } from './records.ts';
import type { BoundaryCommitted } from '../authz/changes.ts';

/** The store's commit of passed window boundaries (TenantStore.commitBoundaries, docs/api.md §12.1). */
export interface BoundaryStore {
  commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]>;
}

/** What the scheduler reports (the primary's metrics); every call is cheap and never throws. */
export interface SchedulerEvents {
  ran(seconds: number, ok: boolean): void;
  delivered(update: DeliveryUpdate): void;
  leading(leader: boolean): void;
  /** Boundary changes this leader committed (docs/api.md §12.1), in commit order: for the caches and the metrics. */
  boundaries(committed: readonly BoundaryCommitted[]): void;
}

export interface SchedulerOptions {
  readonly store: Pick<WorkflowStore, 'takeLease' | 'releaseLease' | 'dueSchedules' | 'runSchedule' | 'claimDeliveries' | 'recordDelivery'> & BoundaryStore;
  /** Makes one delivery attempt and says what to record on the run (it never throws). */
  readonly deliver: (job: DeliveryJob) => Promise<DeliveryUpdate>;
  /** Names this process in the lease (host, pid and a random part: unique across restarts). */
  readonly owner: string;
  /** How long a lease lasts without renewal: how soon another instance takes over a dead holder. */
  readonly leaseMs: number;
  /** How often the leader looks for due schedules and deliveries. */
  readonly tickMs: number;
  readonly newWebhookId: () => string;
  readonly log: Logger;
  readonly events: SchedulerEvents;
  /** What time it is for leases, runs and claims, and what its renewals, ticks and stop wait by. */
  readonly clock: Clock;
}

/** Window boundaries committed per store call at most; a tick makes calls until none is left. */
const BOUNDARIES_PER_CALL = 500;
/** Schedules run per tick at most; the rest wait for the next tick (runs are database work). */
const RUNS_PER_TICK = 50;
/** Deliveries in flight at once: a slow receiver holds one slot for at most the 5 s timeout. */
const MAX_DELIVERIES = 16;
/** A claimed delivery is tried again after this long if its attempt never reported (the claimer died). */
const DELIVERY_CLAIM_MS = 15_000;
/** At shutdown, how long deliveries in flight may take to record their outcome. */
const STOP_GRACE_MS = 2_000;

/**
 * The workflow scheduler (docs/api.md §16), run in the primary: it owns no socket and no graph;
 * its leader also commits the boundaries of timed grants and memberships as they pass (§12.1),
 * before the runs of the same tick, so that a run sees an expiry that came due before it;
 * runs are made by the store in one transaction each, off this event loop (pool threads).
 * Exactly one instance leads at a time, under a lease in the database renewed every quarter of
 * its length; only the leader runs due schedules and delivers webhooks. The store's run is also
 * conditional on the schedule still being due, so even two leaders (a paused process whose lease
 * ran out) cannot make the same run twice.
 */
export class Scheduler {
  readonly #o: SchedulerOptions;
  #leader = false;
  #stopped = false;
  #leaseTimer: Repeating | undefined;
  #tickTimer: Repeating | undefined;
  #ticking: Promise<void> | undefined;
  readonly #deliveries = new Set<Promise<void>>();
  #lastProblem = '';

  constructor(options: SchedulerOptions) {
    this.#o = options;
  }

  /**
   * Takes the lease now, then renews it every quarter of its length, and ticks every `tickMs`
   * while leading. A tick still running when the next is due makes that one a no-op: ticks
   * never overlap, and missed ones are not made up (a late run finds its schedule still due).
   */
  start(): void {
    const renew = (): void => void this.#renewLease();
    renew();
    const background = { unref: true };
    this.#leaseTimer = every(this.#o.clock, Math.max(50, Math.floor(this.#o.leaseMs / 4)), renew, background);
    this.#tickTimer = every(
      this.#o.clock,
      this.#o.tickMs,
      () => {
        if (this.#leader && this.#ticking === undefined) this.#ticking = this.#tick().finally(() => (this.#ticking = undefined));
      },
      background,
    );
  }

  get leader(): boolean {
    return this.#leader;
  }

  /** Stops ticking, lets deliveries in flight record their outcome (briefly), and gives the lease up. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#leaseTimer?.stop();
    this.#tickTimer?.stop();
    await this.#ticking;
    let grace: Timer | undefined;
    const graceOver = new Promise<void>((resolve) => (grace = this.#o.clock.setTimeout(() => resolve(), STOP_GRACE_MS, { unref: true })));
    await Promise.race([Promise.allSettled([...this.#deliveries]), graceOver]);
    this.#o.clock.clearTimeout(grace);
    if (this.#leader) await this.#o.store.releaseLease(this.#o.owner).catch(() => undefined);
    this.#setLeader(false);
  }

  async #renewLease(): Promise<void> {
    try {
      const held = await this.#o.store.takeLease(this.#o.owner, this.#o.clock.now(), this.#o.leaseMs);
      if (!this.#stopped) this.#setLeader(held);
      this.#problem(undefined);
    } catch (err) {
      if (this.#stopped) return; // the store closed under a renewal in flight: nothing to report
      // Unsure whether the lease is still ours: stop leading; the per-run check keeps runs single anyway.
      this.#setLeader(false);
      this.#problem(err, 'workflow scheduler cannot reach the database');
    }
  }

  #setLeader(leader: boolean): void {
    if (leader === this.#leader) return;
    this.#leader = leader;
    this.#o.events.leading(leader);
    this.#o.log.info(leader ? 'workflow scheduler leads' : 'workflow scheduler stands by', { owner: this.#o.owner });
  }

  async #tick(): Promise<void> {
    try {
      await this.#commitBoundaries();
      const due = await this.#o.store.dueSchedules(this.#o.clock.now(), RUNS_PER_TICK);
      for (const d of due) {
        if (this.#stopped || !this.#leader) return;
        await this.#run(d);
      }
      await this.#startDeliveries();
      this.#problem(undefined);
    } catch (err) {
      this.#problem(err, 'workflow scheduler tick failed');
    }
  }

  /**
   * Every boundary passed by now, oldest first, in calls of {@link BOUNDARIES_PER_CALL}: after a
   * downtime, the overdue ones all go at the first tick. The store commits each only while its
   * edge still has that bound, so a second leader (a paused process whose lease ran out) commits
   * none twice.
   */
  async #commitBoundaries(): Promise<void> {
    for (;;) {
      if (this.#stopped || !this.#leader) return;
      const committed = await this.#o.store.commitBoundaries(this.#o.clock.now() * 1000, BOUNDARIES_PER_CALL);
      if (committed.length > 0) this.#o.events.boundaries(committed);
      if (committed.length < BOUNDARIES_PER_CALL) return;
    }
  }

  async #run(due: DueSchedule): Promise<void> {
    const started = performance.now();
    try {
      const run = await this.#o.store.runSchedule(due, this.#o.clock.now(), this.#o.newWebhookId());
      if (run !== undefined) this.#o.events.ran((performance.now() - started) / 1000, true);
    } catch (err) {
      this.#o.events.ran((performance.now() - started) / 1000, false);
      throw err;
    }
  }

  async #startDeliveries(): Promise<void> {
    const room = MAX_DELIVERIES - this.#deliveries.size;
    if (room <= 0 || this.#stopped) return;
    const jobs = await this.#o.store.claimDeliveries(this.#o.clock.now(), DELIVERY_CLAIM_MS, room);
    for (const job of jobs) {
      const attempt = this.#attempt(job).finally(() => this.#deliveries.delete(attempt));
      this.#deliveries.add(attempt);
    }
  }

  /** One attempt and its outcome recorded; a failure to record leaves the claim to expire and the attempt to be made again. */
  async #attempt(job: DeliveryJob): Promise<void> {
    const update = await this.#o.deliver(job);
    try {
      await this.#o.store.recordDelivery(update);
      this.#o.events.delivered(update);
    } catch (err) {
      this.#problem(err, 'workflow delivery outcome not recorded');
    }
  }

  /** Logs a problem (undefined: none) once until it changes or clears, so a database outage is one line, not four a second. */
  #problem(err: unknown, message?: LogMessage): void {
    const why = err === undefined ? '' : describe(err);
    if (why === this.#lastProblem) return;
    this.#lastProblem = why;
    if (why !== '' && message !== undefined) this.#o.log.warn(message, { err });
  }
}

const describe = (err: unknown): string => (err instanceof Error ? err.message : String(err));
