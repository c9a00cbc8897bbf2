import { LRUCache } from 'lru-cache';
import type { Change, ChangeRecord, Snapshot } from '../authz/changes.ts';
import { TenantGraph } from '../authz/graph.ts';

/** Where hydration reads a tenant from (the pool, in the worker). */
export type SnapshotLoader = (tenant: string) => Promise<Snapshot>;

/** The changelog of a tenant after a revision, to fill a gap. */
export type Replay = (since: number) => Promise<readonly ChangeRecord[]>;

interface Waiter {
  readonly revision: number;
  readonly resolve: (ok: boolean) => void;
}

/**
 * The tenant graphs of one worker: an LRU bounded by an estimate of their heap size, filled by
 * single-flight hydration. Unknown tenants are cached too (as empty graphs), so random keys cannot
 * turn each request into a database read. A hydration that started before a change was applied
 * never installs a graph older than that change: the revision floor sends it round again.
 */
export class TenantCache {
  readonly #lru: LRUCache<string, TenantGraph>;
  readonly #load: SnapshotLoader;
  readonly #inflight = new Map<string, Promise<TenantGraph>>();
  /** The newest revision known per tenant while its hydration is in flight. */
  readonly #floor = new Map<string, number>();
  readonly #waiters = new Map<string, Waiter[]>();
  hits = 0;
  misses = 0;

  constructor(load: SnapshotLoader, maxBytes: number) {
    this.#load = load;
    this.#lru = new LRUCache<string, TenantGraph>({
      maxSize: maxBytes,
      sizeCalculation: (g) => Math.max(1, g.estimatedBytes),
    });
  }

  /** The cached graph, or undefined (the caller then awaits {@link load}). Synchronous. */
  get(tenant: string): TenantGraph | undefined {
    const g = this.#lru.get(tenant);
    if (g === undefined) this.misses++;
    else this.hits++;
    return g;
  }

  get size(): number {
    return this.#lru.size;
  }

  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  /** Hydrates the tenant once, however many requests ask at the same time. */
  load(tenant: string): Promise<TenantGraph> {
    const cached = this.#lru.get(tenant);
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

  /** The cached tenants and the revision of each graph (without touching their recency). */
  revisions(): Array<[string, number]> {
    const out: Array<[string, number]> = [];
    for (const [tenant, g] of this.#lru.entries()) out.push([tenant, g.revision]);
    return out;
  }

  /**
   * Brings a cached graph up to `stored` (a revision the database reported) by replaying the
   * changelog; a graph that cannot be brought up is dropped, so the next request hydrates.
   */
  async catchUp(tenant: string, stored: number, replay: Replay): Promise<void> {
    const g = this.#lru.peek(tenant);
    if (g === undefined || g.revision >= stored) return;
    try {
      for (const rec of await replay(g.revision)) g.apply(rec.change, rec.revision);
    } catch {
      // the graph stays behind and is dropped below
    }
    if (this.#lru.peek(tenant) !== g) return;
    this.#lru.delete(tenant);
    if (g.revision < stored) return;
    this.#lru.set(tenant, g);
    this.#wake(tenant, g.revision);
  }

  /** Forgets the tenant's graph; the next request hydrates it. */
  drop(tenant: string): void {
    this.#lru.delete(tenant);
  }

  /** Drops the cached graph and hydrates again (after a gap in the revisions). */
  reload(tenant: string): Promise<TenantGraph> {
    this.#lru.delete(tenant);
    return this.load(tenant);
  }

  /**
   * Applies a committed change in revision order. When revisions were missed (a gap), the missing
   * ones are replayed from the changelog first; if that fails or falls short, the graph is dropped
   * so the next request hydrates a complete one. Never applies a change out of order.
   */
  async apply(tenant: string, change: Change, revision: number, replay: Replay): Promise<void> {
    if (this.#inflight.has(tenant)) {
      this.#floor.set(tenant, Math.max(this.#floor.get(tenant) ?? 0, revision));
    }
    const g = this.#lru.peek(tenant);
    if (g === undefined) return;
    const result = g.apply(change, revision);
    if (result === 'stale') return;
    if (result === 'gap') {
      try {
        for (const rec of await replay(g.revision)) g.apply(rec.change, rec.revision);
      } catch {
        // fall through: the graph is behind and is dropped below
      }
      if (g.revision < revision) {
        if (this.#lru.peek(tenant) === g) this.#lru.delete(tenant);
        return;
      }
    }
    if (this.#lru.peek(tenant) !== g) return;
    // lru-cache sizes an entry when it is set: set it again so the budget follows the growth.
    this.#lru.delete(tenant);
    this.#lru.set(tenant, g);
    this.#wake(tenant, g.revision);
  }

  /**
   * Resolves true once the tenant's cached graph reaches `revision`, false after `timeoutMs`.
   * `refresh` is called while waiting, so a change committed elsewhere is picked up too.
   */
  waitFor(tenant: string, revision: number, timeoutMs: number, refresh: () => Promise<void>): Promise<boolean> {
    const g = this.#lru.peek(tenant);
    if (g !== undefined && g.revision >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      let done = false;
      const finish = (ok: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
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
      const timer = setTimeout(() => finish(false), timeoutMs);
      const poll = setInterval(() => void refresh().catch(() => undefined), 100);
      void refresh().catch(() => undefined);
    });
  }

  async #hydrate(tenant: string): Promise<TenantGraph> {
    for (;;) {
      const snapshot = await this.#load(tenant);
      const floor = this.#floor.get(tenant) ?? 0;
      if (snapshot.revision < floor) continue; // a change committed while we read: read again
      const g = TenantGraph.fromSnapshot(snapshot);
      this.#lru.set(tenant, g);
      this.#wake(tenant, g.revision);
      return g;
    }
  }

  #wake(tenant: string, revision: number): void {
    const list = this.#waiters.get(tenant);
    if (list === undefined) return;
    for (const w of [...list]) if (w.revision <= revision) w.resolve(true);
  }
}
