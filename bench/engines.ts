/**
 * `npm run bench`'s comparison of the bare server and each HTTP engine of the gateway: medians
 * per server, and ratios between servers taken within each round (the servers of one round run
 * back to back, so the machine's drift from one minute to the next cancels out), then the median
 * of those per-round ratios.
 */
import type { RunRecord, Tool } from './phases.ts';
import { median, summarise, summaryRow, table, SUMMARY_HEADER, type Summary } from './stats.ts';

export interface ServerFigures extends Summary {
  /** Median over the measured runs of the server's CPU per request, in microseconds. */
  cpuPerRequestUs: number;
  /** Median requests the server completed per run. */
  served: number;
  runs: number;
}

export interface Ratio {
  /** `uws/bare`, `node/bare`, `node/uws`, `uws+token/uws`, `uws+metrics/uws`: numerator / denominator. */
  pair: string;
  /** Median of the per-round throughput ratios (above 1: the numerator serves more). */
  rps: number;
  /** Median of the per-round CPU-per-request ratios (above 1: the numerator costs more). */
  cpuPerRequest: number;
  /** The ratios of each round, in round order. */
  rpsByRound: number[];
  cpuPerRequestByRound: number[];
}

export interface EngineComparison {
  /** `bare` and each engine, in the order measured. */
  servers: Record<string, ServerFigures>;
  ratios: Ratio[];
}

export type Comparisons = Partial<Record<Tool, EngineComparison | { skipped: string }>>;

/** The label of a gateway loaded with a signed token instead of the key: `uws+token`. */
export const tokenLabel = (engine: string): string => `${engine}+token`;

/** The label of a gateway that counts its requests for GET /metrics (AUTH_METRICS_PORT set): `uws+metrics`. */
export const metricsLabel = (engine: string): string => `${engine}+metrics`;

/**
 * What a run is reported as: the gateway's engine (`uws+token` with a token, `uws+metrics` with
 * metrics on), else `bare` or `gateway`.
 */
export const labelOf = (r: RunRecord): string => {
  const label = r.engine ?? r.target;
  if (r.credential === 'token') return tokenLabel(label);
  return r.metrics === 'on' ? metricsLabel(label) : label;
};

/** A server measured beside its engine's plain gateway (`uws+token`, `uws+metrics`) and compared with it. */
export interface Variant {
  label: string;
  engine: string;
}

/** Every engine against bare, then each later engine against each earlier one (`node/uws`). */
export function pairs(engines: string[]): [string, string][] {
  const out: [string, string][] = engines.map((e) => [e, 'bare']);
  engines.forEach((later, j) => engines.slice(0, j).forEach((earlier) => out.push([later, earlier])));
  return out;
}

function figures(runs: RunRecord[]): ServerFigures {
  return {
    ...summarise(runs),
    cpuPerRequestUs: median(runs.map((r) => r.cpuPerRequestUs)),
    served: median(runs.map((r) => r.served)),
    runs: runs.length,
  };
}

function ratio(byRound: Map<number, Map<string, RunRecord>>, num: string, den: string): Ratio {
  const rpsByRound: number[] = [];
  const cpuPerRequestByRound: number[] = [];
  for (const round of [...byRound.keys()].sort((a, b) => a - b)) {
    const a = byRound.get(round)?.get(num);
    const b = byRound.get(round)?.get(den);
    if (a === undefined || b === undefined) continue;
    rpsByRound.push(a.rps / b.rps);
    cpuPerRequestByRound.push(a.cpuPerRequestUs / b.cpuPerRequestUs);
  }
  return { pair: `${num}/${den}`, rps: median(rpsByRound), cpuPerRequest: median(cpuPerRequestByRound), rpsByRound, cpuPerRequestByRound };
}

/** Bare and each engine, its variants' labels right after its own. */
function labels(engines: string[], variants: Variant[]): string[] {
  return ['bare', ...engines.flatMap((e) => [e, ...variants.filter((v) => v.engine === e).map((v) => v.label)])];
}

/**
 * The comparison of `tool`'s measured runs over bare, `engines` and `variants` (each against its
 * engine's plain gateway: `uws+token/uws`, `uws+metrics/uws`); undefined when a server has none.
 */
export function compareEngines(runs: RunRecord[], tool: Tool, engines: string[], variants: Variant[] = []): EngineComparison | undefined {
  const measured = runs.filter((r) => r.tool === tool && !r.warmup);
  const servers: Record<string, ServerFigures> = {};
  for (const label of labels(engines, variants)) {
    const mine = measured.filter((r) => labelOf(r) === label);
    if (mine.length === 0) return undefined;
    servers[label] = figures(mine);
  }
  const byRound = new Map<number, Map<string, RunRecord>>();
  for (const r of measured) {
    const round = byRound.get(r.round) ?? new Map<string, RunRecord>();
    round.set(labelOf(r), r);
    byRound.set(r.round, round);
  }
  const all = pairs(engines);
  for (const v of variants) all.push([v.label, v.engine]);
  return { servers, ratios: all.map(([num, den]) => ratio(byRound, num, den)) };
}

const fix = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

export function printComparisons(comparisons: Comparisons): void {
  const rows = [[...SUMMARY_HEADER, 'cpu/req µs']];
  const ratioRows = [['ratio (median of rounds)', 'throughput', 'cpu/request', 'throughput by round', 'cpu/request by round']];
  const skipped: string[] = [];
  for (const [tool, c] of Object.entries(comparisons)) {
    if (c === undefined) continue;
    if ('skipped' in c) {
      skipped.push(`${tool}: skipped (${c.skipped})`);
      continue;
    }
    for (const [label, s] of Object.entries(c.servers)) rows.push([...summaryRow(tool, label, s), fix(s.cpuPerRequestUs, 1)]);
    for (const r of c.ratios) {
      const byRound = (xs: number[]): string => xs.map((x) => fix(x, 2)).join(' ');
      ratioRows.push([`${tool} ${r.pair}`, fix(r.rps, 2), fix(r.cpuPerRequest, 2), byRound(r.rpsByRound), byRound(r.cpuPerRequestByRound)]);
    }
  }
  for (const line of skipped) console.log(line);
  if (rows.length === 1) return;
  console.log(`\n${table(rows)}\n\n${table(ratioRows)}\n`);
  console.log('throughput: above 1 the first server serves more requests per second; cpu/request: above 1 it');
  console.log('spends more CPU (all its processes and threads) per request. On a small shared machine throughput');
  console.log('ratios swing by about 10 % from run to run; cpu/request is the steadier figure.');
}

/** A gateway run beside its engine's plain one (`uws+token`, `uws+metrics`) and its CPU-per-request ratios. */
export interface SideRun {
  readonly label: string;
  readonly engine: string;
  cpuPerRequest: Partial<Record<Tool, { median: number; byRound: number[] } | { skipped: string }>>;
}

/** Records `tool`'s CPU-per-request ratio of a side run over its plain gateway, from its comparison. */
export function noteSideRatio(section: SideRun | { skipped: string } | undefined, tool: Tool, c: EngineComparison | { skipped: string }): void {
  if (section === undefined || 'skipped' in section) return;
  if ('skipped' in c) {
    section.cpuPerRequest[tool] = { skipped: c.skipped };
    return;
  }
  const r = c.ratios.find((x) => x.pair === `${section.label}/${section.engine}`);
  if (r !== undefined) section.cpuPerRequest[tool] = { median: r.cpuPerRequest, byRound: r.cpuPerRequestByRound };
}
