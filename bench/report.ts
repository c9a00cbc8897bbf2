/** The end of a run: failures from the records, the summary table, bench/results/*.json. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { labelOf, printComparisons, type Comparisons } from './engines.ts';
import type { RunRecord, Tool } from './phases.ts';
import { summarise, summaryRow, table, SUMMARY_HEADER, type Summary } from './stats.ts';
import { printMetrics, type MetricsSection } from './metrics-run.ts';
import { printToken, type TokenSection } from './token.ts';

export interface ToolSummary {
  gateway: Summary;
  bare: Summary;
  /** gateway / bare: throughput (higher is better, at most ~1) and p99 latency. */
  ratio: { rps: number; p99: number };
}

export interface Report {
  date: string;
  ok: boolean;
  failures: string[];
  machine: { cpus: number; model: string; node: string; loadAverageAtStart: number };
  config: object;
  dataset: object;
  seeding?: object;
  correctness?: object;
  /** Cores busy on the machine while the benchmark was idle, just before the load. */
  backgroundCores?: number;
  runs: RunRecord[];
  /** Bare against the gateway; in `npm run bench`, the gateway of the first engine (uws). */
  summary: Partial<Record<Tool, ToolSummary | { skipped: string }>>;
  /** `npm run bench`: each gateway measured, its engine asked for and the one it says it runs. */
  gateways?: GatewayInfo[];
  /** `npm run bench`: bare and every engine, per tool, with the ratios between them. */
  engines?: Comparisons;
  /** `npm run bench`: the uws gateway loaded with a signed token, and token/key CPU per request. */
  token?: TokenSection;
  /** `npm run bench`: a uws gateway with metrics on, metrics on/off CPU per request and its request counter. */
  metrics?: MetricsSection;
}

export interface GatewayInfo {
  /** How its runs are labelled (`uws`, `node`, `uws+metrics`). */
  label: string;
  /** AUTH_HTTP_ENGINE it was started with. */
  engine: string;
  /** What its start-up log or GET /version says it runs; null: it does not say. */
  reportedEngine: string | null;
  pid: number;
  /** Processes and threads whose CPU is counted (primary, workers, their threads), at the start. */
  processes: number;
  threads: number;
  /** Answers checked against the model before timing. */
  correctness?: object;
}

export function machineInfo(): Report['machine'] {
  return { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version, loadAverageAtStart: loadavg()[0] ?? 0 };
}

export function newReport(config: object, dataset: object): Report {
  return {
    date: new Date().toISOString(),
    ok: false,
    failures: [],
    machine: machineInfo(),
    config,
    dataset,
    runs: [],
    summary: {},
  };
}

/** Every load run, warm-ups included, must be free of wrong answers, non-2xx and socket errors. */
export function loadFailures(runs: RunRecord[]): string[] {
  const out: string[] = [];
  for (const r of runs) {
    const label = `${r.tool} ${labelOf(r)}${r.tag === undefined ? '' : `/${r.tag}`} ${r.warmup ? 'warm-up' : `round ${r.round + 1}`}`;
    if (r.wrong > 0) out.push(`${label}: ${r.wrong} wrong answers of ${r.checked} checked (${r.examples[0] ?? ''})`);
    if (r.checked === 0) out.push(`${label}: no answer was checked`);
    if (r.non2xx > 0) out.push(`${label}: ${r.non2xx} non-2xx responses`);
    if (r.errors + r.timeouts > 0) out.push(`${label}: ${r.errors} socket errors, ${r.timeouts} timeouts`);
  }
  return out;
}

/** Bare against the gateway runs of `tool` loaded with the key, metrics off (those of `engine` only, when given). */
export function summariseTool(runs: RunRecord[], tool: Tool, engine?: string): ToolSummary | undefined {
  const measured = runs.filter((r) => r.tool === tool && !r.warmup);
  const plain = (r: RunRecord): boolean => r.credential === undefined && r.metrics === undefined;
  const gw = measured.filter((r) => r.target === 'gateway' && plain(r) && (engine === undefined || r.engine === engine));
  const bare = measured.filter((r) => r.target === 'bare');
  if (gw.length === 0 || bare.length === 0) return undefined;
  const gateway = summarise(gw);
  const ceiling = summarise(bare);
  return { gateway, bare: ceiling, ratio: { rps: gateway.rps / ceiling.rps, p99: gateway.latency.p99 / ceiling.latency.p99 } };
}

export function printSummary(report: Report): void {
  if (report.engines !== undefined) {
    printComparisons(report.engines);
    printCpuNote();
    printToken(report.token);
    printMetrics(report.metrics);
    return;
  }
  const rows = [SUMMARY_HEADER];
  const notes: string[] = [];
  for (const [tool, s] of Object.entries(report.summary)) {
    if (s === undefined) continue;
    if ('skipped' in s) {
      notes.push(`${tool}: skipped (${s.skipped})`);
      continue;
    }
    rows.push(summaryRow(tool, 'bare', s.bare), summaryRow(tool, 'gateway', s.gateway));
    notes.push(`${tool}: gateway/bare throughput ${(s.ratio.rps * 100).toFixed(1)} %, p99 x${s.ratio.p99.toFixed(2)}`);
  }
  if (rows.length === 1) return;
  console.log(`\n${table(rows)}\n`);
  for (const n of notes) console.log(n);
  printCpuNote();
}

function printCpuNote(): void {
  console.log('cpu: cores busy on average; a load generator near 1.00 measures itself; "other" is the kernel plus');
  console.log('any other work on the machine (well above the bare run\'s figure: the measurement is noisy)');
}

/** Writes `<prefix><date>.json` and `<prefix>latest.json` in `dir`; returns the dated file. */
export function writeReport(report: { date: string }, dir: string, prefix = ''): string {
  mkdirSync(dir, { recursive: true });
  const text = `${JSON.stringify(report, null, 2)}\n`;
  const dated = join(dir, `${prefix}${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(dated, text);
  writeFileSync(join(dir, `${prefix}latest.json`), text);
  return dated;
}
