/** The tables of `npm run bench:workflows`: run times per store, the A/B rounds, and the ratios. */
import type { Tally } from './verify.ts';
import type { StoreKind } from './workflow-gateway.ts';
import { DISTURBED_CORES, type AbResult } from './workflow-load.ts';
import type { RunKind, RunTimes } from './workflow-runs.ts';
import { median, table } from './stats.ts';

/** The run-time aim of the issue: a check costs the worker at most this much more while runs happen. */
export const CPU_AIM = 1.05;

export interface Spread {
  n: number;
  median: number;
  max: number;
}

export interface StoreResult {
  store: StoreKind;
  gateway: { pid: number; processes: number; threads: number; engine: string | null };
  /** has_permission answers checked against the model: before step 1, after its changes, after step 2. */
  correctness: Record<'before' | 'afterChanges' | 'afterLoad', Tally>;
  /** `GET /api/workflow/users/{workflow}` (from memory) listed exactly the model's holders. */
  holdersListed: number;
  runTimes: RunTimes;
  /** Durations (metric) of the runs of step 1 after the first, by what they had to do (workflow-runs.ts's RunKind). */
  runMs: Record<RunKind, Spread>;
  gapS: Spread;
  ab: AbResult;
  audit: { runs: number; retried: number; deliveries: number; matched: number; leftover: number };
  /** The gateway's warn and error log lines (the first few). */
  logWarnings: string[];
}

export const spread = (xs: number[]): Spread => ({ n: xs.length, median: median(xs), max: xs.length === 0 ? NaN : Math.max(...xs) });

const f = (x: number, digits = 0): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
const sp = (s: Spread, digits = 0): string => `${f(s.median, digits)} / ${f(s.max, digits)} (${s.n})`;

/** One row per figure, one column per store. */
export function printRunTimes(results: StoreResult[], users: number): void {
  const row = (label: string, cell: (r: StoreResult) => string): string[] => [label, ...results.map(cell)];
  const first = (r: StoreResult): RunTimes['first'] => r.runTimes.first;
  const rows = [
    ['run time', ...results.map((r) => r.store)],
    row(`first run (${int(users)} added): 201 -> listed, ms`, (r) => int(first(r).listedAfterMs)),
    row('  201 -> run_at (scheduler tick), ms', (r) => int(first(r).startedAfterMs)),
    row('  duration (metric), ms', (r) => int(first(r).runMs)),
    row('  201 -> delivery arrived, ms', (r) => int(first(r).deliveredAfterMs)),
    row('  delivery body, MB', (r) => f(first(r).deliveryBytes / 1e6, 2)),
    row('steady run, unchanged revision: ms median / max (n)', (r) => sp(r.runMs.unchanged)),
    row('steady run, revision moved (ticker): ms', (r) => sp(r.runMs.recomputed)),
    row('run listing a batch of changes: ms', (r) => sp(r.runMs.change)),
    row('batches: writes, s each', (r) => r.runTimes.batches.map((b) => `${b.writes} in ${f(b.seconds, 2)}`).join(', ')),
    row('batches: runs each spread over', (r) => r.runTimes.batches.map((b) => String(b.spreadOver)).join(', ')),
    row('run_at gap, s: median / max (n)', (r) => sp(r.gapS, 3)),
    row('runs checked / deliveries matched', (r) => `${r.audit.runs} / ${r.audit.matched} of ${r.audit.deliveries}`),
  ];
  console.log(`\n${table(rows)}`);
}

export function printRounds(results: StoreResult[]): void {
  const rows = [['round', 'req/s', 'p99 ms', 'worker µs/check', 'user/sys µs', 'preempted/s', 'primary cores', 'gateway cores', 'postgres cores', 'other cores', 'runs', 'ms/run']];
  for (const r of results) {
    for (const x of r.ab.rounds) {
      rows.push([
        `${r.store} ${x.warmup ? 'warm-up' : `round ${x.round + 1}`} ${x.mode}${x.otherCores > DISTURBED_CORES ? ' *' : ''}`,
        int(x.run.rps),
        f(x.run.latency.p99, 2),
        f(x.cpuPerCheckUs, 2),
        `${f((1e6 * x.worker.userSeconds) / x.run.served, 1)}/${f((1e6 * x.worker.systemSeconds) / x.run.served, 1)}`,
        int(x.worker.involuntarySwitches / x.run.durationS),
        f(x.primaryCores, 3),
        f(x.gatewayCores, 2),
        f(x.postgresCores, 2),
        f(x.otherCores, 2),
        String(x.runs),
        x.runs > 0 ? f((1000 * x.runSeconds) / x.runs) : '-',
      ]);
    }
  }
  console.log(`\nhas_permission (${results[0]?.ab.tool ?? ''}), A: no schedule, B: a run every second\n${table(rows)}`);
  if (results.some((r) => r.ab.rounds.some((x) => x.otherCores > DISTURBED_CORES))) {
    console.log(`* other work took more than ${DISTURBED_CORES} cores during the round: its figures are disturbed`);
  }
}

/** The aim judged on the quiet pairs when there are some, else on all of them (and said so). */
function verdict(ab: AbResult): string {
  const quiet = Number.isFinite(ab.quietCpuPerCheckRatio);
  const ratio = quiet ? ab.quietCpuPerCheckRatio : ab.cpuPerCheckRatio;
  return `${ratio <= CPU_AIM ? 'met' : 'NOT met'}${quiet ? '' : ' (no quiet pair)'}`;
}

/** The ratios B/A, with the aim, and what they mean. */
export function printRatios(results: StoreResult[]): void {
  const rows = [['B/A (median of pairs)', 'cpu/check', 'by pair', 'quiet pairs', 'A max/min', 'throughput', 'by pair', 'primary cores A -> B', 'runs/s in B', `aim <= ${CPU_AIM}`]];
  for (const r of results) {
    const { ab } = r;
    rows.push([
      r.store,
      f(ab.cpuPerCheckRatio, 3),
      ab.pairs.map((p) => `${f(p.cpuPerCheck, 3)}${p.quiet ? '' : '*'}`).join(' '),
      f(ab.quietCpuPerCheckRatio, 3),
      f(ab.aSpread, 3),
      f(ab.throughputRatio, 3),
      ab.pairs.map((p) => f(p.throughput, 3)).join(' '),
      `${f(ab.median.A.primaryCores, 3)} -> ${f(ab.median.B.primaryCores, 3)}`,
      f(ab.median.B.runsPerSecond, 2),
      verdict(ab),
    ]);
  }
  console.log(`\n${table(rows)}`);
  console.log('A max/min: the largest over the smallest cpu/check of the A rounds, all alike: the noise to read the ratios against');
  console.log(`quiet pairs: the median over the pairs during which other work took at most ${DISTURBED_CORES} cores (* marks the others)`);
  console.log('cpu/check: CPU of the HTTP worker process (its threads included) per completed request; the primary, which');
  console.log('runs the scheduler on its own store thread, is measured apart. Throughput is not the figure to judge by: the');
  console.log('machine has two cores, shared by the load generator, the worker and the runs (and PostgreSQL\'s server), so');
  console.log('whatever CPU the runs take is CPU the load cannot have.');
}
