/** The gateway's own counters, read from GET /metrics (Prometheus text), summed over instances. */

export interface Scraped {
  hydrations: number;
  cacheClients: number;
  cacheHits: number;
  cacheMisses: number;
  cacheEvictions: number;
  /** The cache's own estimate of its graphs' bytes (a gauge). */
  cacheBytes: number;
  workflowRuns: number;
}

/** Sum of every series of `name` (all label sets) in one exposition. */
export function sumOf(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total += value;
  }
  return total;
}

export async function scrape(urls: readonly string[]): Promise<Scraped | undefined> {
  if (urls.length === 0) return undefined;
  const texts = await Promise.all(urls.map(async (u) => (await fetch(u, { signal: AbortSignal.timeout(10_000) })).text()));
  const sum = (name: string): number => texts.reduce((n, t) => n + sumOf(t, name), 0);
  return {
    hydrations: sum('rbac_hydration_duration_seconds_count'),
    cacheClients: sum('rbac_cache_clients'),
    cacheHits: sum('rbac_cache_hits_total'),
    cacheMisses: sum('rbac_cache_misses_total'),
    cacheEvictions: sum('rbac_cache_evictions_total'),
    cacheBytes: sum('rbac_cache_bytes'),
    workflowRuns: sum('rbac_workflow_runs_total'),
  };
}

/** What happened between two scrapes: counters as differences, the gauge as it is at the end. */
export function delta(before: Scraped, after: Scraped): Scraped & { hitRatio: number } {
  const hits = after.cacheHits - before.cacheHits;
  const misses = after.cacheMisses - before.cacheMisses;
  return {
    hydrations: after.hydrations - before.hydrations,
    cacheClients: after.cacheClients,
    cacheHits: hits,
    cacheMisses: misses,
    cacheEvictions: after.cacheEvictions - before.cacheEvictions,
    cacheBytes: after.cacheBytes,
    workflowRuns: after.workflowRuns - before.workflowRuns,
    hitRatio: hits + misses === 0 ? NaN : hits / (hits + misses),
  };
}
