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

/** The /api request-duration histogram: cumulative counts per upper bound (seconds), summed over routes and instances. */
export type Buckets = Map<number, number>;

const DURATION_BUCKET = 'rbac_http_request_duration_seconds_bucket{';

/** The request-duration buckets of every exposition, summed by `le`. */
export async function scrapeBuckets(urls: readonly string[]): Promise<Buckets> {
  const texts = await Promise.all(urls.map(async (u) => (await fetch(u, { signal: AbortSignal.timeout(10_000) })).text()));
  const buckets: Buckets = new Map();
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (!line.startsWith(DURATION_BUCKET)) continue;
      const le = /le="([^"]+)"/.exec(line)?.[1];
      if (le === undefined) continue;
      const bound = le === '+Inf' ? Infinity : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
  }
  return buckets;
}

/**
 * The server's own view of the requests between two scrapes: quantile `q` in milliseconds,
 * interpolated inside its bucket as Prometheus' histogram_quantile does, and the share answered
 * within each bound. The client's latency adds the load generator's own delays on a shared machine;
 * this does not.
 */
export function serverLatency(before: Buckets, after: Buckets, q: number): { count: number; quantileMs: number; within: Map<number, number> } {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const count = counts.at(-1) ?? 0;
  const within = new Map(bounds.map((b, i) => [b, count === 0 ? NaN : (counts[i] as number) / count]));
  const rank = q * count;
  let quantileMs = NaN;
  for (let i = 0; i < bounds.length; i++) {
    if ((counts[i] as number) < rank) continue;
    const upper = bounds[i] as number;
    const lower = i === 0 ? 0 : (bounds[i - 1] as number);
    const below = i === 0 ? 0 : (counts[i - 1] as number);
    const inBucket = (counts[i] as number) - below;
    // Past the last finite bound only the bound itself is known.
    quantileMs = 1000 * (upper === Infinity ? lower : lower + (upper - lower) * (inBucket === 0 ? 1 : (rank - below) / inBucket));
    break;
  }
  return { count, quantileMs, within };
}
