/**
 * The metrics path of `npm run bench`. A second gateway of the uws engine runs on its own snapshot
 * of the seeded SQLite file with metrics on (AUTH_METRICS_PORT set: its primary serves GET /metrics,
 * and every /api request is counted), checked and loaded like the others as `uws+metrics`. The
 * figure is its CPU per request over that of the plain uws gateway (metrics off), taken within
 * each round; it is informative. Its request counter must account for every request: GET /metrics
 * is scraped after the start check and again after the load, and the has_permission counter,
 * summed over statuses, must have grown by at least the requests completed against it meanwhile.
 */
import type { BenchConfig } from './config.ts';
import { labelOf, metricsLabel } from './engines.ts';
import { startEngine } from './gateways.ts';
import type { RunRecord, Tool } from './phases.ts';
import { freePort } from './procs.ts';
import type { Server } from './servers.ts';

/** The engine of the gateway run a second time, with metrics on. */
export const METRICS_ENGINE = 'uws';
const COUNTER = 'rbac_http_requests_total';
const ROUTE = 'has_permission';
/** The series compared with the requests sent, summed over its statuses (and methods). */
export const COUNTER_SERIES = `${COUNTER}{route="${ROUTE}"}`;

export type MetricsPlan = { engine: string } | { skipped: string };

export interface CounterCheck {
  /** The series' sum after the load. */
  countedAfterLoad: number;
  /** countedAfterLoad less the sum before the load. */
  countedDuringLoad: number;
  /** Requests the load generators completed against the gateway (warm-ups and both tools included). */
  loadGenerators: number;
  /** Requests of the parallel checker beside wrk. */
  checker: number;
  /** countedDuringLoad >= loadGenerators + checker: the counter lost no request. */
  ok: boolean;
}

export interface MetricsReport {
  /** `uws+metrics`: how its runs are labelled. */
  label: string;
  engine: string;
  metricsUrl: string;
  /** The series' sum before the load: the start check's requests. */
  countedBeforeLoad: number;
  counter?: CounterCheck;
  /** Metrics on over off CPU per request: the median of the per-round ratios, and each round's. */
  cpuPerRequest: Partial<Record<Tool, { median: number; byRound: number[] } | { skipped: string }>>;
}

export type MetricsSection = MetricsReport | { skipped: string };

/** Whether this run loads a gateway with metrics on. */
export function metricsPlan(cfg: BenchConfig): MetricsPlan {
  if (!cfg.metrics) return { skipped: 'BENCH_METRICS=0' };
  if (!cfg.engines.includes(METRICS_ENGINE)) return { skipped: `BENCH_ENGINES has no ${METRICS_ENGINE}` };
  return { engine: METRICS_ENGINE };
}

/** A gateway of `engine` on `sqlitePath` serving GET /metrics on a free 127.0.0.1 port; `env`: more settings. */
export async function startMetricsGateway(cfg: BenchConfig, engine: string, sqlitePath: string, env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const settings = { ...env, AUTH_METRICS_HOST: '127.0.0.1', AUTH_METRICS_PORT: String(port) };
  const gateway = await startEngine(cfg, engine, sqlitePath, settings, metricsLabel(engine));
  gateway.metricsUrl = `http://127.0.0.1:${port}/metrics`;
  return gateway;
}

/** The sum of COUNTER_SERIES in a text exposition; undefined when it has no such series. */
export function countedRequests(exposition: string): number | undefined {
  let sum: number | undefined;
  for (const line of exposition.split('\n')) {
    const m = /^(\w+)\{([^}]*)\}\s+(\S+)/.exec(line);
    if (m === null || m[1] !== COUNTER) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.route === ROUTE) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

/** GET /metrics of `url` once: COUNTER_SERIES's sum; throws on anything but a 200 with that series. */
async function scrape(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 200)}`);
  const n = countedRequests(text);
  if (n === undefined || !Number.isFinite(n)) throw new Error(`GET ${url}: no ${COUNTER_SERIES} series (metrics off?)`);
  return n;
}

const why = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The section of `gateway` (metrics on) after its start check of `checked` requests: its counter
 * must already count them all. A failure goes to `failures`.
 */
export async function metricsBaseline(gateway: Server, checked: number, failures: string[]): Promise<MetricsReport | undefined> {
  const url = gateway.metricsUrl ?? '';
  let counted: number;
  try {
    counted = await scrape(url);
  } catch (err) {
    failures.push(`${gateway.label}: ${why(err)}`);
    return undefined;
  }
  console.log(`metrics: ${url} counts ${counted} has_permission requests after the ${checked} of the start check`);
  if (counted < checked) failures.push(`${gateway.label}: ${COUNTER_SERIES} is ${counted} after the ${checked} requests of the start check`);
  const section = { label: gateway.label, engine: gateway.engine ?? METRICS_ENGINE, metricsUrl: url, countedBeforeLoad: counted };
  return { ...section, cpuPerRequest: {} };
}

/**
 * After the load: scrapes the gateway once more, and fails the run when its counter grew by less
 * than the requests `runs` completed against it (the load generators' and the parallel checker's).
 */
export async function verifyCounter(section: MetricsSection | undefined, runs: RunRecord[], failures: string[]): Promise<void> {
  if (section === undefined || 'skipped' in section) return;
  const mine = runs.filter((r) => labelOf(r) === section.label);
  const loadGenerators = mine.reduce((n, r) => n + r.requests, 0);
  const checker = mine.reduce((n, r) => n + r.served - r.requests, 0);
  let after: number;
  try {
    after = await scrape(section.metricsUrl);
  } catch (err) {
    failures.push(`${section.label} after the load: ${why(err)}`);
    return;
  }
  const during = after - section.countedBeforeLoad;
  const ok = during >= loadGenerators + checker;
  section.counter = { countedAfterLoad: after, countedDuringLoad: during, loadGenerators, checker, ok };
  console.log(`metrics: ${counterLine(section.counter)}`);
  if (!ok) failures.push(`${section.label}: ${COUNTER_SERIES} grew by ${during} during the load, below the ${loadGenerators + checker} requests completed (lost requests)`);
}

const fix = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');
const count = (n: number): string => n.toLocaleString('en-US');

function counterLine(c: CounterCheck): string {
  const verdict = c.ok ? 'OK' : 'FAILED: the counter lost requests';
  return (
    `${COUNTER_SERIES} grew by ${count(c.countedDuringLoad)} during the load (${count(c.countedAfterLoad)} in all); ` +
    `the load generators completed ${count(c.loadGenerators)} (+ ${count(c.checker)} parallel checks): ${verdict}`
  );
}

/** The summary's `metrics on/off cpu per request` line(s) and the counter's. */
export function printMetrics(section: MetricsSection | undefined): void {
  if (section === undefined) return;
  if ('skipped' in section) {
    console.log(`metrics on/off cpu per request: skipped (${section.skipped})`);
    return;
  }
  console.log(`metrics on/off cpu per request (${section.label} over ${section.engine}, median of rounds; informative):`);
  for (const [tool, r] of Object.entries(section.cpuPerRequest)) {
    const figures = 'skipped' in r ? `skipped (${r.skipped})` : `${fix(r.median)}  by round ${r.byRound.map(fix).join(' ')}`;
    console.log(`  ${tool.padEnd(10)} ${figures}`);
  }
  if (section.counter !== undefined) console.log(`metrics counter (${section.label}): ${counterLine(section.counter)}`);
}
