import { commitsOf, edgeChanges, type Change, type ChangeRecord, type Commit, type LoggedChange } from '../authz/changes.ts';
import type { GraphImage } from '../authz/graph-image.ts';
import { TenantGraph } from '../authz/graph.ts';
import type { TenantId } from '../authz/tenant.ts';
import { every, systemClock, type Clock, type Timer } from '../time/clock.ts';
import { ClientIndex } from './client-index.ts';
import { Graphs } from './graphs.ts';

/**
 * The graph of every tenant the client index has never heard of: revision 0, nothing in it. One
 * shared instance, never cached and never changed (changes apply only to cached graphs).
 */
export const UNKNOWN_CLIENT: TenantGraph = new TenantGraph(0);

/** Reads a tenant's graph (a store's `loadGraph`: built on a pool thread, its buffers moved here). */
export type GraphLoader = (tenant: TenantId) => Promise<GraphImage>;

/** The changelog of a tenant after a revision, to fill a gap. */
export type Replay = (since: number) => Promise<readonly ChangeRecord[]>;

interface Waiter {
  readonly revision: number;
  readonly resolve: (ok: boolean) => void;
}

/** Changes that arrived ahead of a missing revision, for one graph, and the writers waiting on them. */
interface Held {
  readonly graph: TenantGraph;
  readonly changes: Map<number, readonly Change[]>;
  waiting: Waiter[];
  readonly timer: Timer;
}

const DONE: Promise<void> = Promise.resolve();

/** How often a revision wait asks `refresh` again. */
const REFRESH_MS = 100;

/** How a gap in a graph's revisions was closed: the missing change came, the changelog filled it, or the graph was given up. */
export type GapResolution = 'held' | 'replayed' | 'rehydrated';

/** What the cache tells its observer (the worker's metrics); a no-op unless given. */
export interface CacheEvents {
  hydrated(seconds: number): void;
  evicted(): void;
  gap(resolution: GapResolution): void;
}

const NO_EVENTS: CacheEvents = { hydrated: () => undefined, evicted: () => undefined, gap: () => undefined };

/** How long a change waits for a missing earlier one before the changelog is replayed. */
const GAP_WAIT_MS = 100;

/**
 * The tenant graphs of one worker: an LRU bounded by an estimate of their heap size, filled by
 * single-flight hydration. A tenant that has never written is answered from the client index,
 * without the database and without a cache entry, so random keys cost nothing (see
 * {@link ClientIndex}). A hydration that started before a change was applied never installs a
 * graph older than that change: the revision floor sends it round again.
 */
export class TenantCache {
  readonly #graphs: Graphs;
  readonly #index = new ClientIndex();
  /** Until the index is loaded from the database, every tenant goes the normal way. */
  #indexLoaded = false;
  readonly #load: GraphLoader;
  readonly #inflight = new Map<TenantId, Promise<TenantGraph>>();
  /** The newest revision known per tenant while its hydration is in flight. */
  readonly #floor = new Map<TenantId, number>();
  readonly #waiters = new Map<TenantId, Waiter[]>();
  readonly #held = new Map<TenantId, Held>();
  readonly #gapWaitMs: number;
  readonly #events: CacheEvents;
  /** The gap wait's and the revision waits' (a test moves it by hand). */
  readonly #clock: Clock;

  constructor(load: GraphLoader, maxBytes: number, gapWaitMs = GAP_WAIT_MS, events: CacheEvents = NO_EVENTS, clock: Clock = systemClock) {
    this.#load = load;
    this.#clock = clock;
    this.#gapWaitMs = gapWaitMs;
    this.#events = events;
    this.#graphs = new Graphs(maxBytes, () => events.evicted());
  }

  /** Graphs cached now. */
  get size(): number {
    return this.#graphs.size;
  }

  /** Their estimated bytes (AUTH_CACHE_MAX_MB bounds the real clients' part). */
  get bytes(): number {
    return this.#graphs.bytes;
  }

  /** Tenants in the client index. */
  get indexed(): number {
    return this.#index.size;
  }

  /**
   * Adds tenants that exist to the client index (loaded at start, then the clients created
   * since). `complete`: the index now holds every tenant the database held when it was read, so
   * a tenant missing from it can be answered as {@link UNKNOWN_CLIENT}.
   */
  know(tenants: Iterable<TenantId>, complete: boolean): void {
    for (const tenant of tenants) this.#index.add(tenant);
    if (complete) this.#indexLoaded = true;
  }

  /** False when the tenant has certainly never written (the index is loaded and does not hold it). */
  mayExist(tenant: TenantId): boolean {
    return !this.#indexLoaded || this.#index.has(tenant);
  }

