/**
 * `npm run bench:micro [-- name-filter]`: the micro-benchmarks of bench/micro/ (one file per
 * module of src/, same path) with tinybench, in nanoseconds per operation, in one process and one
 * table. Each file exports `tasks`: named functions, and the figure each returns is checked
 * before timing so that a benchmark measuring a wrong answer fails instead of reporting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { ROOT } from '../../support/launcher.ts';
import { table } from '../lib/stats.ts';
import * as graph from './authz/graph.bench.ts';
import * as page from './authz/page.bench.ts';
import * as credentials from './http/input/credentials.bench.ts';
import * as apiHandler from './http/handle/api-handler.bench.ts';
import * as pipeline from './worker/write-pipeline.bench.ts';
import type { MicroTask } from './task.ts';

const FILES: Record<string, { tasks: MicroTask[] }> = {
  'authz/graph': graph,
  'authz/page': page,
  'http/input/credentials': credentials,
  'http/handle/api-handler': apiHandler,
  'worker/write-pipeline': pipeline,
};

async function main(): Promise<number> {
  const filter = process.argv[2] ?? '';
  const bench = new Bench({ time: Number(process.env.BENCH_MICRO_MS ?? 500), warmupTime: 100 });
  for (const [file, mod] of Object.entries(FILES)) {
    for (const t of mod.tasks) {
      const name = `${file}: ${t.name}`;
      if (!name.includes(filter)) continue;
      t.check?.();
      bench.add(name, t.fn);
    }
  }
  await bench.run();
  const rows = [['benchmark', 'ns/op', '± %', 'samples']];
  const out: Array<{ name: string; nsPerOp: number; rme: number; samples: number }> = [];
  for (const t of bench.tasks) {
    const r = t.result;
    if (r.state !== 'completed') {
      console.error(`${t.name}: ${r.state === 'errored' ? String(r.error) : r.state}`);
      return 1;
    }
    const ns = r.latency.mean * 1e6;
    out.push({ name: t.name, nsPerOp: ns, rme: r.latency.rme, samples: r.latency.samplesCount });
    rows.push([t.name, ns.toFixed(ns < 100 ? 1 : 0), r.latency.rme.toFixed(1), String(r.latency.samplesCount)]);
  }
  console.log(table(rows));
  const file = join(ROOT, 'bench', 'results', 'micro-latest.json');
  writeFileSync(file, `${JSON.stringify({ node: process.version, at: new Date().toISOString(), results: out }, null, 2)}\n`);
  console.log(`\nresults: ${file.slice(ROOT.length)}`);
  return 0;
}

process.exitCode = await main();
