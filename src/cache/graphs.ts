import { LRUCache } from 'lru-cache';
import type { TenantGraph } from '../authz/graph.ts';
import type { TenantId } from '../authz/tenant.ts';

/**
 * Empty graphs (revision 0) kept at most. With the client index, one is cached only for a tenant
 * the index may hold that the database does not know yet (a prefix shared with a real client,
 * or a hydration that lost a race with a first write): a handful, never a flood.
 */
export const EMPTY_GRAPHS_MAX = 1024;

/**
 * The cached graphs of one worker, on two shelves: real clients' graphs within the memory budget
 * (AUTH_CACHE_MAX_MB), and empty ones (revision 0) on a small shelf of their own, so that whatever
 * still caches an empty client can never evict a real client's graph. A graph moves to the real
 * shelf when it is set again after its first change.
 */
export class Graphs {
  readonly #real: LRUCache<TenantId, TenantGraph>;
  readonly #empty: LRUCache<TenantId, TenantGraph>;
  /**
   * The last real graph found, and its tenant. A run of requests of one client, the common case,
   * skips the LRU's bookkeeping: its recency could not change (it is the most recent already, as
   * nothing else was looked up since). Forgotten on every set and delete, where eviction happens.
   */
  #lastTenant: TenantId | '' = '';
  #lastGraph: TenantGraph | undefined;

  /** `evicted` hears of each real graph evicted to stay within `maxBytes`. */
  constructor(maxBytes: number, evicted: () => void) {
    const sizeCalculation = (g: TenantGraph): number => Math.max(1, g.estimatedBytes);
    this.#real = new LRUCache<TenantId, TenantGraph>({
      maxSize: maxBytes,
      sizeCalculation,
      disposeAfter: (_g, _tenant, reason) => {
        if (reason === 'evict') evicted();
      },
    });
    this.#empty = new LRUCache<TenantId, TenantGraph>({ max: EMPTY_GRAPHS_MAX });
  }

  get size(): number {
    return this.#real.size + this.#empty.size;
  }

  /** Estimated bytes of the real graphs (what the budget bounds), plus the empty ones'. */
  get bytes(): number {
    let empty = 0;
    for (const g of this.#empty.values()) empty += Math.max(1, g.estimatedBytes);
    return this.#real.calculatedSize + empty;
  }

  /** A real client's graph, marked as recently used. */
  real(tenant: TenantId): TenantGraph | undefined {
    if (tenant === this.#lastTenant) return this.#lastGraph;
    const g = this.#real.get(tenant);
    if (g !== undefined) {
      this.#lastTenant = tenant;
      this.#lastGraph = g;
    }
    return g;
  }

  /** An empty graph, marked as recently used. */
  empty(tenant: TenantId): TenantGraph | undefined {
    return this.#empty.get(tenant);
  }

  /** Either, without touching recency. */
  peek(tenant: TenantId): TenantGraph | undefined {
    return this.#real.peek(tenant) ?? this.#empty.peek(tenant);
  }

  /** Puts the graph on its shelf, sized anew (lru-cache sizes an entry only when it is set). */
  set(tenant: TenantId, g: TenantGraph): void {
    this.delete(tenant);
    if (g.revision > 0) this.#real.set(tenant, g);
    else this.#empty.set(tenant, g);
  }

  delete(tenant: TenantId): void {
    this.#lastTenant = '';
    this.#lastGraph = undefined;
    this.#real.delete(tenant);
    this.#empty.delete(tenant);
  }
}
