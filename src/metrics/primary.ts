import { createServer, type Server } from 'node:http';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Logger } from '../log/index.ts';
import { METRICS } from './definitions.ts';
import type { MetricJson } from './requests.ts';

export interface BuildInfo {
  readonly version: string;
  readonly node: string;
  readonly engine: string;
}

/**
 * The primary's metrics: its own (worker restarts, build info) and the workers' merged with
 * prom-client's cluster aggregation (counters and histograms summed, gauges as each metric's
 * definition says). The workers' snapshots arrive over the primary's IPC (see primary/scrape.ts).
 */
export class PrimaryMetrics {
  readonly #registry = new Registry();
  readonly #restarts: Counter;
  readonly #runs: Counter;
  readonly #runDuration: Histogram;
  readonly #deliveries: Counter;
  readonly #leader: Gauge;
  readonly #boundaries: Counter;

  constructor(build: BuildInfo) {
    const r = this.#registry;
    this.#restarts = new Counter({ name: METRICS.workerRestarts.name, help: METRICS.workerRestarts.help, registers: [r] });
    const { workflowRuns: runs, workflowRunDuration: took, webhookDeliveries: sent, schedulerLeader: leads } = METRICS;
    this.#runs = new Counter({ name: runs.name, help: runs.help, labelNames: [...runs.labels], registers: [r] });
    this.#runDuration = new Histogram({ name: took.name, help: took.help, buckets: [...(took.buckets ?? [])], registers: [r] });
    this.#deliveries = new Counter({ name: sent.name, help: sent.help, labelNames: [...sent.labels], registers: [r] });
    this.#leader = new Gauge({ name: leads.name, help: leads.help, registers: [r] });
    const { boundaryChanges: passed } = METRICS;
    this.#boundaries = new Counter({ name: passed.name, help: passed.help, labelNames: [...passed.labels], registers: [r] });
    for (const op of ['permission.activate', 'permission.expire', 'membership.activate', 'membership.expire']) this.#boundaries.inc({ op }, 0);
    for (const result of ['ok', 'error']) this.#runs.inc({ result }, 0);
    for (const result of ['delivered', 'pending', 'failed']) this.#deliveries.inc({ result }, 0);
    const info = new Gauge({ name: METRICS.buildInfo.name, help: METRICS.buildInfo.help, labelNames: [...METRICS.buildInfo.labels], registers: [r] });
    info.set({ ...build }, 1);
  }

  restarted(): void {
    this.#restarts.inc();
  }

  workflowRun(seconds: number, ok: boolean): void {
    this.#runs.inc({ result: ok ? 'ok' : 'error' });
    if (ok) this.#runDuration.observe(seconds);
  }

  /** One attempt's outcome: `pending` when a retry follows. */
  webhookDelivery(status: 'pending' | 'delivered' | 'failed'): void {
    this.#deliveries.inc({ result: status });
  }

  /** A window boundary committed as a change, by its op. */
  boundaryChange(op: string): void {
    this.#boundaries.inc({ op });
  }

  schedulerLeader(leader: boolean): void {
    this.#leader.set(leader ? 1 : 0);
  }

  /** The text exposition of everything, given the workers' snapshots. */
  async exposition(workers: readonly MetricJson[][]): Promise<string> {
    const own = (await this.#registry.getMetricsAsJSON()) as unknown as MetricJson[];
    const all = [...workers, own] as unknown as Array<Array<MetricObjectWithValues<MetricValue<string>>>>;
    return AggregatorRegistry.aggregate(all).metrics();
  }
}

/** Serves `GET /metrics` (and nothing else) on its own port, in the primary. */
export function startMetricsServer(host: string, port: number, exposition: () => Promise<string>, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the metrics are at GET /metrics\n');
      return;
    }
    exposition().then(
      (text) => res.writeHead(200, { 'Content-Type': Registry.PROMETHEUS_CONTENT_TYPE }).end(text),
      (err: unknown) => {
        log.error('metrics scrape failed', { err });
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.unref();
      resolve(server);
    });
  });
}
