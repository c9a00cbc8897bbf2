/**
 * `npm run bench`: has_permission throughput and latency of the real gateway against a bare
 * uWebSockets.js ceiling, with autocannon and (when installed) wrk. Seeds a deterministic data set,
 * checks answers against an in-bench model before and during the load, and fails (exit 1) on any
 * wrong answer, whatever the speed. See bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { RbacClient } from '../src/client/index.ts';
import { loadConfig, type BenchConfig } from './config.ts';
import { generate, probes, writeCount, type Dataset } from './dataset.ts';
import { runPhase } from './phases.ts';
import { checkAnswers, datasetInfo, rawAnswer, seedDataset } from './prepare.ts';
import { backgroundCores, installCleanup, pinSelf, runMain, timeLimit } from './procs.ts';
import { loadFailures, newReport, printSummary, summariseTool, writeReport, type Report } from './report.ts';
import { ROOT, startBare, startGateway, type Server } from './servers.ts';

const RESULTS = join(ROOT, 'bench', 'results');

async function prepare(cfg: BenchConfig, ds: Dataset, report: Report, gateway: Server, key: string): Promise<number | undefined> {
  const client = new RbacClient({ baseUrl: gateway.baseUrl, key });
  const writes = writeCount(ds);
  const seeded = await seedDataset(cfg, ds, client);
  report.seeding = seeded;
  if (seeded.maxRevision !== writes) {
    report.failures.push(`revision after ${writes} writes on an empty client is ${seeded.maxRevision} (CONTRACT.md §6: +1 per write)`);
    return undefined;
  }
  const sample = probes(ds, cfg.correctnessSample, cfg.seed + 1);
  const tally = await checkAnswers(client, sample, { strict: true, revision: writes });
  report.correctness = tally;
  if (tally.wrong > 0) {
    report.failures.push(`${tally.wrong} wrong answers of ${tally.checked} before timing (${tally.examples[0] ?? ''})`);
    return undefined;
  }
  return writes;
}

async function main(): Promise<number> {
  installCleanup();
  const cfg = loadConfig();
  const perRun = cfg.durationS + 10;
  timeLimit('bench', 120 + cfg.seedTimeoutS + 2 * 2 * (cfg.rounds * perRun + cfg.warmupS + 10) + 120);
  if (cfg.pin !== undefined) {
    const pinned = pinSelf(cfg.pin.load);
    console.log(pinned ? `pinned: servers on CPU ${cfg.pin.server}, load generators on CPU ${cfg.pin.load}` : 'note: pinning failed, running unpinned');
  }

  const ds = generate(cfg);
  const info = datasetInfo(cfg, ds);
  const { pin: _pin, ...printable } = cfg;
  const report = newReport({ ...printable, pin: cfg.pin ?? 'off' }, info);
  console.log(`data set: ${JSON.stringify(info)}`);

  const serverCpus = cfg.pin === undefined ? undefined : String(cfg.pin.server);
  const gateway = await startGateway({ entry: cfg.gatewayEntry, logLevel: cfg.gatewayLogLevel, cpus: serverCpus, startTimeoutMs: 90_000 });
  console.log(`gateway listening on ${gateway.baseUrl} (pid ${gateway.child.pid})`);
  const key = randomUUID();
  let bare: Server | undefined;
  try {
    const revision = await prepare(cfg, ds, report, gateway, key);
    if (revision === undefined) return finish(report);

    const load = probes(ds, cfg.loadUrls, cfg.seed + 2);
    const yes = load.find((p) => p.expected);
    const no = load.find((p) => !p.expected);
    if (yes === undefined || no === undefined) throw new Error('the probe set needs true and false answers');
    const [t, f] = await Promise.all([rawAnswer(gateway.baseUrl, key, yes), rawAnswer(gateway.baseUrl, key, no)]);
    bare = await startBare({ bodyTrue: t.body, bodyFalse: f.body, revision, requestIdLength: f.requestId.length, cpus: serverCpus });
    console.log(`bare server listening on ${bare.baseUrl}; response body ${f.body.length} bytes`);

    const ctx = {
      key,
      probes: load,
      revision,
      connections: cfg.connections,
      durationS: cfg.durationS,
      warmupS: cfg.warmupS,
      rounds: cfg.rounds,
      verifyEvery: cfg.verifyEvery,
      checkerRate: cfg.checkerRate,
      loadCpus: cfg.pin?.load,
      cwd: ROOT,
    };
    const idle = await backgroundCores();
    report.backgroundCores = idle;
    if (idle > 0.2) console.log(`WARNING: ${idle.toFixed(2)} cores busy with other work before the load: figures will be noisy`);
    console.log(`load: ${load.length} URLs (${load.filter((p) => p.expected).length} true), ${cfg.connections} connections, ${cfg.durationS} s per run, ${cfg.rounds} rounds`);
    report.runs.push(...(await runPhase('autocannon', bare, gateway, ctx)));
    const auto = summariseTool(report.runs, 'autocannon');
    if (auto !== undefined) report.summary.autocannon = auto;
    if (cfg.wrk) {
      report.runs.push(...(await runPhase('wrk', bare, gateway, ctx)));
      const w = summariseTool(report.runs, 'wrk');
      if (w !== undefined) report.summary.wrk = w;
    } else {
      const why = process.env.BENCH_WRK === '0' ? 'BENCH_WRK=0' : 'wrk is not on PATH (apt-get install wrk)';
      console.log(`note: wrk skipped: ${why}`);
      report.summary.wrk = { skipped: why };
    }
    report.failures.push(...loadFailures(report.runs));
    const logLines = report.runs.filter((r) => r.target === 'gateway').reduce((n, r) => n + r.serverLogLines, 0);
    if (logLines > 100) console.log(`note: the gateway wrote ${logLines} log lines during load (per-request logging costs throughput)`);
    return finish(report);
  } finally {
    await bare?.stop();
    await gateway.stop();
  }
}

function finish(report: Report): number {
  report.ok = report.failures.length === 0;
  printSummary(report);
  const file = writeReport(report, RESULTS);
  console.log(`results: ${file} (and bench/results/latest.json)`);
  if (!report.ok) {
    console.log('\nFAILED:');
    for (const f of report.failures) console.log(`  ${f}`);
  }
  return report.ok ? 0 : 1;
}

runMain('bench', main);
