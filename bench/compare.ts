/**
 * `npm run bench:compare -- A.json B.json [--threshold 10] [--allow-client-bound] [--pair 'X=Y' …]`:
 * two result files of `npm run bench` side by side, run by run, with the change of each figure
 * from A to B. Runs are matched by scenario and label; with `--pair`, A's run labelled X with B's
 * run labelled Y of the same scenario, so one file given twice sets two variants of a run against
 * each other (`--pair 'no windows=10% windowed'`).
 * Exits 1 when server CPU per operation of any run grew by more than the threshold (percent,
 * default 10), the figure the kit decides on; throughput and latency are shown but move with the
 * machine's other work. Exits 2 when a run of either file was client-bound (its figures are the
 * load generator's, not the server's), unless --allow-client-bound.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { RunResult } from './lib/measure.ts';
import type { Report } from './lib/report.ts';
import { table } from './lib/stats.ts';
import { SATURATED } from './lib/load.ts';

interface Figure {
  name: string;
  of: (r: RunResult) => number | null | undefined;
  /** true: a larger value is worse. */
  worseUp: boolean;
}

const FIGURES: Figure[] = [
  { name: 'CPU µs/op', of: (r) => r.figures.cpuPerOpUs, worseUp: true },
  { name: 'req/s', of: (r) => r.figures.rps, worseUp: false },
  { name: 'p99 ms', of: (r) => r.figures.p99, worseUp: true },
  { name: 'p99 @80% ms', of: (r) => r.fixedRate?.latency.p99, worseUp: true },
];

function load(file: string): Report {
  const r = JSON.parse(readFileSync(file, 'utf8')) as Report;
  if (r.schema !== 1 || !Array.isArray(r.runs)) throw new Error(`${file}: not a result file of npm run bench (schema 1)`);
  return r;
}

/**
 * Whether a run was client-bound: as recorded, or, in a file from before the kit recorded it, a
 * flat-out load run whose server stayed below 0.9 of a core per worker the machine could run.
 */
export function clientBound(r: RunResult, machineCpus: number): boolean {
  if (typeof r.figures.clientBound === 'boolean') return r.figures.clientBound;
  const s = r.settings as Partial<RunResult['settings']> | undefined;
  if (s === undefined || r.figures.clientBound === null || s.kind === 'hydration' || (s.rate ?? 0) > 0) return false;
  const threads = (s.gateway?.workers ?? 1) * (s.gateway?.instances ?? 1);
  return r.figures.serverCores !== null && r.figures.serverCores !== undefined && r.figures.serverCores < SATURATED * Math.min(threads, machineCpus);
}

const key = (r: RunResult): string => `${r.scenario}/${r.label}`;

interface Match {
  name: string;
  a: RunResult;
  b: RunResult;
}

/** The runs to set side by side: same scenario and label, or per `pairs` [label in A, label in B] of one scenario. */
function matches(a: Report, b: Report, pairs: Array<[string, string]>): Match[] {
  if (pairs.length === 0) {
    const inB = new Map(b.runs.map((r) => [key(r), r]));
    return a.runs.flatMap((ra) => {
      const rb = inB.get(key(ra));
      return rb === undefined ? [] : [{ name: key(ra), a: ra, b: rb }];
    });
  }
  return pairs.flatMap(([la, lb]) =>
    a.runs
      .filter((r) => r.label === la)
      .flatMap((ra) => {
        const rb = b.runs.find((r) => r.scenario === ra.scenario && r.label === lb);
        return rb === undefined ? [] : [{ name: `${ra.scenario}/${la} → ${lb}`, a: ra, b: rb }];
      }),
  );
}

/** `X=Y` as [X, Y] (split at the first `=`). */
function pairOf(text: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0 || at === text.length - 1) throw new Error(`--pair wants 'label in A=label in B', not ${text}`);
  return [text.slice(0, at), text.slice(at + 1)];
}

