/**
 * `npm run bench -- [scenario…] [--quick] [--full] [--rounds n] [--variant text] [--client autocannon|wrk] [--out name]`: runs scenarios (data files in
 * bench/scenarios/) one after the other and writes one result file, bench/results/<name>.json,
 * with its Markdown table and scaling charts. Exits 1 when anything failed: a wrong answer, an
 * error status, a gateway that would not start. See bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../support/launcher.ts';
import { measureLoad, type RunResult } from './lib/measure.ts';
import { backgroundCores, installCleanup, runMain, timeLimit } from './lib/procs.ts';
import { machine, printTable, writeReport, type Report } from './lib/report.ts';
import { readScenario, resolve, scenarioNames, type Run, type ScenarioFile } from './lib/scenario.ts';
import { measureClients } from './lib/clients.ts';
import { measureFlood } from './lib/flood.ts';
import { measureHydration } from './lib/special.ts';
import { measureTransfer } from './lib/transfer.ts';

const RESULTS = join(ROOT, 'bench', 'results');

/** The scenarios named, or: with --full all of them; with --quick the quick run's; else all but the full-only ones. */
function chosen(names: string[], full: boolean, quick: boolean): Array<[string, ScenarioFile]> {
  const all = scenarioNames().map((n) => [n, readScenario(n)] as [string, ScenarioFile]);
  if (names.length > 0) return names.map((n) => [n, readScenario(n)]);
  if (full) return all;
  return all.filter(([, f]) => (quick ? f.inQuickRun === true : f.fullOnly !== true));
}

async function measure(run: Run): Promise<RunResult> {
  if (run.settings.kind === 'hydration') return measureHydration(run);
  if (run.settings.kind === 'flood') return measureFlood(run);
  if (run.settings.kind === 'clients') return measureClients(run);
  if (run.settings.kind === 'transfer') return measureTransfer(run);
  return measureLoad(run);
}

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

async function main(): Promise<number> {
  installCleanup();
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      full: { type: 'boolean', default: false },
      out: { type: 'string' },
      list: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      variant: { type: 'string' },
      client: { type: 'string', default: 'autocannon' },
    },
  });
  if (values.list) {
    for (const n of scenarioNames()) console.log(`${n.padEnd(22)} ${readScenario(n).title}`);
    return 0;
  }
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds);
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0)) throw new Error(`--rounds must be a positive integer, not ${values.rounds}`);
  const client = values.client;
  if (client !== 'autocannon' && client !== 'wrk') throw new Error(`--client must be autocannon or wrk, not ${client}`);
  if (client === 'wrk' && spawnSync('wrk', ['--version']).error !== undefined) throw new Error('--client wrk: no wrk on PATH (Debian: apt-get install wrk)');
  timeLimit('bench', Number(process.env.BENCH_TIME_LIMIT ?? 3_600));
  const target = process.env.BENCH_TARGET;
  let scenarios = chosen(positionals, values.full, values.quick);
  if (target !== undefined) {
    const skipped = scenarios.filter(([, f]) => f.target !== true).map(([n]) => n);
    if (skipped.length > 0) console.log(`BENCH_TARGET=${target}: only read scenarios run; skipped ${skipped.join(', ')}`);
    scenarios = scenarios.filter(([, f]) => f.target === true);
  }
  const started = performance.now();
  const idle = await backgroundCores();
  if (idle > 0.2)
    console.log(`WARNING: ${idle.toFixed(2)} cores busy with other work before the run: figures will be noisy (compare CPU per operation, not req/s)`);
  const report: Report = {
    schema: 1,
    startedAt: new Date().toISOString(),
    seconds: 0,
    quick: values.quick,
    machine: machine(idle),
    scenarios: scenarios.map(([n]) => n),
    runs: [],
    failures: [],
    ok: false,
  };
  for (const [name, file] of scenarios) {
    for (const run of resolve(name, file, values.quick)) {
      if (values.variant !== undefined && !run.label.includes(values.variant)) continue;
      if (rounds !== undefined) run.settings.rounds = rounds;
      if (client === 'wrk') run.settings.client = client;
      console.log(`\n${name} / ${run.label}: ${file.title}`);
      try {
        const result = await measure(run);
        report.runs.push(result);
        report.failures.push(...result.failures);
      } catch (err) {
        report.failures.push(`${name} / ${run.label}: ${err instanceof Error ? err.message.split('\n').slice(0, 6).join('\n') : String(err)}`);
        console.log(`  FAILED: ${report.failures[report.failures.length - 1]}`);
      }
    }
  }
  report.seconds = (performance.now() - started) / 1000;
  report.ok = report.failures.length === 0;
  printTable(report);
  const charts = scenarios.flatMap(([n, f]) => (f.chart === undefined ? [] : [{ scenario: n, x: f.chart.x }]));
  const files = writeReport(report, RESULTS, values.out ?? `run-${stamp()}`, charts);
  console.log(`\n${Math.round(report.seconds)} s; results: ${files.map((f) => f.slice(ROOT.length)).join(', ')}`);
  if (!report.ok) {
    console.log('\nFAILED:');
    for (const f of report.failures) console.log(`  ${f}`);
  }
  return report.ok ? 0 : 1;
}

runMain('bench', main);