  /**
   * The cached graph; {@link UNKNOWN_CLIENT} for a tenant that has never written; else undefined
   * (the caller then awaits {@link load}). Synchronous.
   */
  get(tenant: TenantId): TenantGraph | undefined {
    const g = this.#graphs.real(tenant);
    if (g !== undefined) return g;
    if (this.#indexLoaded && !this.#index.has(tenant)) return UNKNOWN_CLIENT;
    return this.#graphs.empty(tenant);
  }

  /** Hydrates the tenant once, however many requests ask at the same time. */
  load(tenant: TenantId): Promise<TenantGraph> {
    const cached = this.#graphs.real(tenant) ?? this.#graphs.empty(tenant);
    if (cached !== undefined) return Promise.resolve(cached);
    let p = this.#inflight.get(tenant);
    if (p === undefined) {
      p = this.#hydrate(tenant).finally(() => {
        this.#inflight.delete(tenant);
        this.#floor.delete(tenant);
      });
      this.#inflight.set(tenant, p);
    }
    return p;
  }

  /** The revision of the tenant's cached graph (without touching its recency); undefined when not cached. */
  cachedRevision(tenant: TenantId): number | undefined {
    return this.#graphs.peek(tenant)?.revision;
  }

  /**
   * Brings a cached graph up to `stored` (a revision the database reported) by replaying the
   * changelog; a graph that cannot be brought up is dropped, so the next request hydrates.
   */
  async catchUp(tenant: TenantId, stored: number, replay: Replay): Promise<void> {
    if (stored > 0) this.#index.add(tenant);
    // A hydration in flight may have read an older revision: it must not install it.
    if (this.#inflight.has(tenant)) this.#floor.set(tenant, Math.max(this.#floor.get(tenant) ?? 0, stored));
    const g = this.#graphs.peek(tenant);
    if (g === undefined || g.revision >= stored) return;
    try {
      replayOnto(g, commitsOf(await replay(g.revision)));
    } catch {
      // the graph stays behind and is dropped below
    }
    if (this.#graphs.peek(tenant) !== g) return;
    if (g.revision < stored) {
      this.drop(tenant);
      return;
    }
    this.#advanced(tenant, g);
  }

  /** Forgets the tenant's graph; the next request hydrates it. */
  drop(tenant: TenantId): void {
    this.#graphs.delete(tenant);
    const held = this.#held.get(tenant);
    if (held !== undefined) this.#release(tenant, held);
  }

  /** Drops the cached graph and hydrates again (after a gap in the revisions). */
  reload(tenant: TenantId): Promise<TenantGraph> {
    this.drop(tenant);
    return this.load(tenant);
  }

  /**
   * Applies a committed write request's changes in revision order and resolves once the graph reflects it (or was
   * given up). A change that arrives ahead of a missing one (two workers committed at almost the
   * same time, and the other's change is still on its way) is held for up to `gapWaitMs`; the
   * missing change normally arrives long before, and then both apply in order. Only when it does
   * not are the missing revisions replayed from the changelog; if that fails or falls short, the
   * graph is dropped so the next request hydrates a complete one. Never applies out of order.
   */
  apply(tenant: TenantId, logged: readonly LoggedChange[], revision: number, replay: Replay): Promise<void> {
    // A committed change: the tenant exists from now on (its first write is heard here).
    this.#index.add(tenant);
    if (this.#inflight.has(tenant)) {
      this.#floor.set(tenant, Math.max(this.#floor.get(tenant) ?? 0, revision));
    }
    const g = this.#graphs.peek(tenant);
    if (g === undefined) return DONE;
    const changes = edgeChanges(logged);
    if (changes === undefined) {
      // An import: the next request hydrates the graph at its revision (or later).
      if (revision > g.revision) this.drop(tenant);
      return DONE;
    }
    const result = g.apply(changes, revision);
    if (result === 'stale') return DONE;
    if (result === 'applied') {
      this.#advanced(tenant, g);
      return DONE;
    }
    let held = this.#held.get(tenant);
    if (held !== undefined && held.graph !== g) {
      this.#release(tenant, held);
      held = undefined;
    }
    if (held === undefined) {
      const h: Held = {
        graph: g,
        changes: new Map(),
        waiting: [],
        timer: this.#clock.setTimeout(() => void this.#fillGap(tenant, h, replay), this.#gapWaitMs),
      };
      held = h;
      this.#held.set(tenant, h);
    }
    held.changes.set(revision, changes);
    const h = held;
    return new Promise((resolve) => h.waiting.push({ revision, resolve: () => resolve() }));
  }

  /**
   * After `g` advanced: applies the held changes that now follow on, resizes, wakes waiters.
   * `closing` names how a gap closes if this closes one (the missing change came, or a replay).
   */
  #advanced(tenant: TenantId, g: TenantGraph, closing: GapResolution = 'held'): void {
    const held = this.#held.get(tenant);
    if (held !== undefined) {
      if (held.graph === g) {
        for (let next = held.changes.get(g.revision + 1); next !== undefined; next = held.changes.get(g.revision + 1)) {
          held.changes.delete(g.revision + 1);
          g.apply(next, g.revision + 1);
        }
        for (const r of held.changes.keys()) if (r <= g.revision) held.changes.delete(r);
        const rest: Waiter[] = [];
        for (const w of held.waiting) {
          if (w.revision <= g.revision) w.resolve(true);
          else rest.push(w);
        }
        held.waiting = rest;
        if (held.changes.size === 0) {
          this.#release(tenant, held);
          this.#events.gap(closing);
        }
      } else {
        this.#release(tenant, held);
      }
    }
    if (this.#graphs.peek(tenant) !== g) return;
    // Set again, so the budget follows the growth (and a first change moves it to the real shelf).
    this.#graphs.set(tenant, g);
    this.#wake(tenant, g.revision);
  }

  /** The wait for a missing change is over: replay the changelog, or give the graph up. */
  async #fillGap(tenant: TenantId, held: Held, replay: Replay): Promise<void> {
    const g = held.graph;
    if (this.#held.get(tenant) !== held) return;
    if (this.#graphs.peek(tenant) === g) {
      try {
        replayOnto(g, commitsOf(await replay(g.revision)));
      } catch {
        // the graph stays behind and is dropped below
      }
    }
    if (this.#held.get(tenant) !== held) return;
    this.#advanced(tenant, g, 'replayed');
    if (this.#held.get(tenant) !== held) return;
    // Still behind a change that was held: the changelog could not fill the gap.
    this.#release(tenant, held);
    if (this.#graphs.peek(tenant) === g) this.#graphs.delete(tenant);
    this.#events.gap('rehydrated');
  }

  /** Forgets the held changes of a graph and lets their writers go (the graph is current or gone). */
  #release(tenant: TenantId, held: Held): void {
    this.#clock.clearTimeout(held.timer);
    if (this.#held.get(tenant) === held) this.#held.delete(tenant);
    for (const w of held.waiting) w.resolve(true);
    held.waiting = [];
    held.changes.clear();
  }

  /**
   * Resolves true once the tenant's cached graph reaches `revision`, false after `timeoutMs`.
   * `refresh` is called while waiting, so a change committed elsewhere is picked up too.
   */
  waitFor(tenant: TenantId, revision: number, timeoutMs: number, refresh: () => Promise<void>): Promise<boolean> {
    const g = this.#graphs.peek(tenant);
    if (g !== undefined && g.revision >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      let done = false;
      const finish = (ok: boolean): void => {
        if (done) return;
        done = true;
        this.#clock.clearTimeout(timer);
        poll.stop();
        const list = this.#waiters.get(tenant);
        if (list !== undefined) {
          const rest = list.filter((w) => w !== waiter);
          if (rest.length === 0) this.#waiters.delete(tenant);
          else this.#waiters.set(tenant, rest);
        }
        resolve(ok);
      };
      const waiter: Waiter = { revision, resolve: finish };
      const list = this.#waiters.get(tenant);
      if (list === undefined) this.#waiters.set(tenant, [waiter]);
      else list.push(waiter);
      const timer = this.#clock.setTimeout(() => finish(false), timeoutMs);
      const poll = every(this.#clock, REFRESH_MS, () => void refresh().catch(() => undefined));
      void refresh().catch(() => undefined);
    });
  }

  async #hydrate(tenant: TenantId): Promise<TenantGraph> {
    const started = performance.now();
    for (;;) {
      const image = await this.#load(tenant);
      const floor = this.#floor.get(tenant) ?? 0;
      if (image.revision < floor) continue; // a change committed while we read: read again
      const g = TenantGraph.fromImage(image);
      if (g.revision > 0) this.#index.add(tenant);
      this.#graphs.set(tenant, g);
      const held = this.#held.get(tenant);
      if (held !== undefined) this.#release(tenant, held);
      this.#wake(tenant, g.revision);
      this.#events.hydrated((performance.now() - started) / 1000);
      return g;
    }
  }

  #wake(tenant: TenantId, revision: number): void {
    const list = this.#waiters.get(tenant);
    if (list === undefined) return;
    for (const w of [...list]) if (w.revision <= revision) w.resolve(true);
  }
}

/** Applies replayed commits in order, up to the first import (the graph then stays behind, and is dropped). */
function replayOnto(g: TenantGraph, commits: readonly Commit[]): void {
  for (const c of commits) {
    const changes = edgeChanges(c.changes);
    if (changes === undefined) return;
    g.apply(changes, c.revision);
  }
}
