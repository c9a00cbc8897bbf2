import { METRICS, REQUEST_BUCKETS } from './definitions.ts';

/** A `/api` series: one route (its operationId) with one method, and the status it succeeds with. */
export interface RequestSeries {
  readonly route: string;
  readonly method: string;
  readonly successStatus: number;
}

/** A metric as prom-client's registries exchange it (what its cluster aggregation merges). */
export interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly aggregator: string;
  readonly values: ReadonlyArray<{ readonly value: number; readonly labels: Record<string, string | number>; readonly metricName?: string }>;
}

/**
 * What the request path records. The hot path calls these once or twice per request: plain
 * increments into arrays and maps indexed by series, turned into prom-client's form only when
 * scraped. The no-op ({@link NO_REQUEST_METRICS}) stands in when metrics are off.
 */
export interface RequestMetrics {
  /** A `/api` answer of series `series` (an index into the series list) after `seconds`. */
  answered(series: number, status: number, seconds: number): void;
  decision(allowed: boolean): void;
  /** Whether the request found its client's graph cached. */
  cache(hit: boolean): void;
  /** The request's client never wrote: answered from the client index, neither a hit nor a miss. */
  unknownClient(): void;
}

export const NO_REQUEST_METRICS: RequestMetrics = {
  answered: () => undefined,
  decision: () => undefined,
  cache: () => undefined,
  unknownClient: () => undefined,
};

const BOUNDS: readonly number[] = REQUEST_BUCKETS;

/** The counters behind {@link RequestMetrics}, per worker. */
export class RequestCounters implements RequestMetrics {
  readonly #series: readonly RequestSeries[];
  /** Per series: requests answered with its success status (most of them: no map look-up). */
  readonly #successes: Float64Array;
  /** Per series: every other status → requests. */
  readonly #statuses: Array<Map<number, number>>;
  /** Per series: requests per bucket (not cumulative), the last one over every bound. */
  readonly #buckets: Float64Array[];
  readonly #sums: Float64Array;
  #allow = 0;
  #deny = 0;
  hits = 0;
  misses = 0;
  unknown = 0;

  constructor(series: readonly RequestSeries[]) {
    this.#series = series;
    // Every route's success status is there from the start, at 0 (docs/operations.md §2).
    this.#successes = new Float64Array(series.length);
    this.#statuses = series.map(() => new Map());
    this.#buckets = series.map(() => new Float64Array(BOUNDS.length + 1));
    this.#sums = new Float64Array(series.length);
  }

  answered(series: number, status: number, seconds: number): void {
    const s = this.#series[series];
    if (s === undefined) return;
    if (status === s.successStatus) this.#successes[series]! += 1;
    else {
      const statuses = this.#statuses[series] as Map<number, number>;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    let i = 0;
    while (i < BOUNDS.length && seconds > (BOUNDS[i] as number)) i++;
    (this.#buckets[series] as Float64Array)[i]! += 1;
    this.#sums[series]! += seconds;
  }

  decision(allowed: boolean): void {
    if (allowed) this.#allow++;
    else this.#deny++;
  }

  cache(hit: boolean): void {
    if (hit) this.hits++;
    else this.misses++;
  }

  unknownClient(): void {
    this.unknown++;
  }

  /** The request metrics in prom-client's exchange form. */
  toJson(): MetricJson[] {
    const requests: Array<MetricJson['values'][number]> = [];
    const durations: Array<MetricJson['values'][number]> = [];
    this.#series.forEach((s, i) => {
      const labels = { route: s.route, method: s.method };
      requests.push({ value: this.#successes[i] as number, labels: { ...labels, status: s.successStatus } });
      for (const [status, value] of this.#statuses[i] as Map<number, number>) requests.push({ value, labels: { ...labels, status } });
      const buckets = this.#buckets[i] as Float64Array;
      let cumulative = 0;
      BOUNDS.forEach((le, b) => {
        cumulative += buckets[b] as number;
        durations.push({ value: cumulative, labels: { ...labels, le }, metricName: `${METRICS.httpDuration.name}_bucket` });
      });
      cumulative += buckets[BOUNDS.length] as number;
      durations.push({ value: cumulative, labels: { ...labels, le: '+Inf' }, metricName: `${METRICS.httpDuration.name}_bucket` });
      durations.push({ value: this.#sums[i] as number, labels, metricName: `${METRICS.httpDuration.name}_sum` });
      durations.push({ value: cumulative, labels, metricName: `${METRICS.httpDuration.name}_count` });
    });
    const { httpRequests: r, httpDuration: d, checkDecisions: c } = METRICS;
    return [
      { name: r.name, help: r.help, type: r.type, aggregator: r.aggregation, values: requests },
      { name: d.name, help: d.help, type: d.type, aggregator: d.aggregation, values: durations },
      {
        name: c.name,
        help: c.help,
        type: c.type,
        aggregator: c.aggregation,
        values: [
          { value: this.#allow, labels: { result: 'allow' } },
          { value: this.#deny, labels: { result: 'deny' } },
        ],
      },
    ];
  }
}