const fmt = (x: number | null | undefined): string => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x >= 100 ? x.toFixed(0) : x.toFixed(2));
const change = (a: number, b: number): number => ((b - a) / a) * 100;

function main(): number {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      threshold: { type: 'string', default: '10' },
      'allow-client-bound': { type: 'boolean', default: false },
      pair: { type: 'string', multiple: true, default: [] },
    },
  });
  const threshold = Number(values.threshold);
  if (positionals.length !== 2 || !Number.isFinite(threshold) || threshold <= 0) {
    console.error("usage: npm run bench:compare -- A.json B.json [--threshold percent] [--allow-client-bound] [--pair 'label in A=label in B' …]");
    return 2;
  }
  const [a, b] = positionals.map(load) as [Report, Report];
  const pairs = values.pair.map(pairOf);
  const matched = matches(a, b, pairs);
  const unmatched = pairs.filter(([la, lb]) => !matched.some((m) => m.a.label === la && m.b.label === lb));
  if (unmatched.length > 0) {
    console.error(`no runs of one scenario labelled ${unmatched.map(([la, lb]) => `'${la}' in A and '${lb}' in B`).join(', nor ')}`);
    return 2;
  }
  const bound = [
    ...matched.filter((m) => clientBound(m.a, a.machine.cpus)).map((m) => `A ${key(m.a)}`),
    ...matched.filter((m) => clientBound(m.b, b.machine.cpus)).map((m) => `B ${key(m.b)}`),
  ];
  if (bound.length > 0) {
    const what = `client-bound runs (flat out, the server below ${SATURATED} of a core per thread it could run: their figures are the load generator's): ${bound.join(', ')}`;
    if (!values['allow-client-bound']) {
      console.error(
        `refusing to compare ${what}.\nRun them again where the load generator saturates the server (--client wrk, more client CPUs), or pass --allow-client-bound to compare anyway.`,
      );
      return 2;
    }
    console.log(`WARNING: comparing ${what}\n`);
  }
  const rows = [['run', ...FIGURES.flatMap((f) => [`${f.name} A`, 'B', 'change'])]];
  const regressions: string[] = [];
  for (const { name, a: ra, b: rb } of matched) {
    const row = [name];
    for (const f of FIGURES) {
      const [x, y] = [f.of(ra), f.of(rb)];
      const ok = typeof x === 'number' && typeof y === 'number' && Number.isFinite(x) && Number.isFinite(y) && x > 0;
      const c = ok ? change(x, y) : NaN;
      row.push(fmt(x), fmt(y), Number.isFinite(c) ? `${c > 0 ? '+' : ''}${c.toFixed(1)}%` : '');
      if (f === FIGURES[0] && c > threshold)
        regressions.push(`${name}: CPU per operation ${fmt(x)} → ${fmt(y)} µs (+${c.toFixed(1)}%, threshold ${threshold}%)`);
    }
    rows.push(row);
  }
  console.log(`A: ${positionals[0]} (${a.startedAt}, ${fmt(a.machine.backgroundCores)} background cores)`);
  console.log(`B: ${positionals[1]} (${b.startedAt}, ${fmt(b.machine.backgroundCores)} background cores)\n`);
  console.log(table(rows));
  const only =
    pairs.length > 0
      ? []
      : [
          ...a.runs.filter((r) => !matched.some((m) => m.a === r)).map((r) => `A only: ${key(r)}`),
          ...b.runs.filter((r) => !matched.some((m) => m.b === r)).map((r) => `B only: ${key(r)}`),
        ];
  for (const o of only) console.log(o);
  for (const [name, r] of [
    ['A', a],
    ['B', b],
  ] as const)
    if (!r.ok) console.log(`note: ${name} recorded failures: ${r.failures.slice(0, 3).join('; ')}`);
  if (regressions.length === 0) {
    console.log(`\nno run's CPU per operation grew by more than ${threshold}%`);
    return 0;
  }
  console.log('\nREGRESSION:');
  for (const r of regressions) console.log(`  ${r}`);
  return 1;
}

process.exitCode = main();
