/**
 * A real Prometheus server (Debian's `prometheus`) for the tests: scrapes one service's metrics
 * port under the job name the shipped rules expect, loads the shipped alert rules, and answers
 * PromQL over its HTTP API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, ROOT, tempDir } from './server.ts';
import { sleep } from './wait.ts';

export interface PromSample {
  readonly metric: Record<string, string>;
  /** An instant vector's sample. */
  readonly value: [number, string];
  /** A range vector's samples (a query such as `x[1m]`). */
  readonly values?: Array<[number, string]>;
}

export interface RuleState {
  readonly name: string;
  readonly health: string;
  readonly lastError?: string;
  readonly lastEvaluation: string;
}

export interface RunningPrometheus {
  /** An instant query (at `time`, Unix seconds, else now); throws with Prometheus's error on a bad expression. */
  query(expr: string, time?: number): Promise<PromSample[]>;
  /** Every rule of the loaded rule files, with its evaluation health. */
  rules(): Promise<RuleState[]>;
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
  output(): string;
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  data?: T;
  error?: string;
}

/** Starts Prometheus scraping `127.0.0.1:<metricsPort>` every `scrapeSeconds`, rules evaluated every second. */
export async function startPrometheus(metricsPort: number, scrapeSeconds: number): Promise<RunningPrometheus> {
  const dir = tempDir('rbac-prometheus-');
  copyFileSync(join(ROOT, 'deploy/prometheus/alerts.yml'), join(dir.dir, 'alerts.yml'));
  const config = {
    global: { scrape_interval: `${scrapeSeconds}s`, scrape_timeout: `${scrapeSeconds * 750}ms`, evaluation_interval: '1s' },
    rule_files: ['alerts.yml'],
    scrape_configs: [{ job_name: 'rbac-gateway', static_configs: [{ targets: [`127.0.0.1:${metricsPort}`] }] }],
  };
  writeFileSync(join(dir.dir, 'prometheus.yml'), JSON.stringify(config));
  const port = await freePort();
  const args = [
    `--config.file=${join(dir.dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir.dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ];
  const proc: ChildProcess = spawn('prometheus', args, { cwd: dir.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${base}${path}`);
    const body = (await res.json()) as ApiAnswer<T>;
    if (body.status !== 'success' || body.data === undefined) throw new Error(`Prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    dir.cleanup();
  };

  for (let waited = 0; ; waited += 100) {
    if (proc.exitCode !== null) throw new Error(`prometheus exited at start:\n${out}`);
    const ready = await fetch(`${base}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (waited > 30_000) {
      await stop();
      throw new Error(`prometheus not ready within 30 s:\n${out}`);
    }
    await sleep(100);
  }

  return {
    query: async (expr, time) => {
      const at = time === undefined ? '' : `&time=${time}`;
      return (await api<{ result: PromSample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}${at}`)).result;
    },
    rules: async () => {
      const data = await api<{ groups: Array<{ rules: RuleState[] }> }>('/api/v1/rules');
      return data.groups.flatMap((g) => g.rules);
    },
    stop,
    output: () => out,
  };
}

/** The single value of an instant query's answer (NaN when there is none). */
export function scalarOf(samples: readonly PromSample[]): number {
  if (samples.length !== 1) return Number.NaN;
  return Number(samples[0]?.value[1]);
}
