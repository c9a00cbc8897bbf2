import type { MetricJson } from './requests.ts';

/**
 * What Prometheus may read as a counter: counters, and histograms (their buckets, sum and count
 * only ever grow). These are the metrics whose totals must not go down when a worker goes away.
 */
function isCumulative(m: MetricJson): boolean {
  return m.type === 'counter' || m.type === 'histogram';
}

type Value = MetricJson['values'][number];

/** One series' identity inside a metric: its sample name (`_bucket`, `_sum`, …) and its labels. */
function seriesKey(v: Value): string {
  const labels = Object.keys(v.labels)
    .sort()
    .map((k) => `${k}=${String(v.labels[k])}`)
    .join(',');
  return `${v.metricName ?? ''}{${labels}}`;
}

/**
 * The counters and histograms of `into` plus those of `more`, series by series; gauges are dropped
 * (a gauge of a process that is gone describes nothing). Used to keep an exited worker's counts in
 * the totals, so that its disappearance is not read as a counter reset (docs/operations.md §2).
 */
export function addCumulative(into: readonly MetricJson[], more: readonly MetricJson[]): MetricJson[] {
  const byName = new Map<string, { metric: MetricJson; values: Map<string, Value> }>();
  for (const m of [...into, ...more]) {
    if (!isCumulative(m)) continue;
    let entry = byName.get(m.name);
    if (entry === undefined) {
      entry = { metric: m, values: new Map() };
      byName.set(m.name, entry);
    }
    for (const v of m.values) {
      const key = seriesKey(v);
      const had = entry.values.get(key);
      entry.values.set(key, had === undefined ? v : { ...had, value: had.value + v.value });
    }
  }
  return [...byName.values()].map(({ metric, values }) => ({ ...metric, values: [...values.values()] }));
}

/**
 * prom-client's default gauges whose names end in `_total`, which the exposition format keeps for
 * counters (`promtool check metrics` refuses them): they are exposed under these names instead.
 */
export const RENAMED_GAUGES: ReadonlyMap<string, string> = new Map([
  ['nodejs_active_handles_total', 'nodejs_active_handles_all'],
  ['nodejs_active_requests_total', 'nodejs_active_requests_all'],
  ['nodejs_active_resources_total', 'nodejs_active_resources_all'],
]);

/** `metrics` with {@link RENAMED_GAUGES} applied. */
export function withCompliantNames(metrics: readonly MetricJson[]): MetricJson[] {
  return metrics.map((m) => {
    const name = m.type === 'gauge' ? RENAMED_GAUGES.get(m.name) : undefined;
    if (name === undefined) return m;
    return { ...m, name, values: m.values.map((v) => (v.metricName === m.name ? { ...v, metricName: name } : v)) };
  });
}
