import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricConfiguration } from 'prom-client';
import { withCompliantNames } from './retained.ts';
import { METRICS, type MetricSpec } from './definitions.ts';
import { RequestCounters, type MetricJson, type RequestSeries } from './requests.ts';

/** What a worker's metrics read when scraped (plain values its parts keep anyway). */
export interface WorkerGauges {
  cacheClients(): number;
  cacheBytes(): number;
  /** Clients in the client index. */
  indexedClients(): number;
  /** 0 closed, 1 half-open, 2 open. */
  circuitState(): number;
  dbConnections(): { total: number; idle: number; waiting: number };
}

const options = (m: MetricSpec, registry: Registry) => ({
  name: m.name,
  help: m.help,
  labelNames: [...m.labels],
  registers: [registry],
  aggregator: m.aggregation,
  ...(m.buckets === undefined ? {} : { buckets: [...m.buckets] }),
});

/**
 * One worker's metrics: the request counters (the hot path's, see {@link RequestCounters}) and
 * the rest, kept by prom-client (none of them is per request). The primary asks for
 * {@link snapshot} over IPC and merges every worker's with prom-client's cluster aggregation.
 */
export class WorkerMetrics {
  readonly requests: RequestCounters;
  readonly #registry = new Registry();
  readonly #hydration: Histogram;
  readonly #invalidation: Histogram;
  readonly #gaps: Counter;
  readonly #writes: Counter;
  readonly #evictions: Counter;
  readonly #retries: Counter;

  constructor(series: readonly RequestSeries[], gauges: WorkerGauges) {
    this.requests = new RequestCounters(series);
    const r = this.#registry;
    collectDefaultMetrics({ register: r });
    this.#hydration = new Histogram(options(METRICS.hydration, r));
    this.#invalidation = new Histogram(options(METRICS.invalidationDelay, r));
    this.#gaps = new Counter(options(METRICS.revisionGaps, r));
    this.#writes = new Counter(options(METRICS.writes, r));
    this.#evictions = new Counter(options(METRICS.cacheEvictions, r));
    this.#retries = new Counter(options(METRICS.dbRetries, r));
    for (const resolution of ['held', 'replayed', 'rehydrated']) this.#gaps.inc({ resolution }, 0);
    const requests = this.requests;
    const counted = (m: MetricSpec, read: () => number) =>
      new Counter({
        ...options(m, r),
        collect(this: Counter) {
          this.reset();
          this.inc(read());
        },
      } as MetricConfiguration<string>);
    counted(METRICS.cacheHits, () => requests.hits);
    counted(METRICS.cacheMisses, () => requests.misses);
    counted(METRICS.unknownClients, () => requests.unknown);
    const gauge = (m: MetricSpec, read: (g: Gauge) => void) =>
      new Gauge({
        ...options(m, r),
        collect(this: Gauge) {
          read(this);
        },
      } as MetricConfiguration<string>);
    gauge(METRICS.cacheClients, (g) => g.set(gauges.cacheClients()));
    gauge(METRICS.cacheBytes, (g) => g.set(gauges.cacheBytes()));
    gauge(METRICS.indexedClients, (g) => g.set(gauges.indexedClients()));
    gauge(METRICS.dbCircuit, (g) => g.set(gauges.circuitState()));
    gauge(METRICS.dbPool, (g) => {
      const c = gauges.dbConnections();
      g.set({ state: 'total' }, c.total);
      g.set({ state: 'idle' }, c.idle);
      g.set({ state: 'waiting' }, c.waiting);
    });
  }

  hydrated(seconds: number): void {
    this.#hydration.observe(seconds);
  }
  evicted(): void {
    this.#evictions.inc();
  }
  gap(resolution: string): void {
    this.#gaps.inc({ resolution });
  }
  /** A change committed elsewhere (another worker, another instance) applied here, `seconds` after its commit. */
  invalidated(source: 'worker' | 'instance', seconds: number): void {
    this.#invalidation.observe({ source }, Math.max(0, seconds));
  }
  write(op: string, result: string): void {
    this.#writes.inc({ op, result });
  }
  retried(): void {
    this.#retries.inc();
  }

  /** Everything, in prom-client's exchange form. */
  async snapshot(): Promise<MetricJson[]> {
    const own = (await this.#registry.getMetricsAsJSON()) as unknown as MetricJson[];
    return [...this.requests.toJson(), ...withCompliantNames(own)];
  }
}
