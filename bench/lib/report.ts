/**
 * The result of `npm run bench`: one JSON file (the input of bench:compare), a Markdown table
 * beside it, and an SVG chart per scaling scenario, all in bench/results/.
 */
import { cpus } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chart } from './charts.ts';
import { goalText, ratioText, type Ceiling, type RunResult } from './measure.ts';
import { table } from './stats.ts';

export interface Report {
  schema: 1;
  startedAt: string;
  seconds: number;
  quick: boolean;
  machine: { cpus: number; model: string; node: string; backgroundCores: number };
  scenarios: string[];
  runs: RunResult[];
  failures: string[];
  ok: boolean;
}

const num = (x: number | null | undefined, digits = 1): string => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));
const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');

export function machine(backgroundCores: number): Report['machine'] {
  return { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version, backgroundCores };
}

const ceiling = (x: RunResult, label: Ceiling['label']): Ceiling | undefined => x.ceilings?.find((c) => c.label === label);

/** Server cores busy (median), marked when the run was client-bound. */
const cores = (x: RunResult): string => `${num(x.figures.serverCores, 2)}${x.figures.clientBound === true ? ' client-bound' : ''}`;

export function markdown(r: Report): string {
  const rows = [
    [
      'scenario',
      'run',
      'req/s',
      'server cores',
      'p50 ms',
      'p99 ms',
      'CPU µs/op',
      'vs minimal CPU',
      'vs bare CPU',
      'p99 ms @80%',
      'minimal p99 @80%',
      'bare p99 @80%',
      'RSS MiB',
      'checked',
      'wrong',
    ],
  ];
  for (const x of r.runs) {
    rows.push([
      x.scenario,
      x.label,
      int(x.figures.rps),
      cores(x),
      num(x.figures.p50, 2),
      num(x.figures.p99, 2),
      num(x.figures.cpuPerOpUs),
      ratioText(ceiling(x, 'minimal')),
      ratioText(ceiling(x, 'bare')),
      num(x.fixedRate?.latency.p99, 2),
      num(ceiling(x, 'minimal')?.fixedRate?.latency.p99, 2),
      num(ceiling(x, 'bare')?.fixedRate?.latency.p99, 2),
      num(x.figures.rssMb, 0),
      String(x.correctness.checked),
      String(x.correctness.wrong),
    ]);
  }
  const md = (rs: string[][]): string => rs.map((row, i) => `| ${row.join(' | ')} |${i === 0 ? `\n|${row.map(() => '---').join('|')}|` : ''}`).join('\n');
  const extras = r.runs
    .filter((x) => Object.keys(x.extra).length > 0)
    .map(
      (x) =>
        `- ${x.scenario} / ${x.label}: ${Object.entries(x.extra)
          .map(([k, v]) => `${k} ${num(v, k.endsWith('Ratio') ? 3 : k.endsWith('Ms') || k.endsWith('Pct') ? 2 : 1)}`)
          .join(', ')}`,
    );
  const ratios = r.runs.flatMap((x) =>
    (x.ceilings ?? [])
      .filter((c) => c.cpuRatios.length > 0)
      .map(
        (c) =>
          `- ${x.scenario} / ${x.label} over ${c.label}: ${c.cpuRatios.map((v, i) => `${num(v, 2)}×${c.saturated[i] === true ? '' : ' (client-bound)'}`).join(', ')}`,
      ),
  );
  const goals = r.runs.flatMap((x) => (x.goals ?? []).map((g) => `- ${x.scenario} / ${x.label}: ${goalText(g)}`));
  const bound = r.runs.filter((x) => x.figures.clientBound === true).map((x) => `${x.scenario} / ${x.label}`);
  return [
    `# Benchmark results, ${r.startedAt}${r.quick ? ' (quick)' : ''}`,
    '',
    `${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}; ${num(r.machine.backgroundCores, 2)} cores busy with other work before the run; ${Math.round(r.seconds)} s in all.`,
    '',
    md(rows),
    ...(bound.length > 0
      ? [
          '',
          `**Client-bound** (flat out, the server below 0.9 of a core per thread it could run: the load generator's figures, not the server's): ${bound.join(', ')}.`,
        ]
      : []),
    ...(ratios.length > 0
      ? [
          '',
          "The gateway's CPU per request over each ceiling's, round by round (the columns are the medians of the saturated rounds; a client-bound round's ratio is no result):",
          '',
          ...ratios,
        ]
      : []),
    ...(goals.length > 0 ? ['', 'Goals (reported, never a failure):', '', ...goals] : []),
    ...(extras.length > 0 ? ['', 'Other figures:', '', ...extras] : []),
    ...(r.failures.length > 0 ? ['', '**Failures:**', '', ...r.failures.map((f) => `- ${f}`)] : []),
    '',
  ].join('\n');
}

export function printTable(r: Report): void {
  const rows = [['run', 'req/s', 'server cores', 'p99 ms', 'cpu µs/op', 'vs minimal', 'vs bare', 'p99 @80%', 'wrong']];
  for (const x of r.runs) {
    rows.push([
      `${x.scenario}/${x.label}`,
      int(x.figures.rps),
      cores(x),
      num(x.figures.p99, 2),
      num(x.figures.cpuPerOpUs),
      ratioText(ceiling(x, 'minimal'), 'x'),
      ratioText(ceiling(x, 'bare'), 'x'),
      num(x.fixedRate?.latency.p99, 2),
      String(x.correctness.wrong),
    ]);
  }
  console.log(`\n${table(rows)}`);
  for (const x of r.runs) for (const g of x.goals ?? []) console.log(`goal: ${x.scenario}/${x.label}: ${goalText(g)}`);
}

/** Writes `<base>.json`, `<base>.md` and the scaling charts; the paths written. */
export function writeReport(r: Report, dir: string, base: string, charts: Array<{ scenario: string; x: 'memberships' | 'connections' }>): string[] {
  const files = [join(dir, `${base}.json`), join(dir, `${base}.md`)];
  writeFileSync(files[0] as string, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(files[1] as string, markdown(r));
  for (const c of charts) {
    const runs = r.runs.filter((x) => x.scenario === c.scenario);
    if (runs.length < 2) continue;
    const file = join(dir, `${base}-${c.scenario}.svg`);
    writeFileSync(file, chart(c.scenario, c.x, runs));
    files.push(file);
  }
  return files;
}
