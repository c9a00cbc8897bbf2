/**
 * `npm run bench:cluster`: the gateway's worker processes under load, in one run and one data set
 * (seeded once into one SQLite file that every gateway of the run serves):
 *   1. has_permission with wrk on AUTH_WORKERS=1 and 2 against the bare uWS ceiling (no pinning);
 *   2. the same checks on AUTH_WORKERS=2 with every 100th request of wrk a write (99% checks, 1%
 *      writes), and a small prober beside it reading its own writes back on new connections
 *      (read-your-writes across workers);
 *   3. client-side write latency on AUTH_WORKERS=1, 2 and 4, sequential and 16 in flight.
 * A wrong answer, a failed write or a socket error fails the run (exit 1); the throughput figures
 * never do. See bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacClient } from '../src/client/index.ts';
import { Churn, CHURN_ROLE, startWriter, writeBatch, type MixedWrites, type WriteStats } from './churn.ts';
import { loadConfig, type BenchConfig } from './config.ts';
import { generate, probes, writeCount, type Probe } from './dataset.ts';
import { runOne, runPhase, type PhaseContext, type RunRecord } from './phases.ts';
import { checkAnswers, datasetInfo, rawAnswer, seedDataset } from './prepare.ts';
import { backgroundCores, installCleanup, runMain, timeLimit, withTimeout } from './procs.ts';
import { loadFailures, machineInfo, summariseTool, writeReport, type Report, type ToolSummary } from './report.ts';
import { ROOT, startBare, startGateway, type Server } from './servers.ts';
import { fmtMs, median, summarise, summaryRow, table, SUMMARY_HEADER, type Summary } from './stats.ts';

const RESULTS = join(ROOT, 'bench', 'results');
/** Writes per has_permission check in the mixed run. */
const WRITE_SHARE = 0.01;
/** Worker count of the mixed run (the service's default on this 2-core machine). */
const MIXED_WORKERS = 2;
/**
 * The read-your-writes prober beside the mixed run: writes per second, and its sequential lanes.
 * Its writes, its reads on new connections and its own CPU come on top of the 1% (about 1,000
 * writes and reads over the phase).
 */
const PROBE_RATE = 10;
const PROBE_LANES = 4;
/** Permissions wrk cycles its grants and revokes through, per run. */
const WRK_WRITE_PERMISSIONS = 1024;
/** Mixed checks must keep at least this share of the pure rate (printed, never fatal). */
const PASS_RATIO = 0.8;
const LATENCY_WORKERS = [1, 2, 4];
const LATENCY_WRITES = 1_000;
const LATENCY_IN_FLIGHT = 16;
const LATENCY_WARMUP_WRITES = 50;
const BATCH_LIMIT_MS = 120_000;

interface Restart {
  workers: number;
  startSeconds: number;
  /** Probes of the data set checked against the model, exact revision. */
  checked: number;
  wrong: number;
  /** Churn permissions read back (on new connections) against the acknowledged writes. */
  churnChecked: number;
  churnWrong: number;
  examples: string[];
}

interface MixedResult {
  workers: number;
  /** wrk sent a write as every n-th request. */
  writeEvery: number;
  /** Medians of the measured runs: checks alone, then checks with writes among them (all requests). */
  pure: Summary;
  mixed: Summary;
  /** The checks of the mixed run (its requests less the writes), and its writes, per second (medians). */
  checksPerSecond: number;
  writesPerSecond: number;
  /**
   * Per pair of adjacent runs, the mixed run's checks over the pure run's; the machine's speed
   * drifts between pairs far more than within one, so pairs are compared, not medians of all runs.
   */
  pairRatios: number[];
  /** The median of pairRatios: what the pass is decided on. */
  ratio: number;
  /** All mixed checks over all pure checks (the mean ratio, for comparison). */
  ratioOfSums: number;
  pass: boolean;
  /** The read-your-writes prober's own writes (client-side latency). */
  prober: { writes: number; errors: number; writesPerSecond: number; p50: number; p99: number; mean: number };
  readYourWrites: { checked: number; wrong: number; examples: string[] };
  checker: { checked: number; wrong: number };
}

interface ClusterReport {
  date: string;
  ok: boolean;
  failures: string[];
  machine: Report['machine'];
  config: object;
  dataset: object;
  pinning: string;
  seeding?: object;
  backgroundCores?: number;
  restarts: Restart[];
  /** warn and error lines each gateway logged (a worker replaced after a missed acknowledgement shows here). */
  gatewayLogs: Array<{ workers: number; lines: number; examples: string[] }>;
  pure: Array<ToolSummary & { workers: number }>;
  mixed?: MixedResult;
  writeLatency: Array<WriteStats & { workers: number; inFlight: number }>;
  runs: RunRecord[];
  mixedWrites: Array<MixedWrites & { round: number; warmup: boolean }>;
}

interface Bench {
  cfg: BenchConfig;
  report: ClusterReport;
  key: string;
  sqlitePath: string;
  sample: Probe[];
  churn: Churn;
  ctx: PhaseContext;
}

async function start(b: Pick<Bench, 'cfg' | 'sqlitePath'>, workers: number): Promise<{ gateway: Server; seconds: number }> {
  const t0 = performance.now();
  const gateway = await startGateway({
    entry: b.cfg.gatewayEntry,
    logLevel: b.cfg.gatewayLogLevel,
    cpus: undefined,
    startTimeoutMs: 90_000,
    workers,
    sqlitePath: b.sqlitePath,
  });
  const seconds = (performance.now() - t0) / 1000;
  console.log(`\ngateway AUTH_WORKERS=${workers} listening on ${gateway.baseUrl} (pid ${gateway.child.pid}), started in ${seconds.toFixed(1)} s`);
  return { gateway, seconds };
}

/** After each (re)start: the sample against the model (exact revision) and every churn permission. */
async function checkStart(b: Bench, gateway: Server, workers: number, startSeconds: number): Promise<boolean> {
  const exp = { strict: true, revision: b.churn.revision };
  const t = await withTimeout(checkAnswers(b.churn.client, b.sample, exp, `check after start (AUTH_WORKERS=${workers})`), 120_000, 'answer check');
  const c = await withTimeout(b.churn.verify(gateway.baseUrl, b.key), 60_000, 'churn check');
  console.log(`churn permissions read back on new connections: ${c.checked} checked, ${c.wrong} wrong`);
  for (const e of c.examples) console.log(`  WRONG: ${e}`);
  const examples = [...t.examples, ...c.examples];
  b.report.restarts.push({ workers, startSeconds, checked: t.checked, wrong: t.wrong, churnChecked: c.checked, churnWrong: c.wrong, examples });
  if (t.wrong + c.wrong === 0) return true;
  b.report.failures.push(`AUTH_WORKERS=${workers}: ${t.wrong + c.wrong} wrong answers after start (${examples[0] ?? ''})`);
  return false;
}

/** Stops the gateway and records the warn and error lines it logged. */
async function stop(b: Pick<Bench, 'report'>, gateway: Server, workers: number): Promise<void> {
  await gateway.stop();
  const lines = gateway.child.output().split('\n').filter((l) => /"level":"(warn|error)"/.test(l));
  b.report.gatewayLogs.push({ workers, lines: lines.length, examples: lines.slice(0, 5) });
  if (lines.length > 0) console.log(`WARNING: the gateway (AUTH_WORKERS=${workers}) logged ${lines.length} warn/error lines, first: ${lines[0] ?? ''}`);
}

async function purePhase(b: Bench, bare: Server, gateway: Server, workers: number): Promise<void> {
  console.log(`\nphase 1: has_permission on AUTH_WORKERS=${workers} against bare (wrk -t1 -c${b.cfg.connections}, not pinned)`);
  const runs = await runPhase('wrk', bare, gateway, { ...b.ctx, revision: b.churn.revision, tag: `w${workers}` });
  b.report.runs.push(...runs);
  const s = summariseTool(runs, 'wrk');
  if (s !== undefined) b.report.pure.push({ workers, ...s });
}

async function mixedPhase(b: Bench, gateway: Server): Promise<void> {
  const every = Math.round(1 / WRITE_SHARE);
  console.log(
    `\nphase 2: mixed on AUTH_WORKERS=${MIXED_WORKERS}: wrk sends a grant or revoke as every ${every}th request (${WRITE_SHARE * 100}% writes);` +
      ` beside it ${PROBE_RATE} writes/s from ${PROBE_LANES} lanes, each read back on a new connection (read-your-writes)`,
  );
  const base: PhaseContext = { ...b.ctx, revision: b.churn.revision, revisionAtLeast: true };
  const pureRecs: RunRecord[] = [];
  const mixedRecs: RunRecord[] = [];
  let runs = 0;
  const mixed = async (round: number, warmup: boolean): Promise<void> => {
    let got: MixedWrites | undefined;
    const alongside = (): { stop(): Promise<void> } => {
      const w = startWriter(b.churn, gateway.baseUrl, b.key, PROBE_RATE, PROBE_LANES);
      return { stop: async () => void (got = await w.stop()) };
    };
    // A permission prefix of its own per run: each run starts its grant/revoke cycle afresh.
    const writes = { every, role: CHURN_ROLE, prefix: `bench.churn:wrk${runs++}-${Date.now().toString(36)}.p`, count: WRK_WRITE_PERMISSIONS };
    const rec = await runOne('wrk', gateway, round, { ...base, tag: 'mixed', alongside, writes }, warmup);
    if (got === undefined) throw new Error('the read-your-writes prober did not report');
    const w: MixedWrites = got;
    console.log(
      `    wrk writes ~${Math.floor(rec.requests / every)} (${(rec.rps / every).toFixed(0)}/s); prober writes ${w.writes} p50 ${fmtMs(w.latency.p50)}  p99 ${fmtMs(w.latency.p99)} ms` +
        `  errors ${w.errors}  read-your-writes ${w.reads.checked} checked, ${w.reads.wrong} wrong`,
    );
    for (const e of [...w.examples, ...w.reads.examples]) console.log(`    WRONG: ${e}`);
    b.report.runs.push(rec);
    b.report.mixedWrites.push({ ...w, round, warmup });
    if (!warmup) mixedRecs.push(rec);
  };
  const pure = async (round: number): Promise<void> => {
    const rec = await runOne('wrk', gateway, round, { ...base, tag: 'pure' }, false);
    b.report.runs.push(rec);
    pureRecs.push(rec);
  };
  if (b.cfg.warmupS > 0) await mixed(0, true);
  for (let round = 0; round < b.cfg.mixedPairs; round++) {
    if (round % 2 === 0) {
      await pure(round);
      await mixed(round, false);
    } else {
      await mixed(round, false);
      await pure(round);
    }
  }
  const all = b.report.mixedWrites;
  const measured = all.filter((w) => !w.warmup);
  const sum = (xs: typeof all, f: (w: MixedWrites) => number): number => xs.reduce((n, w) => n + f(w), 0);
  const p = summarise(pureRecs);
  const m = summarise(mixedRecs);
  const checks = (r: RunRecord): number => r.rps * (1 - 1 / every);
  const pairRatios = mixedRecs.map((r, i) => checks(r) / (pureRecs[i]?.rps ?? NaN));
  const ratio = median(pairRatios);
  const total = (rs: RunRecord[], f: (r: RunRecord) => number): number => rs.reduce((n, r) => n + f(r) * r.durationS, 0);
  b.report.mixed = {
    workers: MIXED_WORKERS,
    writeEvery: every,
    pure: p,
    mixed: m,
    checksPerSecond: m.rps * (1 - 1 / every),
    writesPerSecond: m.rps / every,
    pairRatios,
    ratio,
    ratioOfSums: total(mixedRecs, checks) / total(pureRecs, (r) => r.rps),
    pass: ratio >= PASS_RATIO,
    prober: {
      writes: sum(measured, (w) => w.writes),
      errors: sum(measured, (w) => w.errors),
      writesPerSecond: median(measured.map((w) => w.writesPerSecond)),
      p50: median(measured.map((w) => w.latency.p50)),
      p99: median(measured.map((w) => w.latency.p99)),
      mean: median(measured.map((w) => w.latency.mean)),
    },
    readYourWrites: {
      checked: sum(measured, (w) => w.reads.checked),
      wrong: sum(measured, (w) => w.reads.wrong),
      examples: measured.flatMap((w) => w.reads.examples).slice(0, 5),
    },
    checker: { checked: mixedRecs.reduce((n, r) => n + r.checked, 0), wrong: mixedRecs.reduce((n, r) => n + r.wrong, 0) },
  };
  // Warm-up runs count for correctness too; wrk's own writes fail the run as non-2xx (loadFailures).
  const wrong = sum(all, (w) => w.reads.wrong);
  const errors = sum(all, (w) => w.errors);
  const example = all.flatMap((w) => [...w.reads.examples, ...w.examples])[0] ?? '';
  if (wrong > 0) b.report.failures.push(`mixed run: ${wrong} stale or wrong reads after acknowledged writes (${example})`);
  if (errors > 0) b.report.failures.push(`mixed run: ${errors} failed writes (${example})`);
}

async function latencyPhase(b: Bench, workers: number): Promise<void> {
  console.log(`\nphase 3: write latency on AUTH_WORKERS=${workers} (${LATENCY_WRITES} writes, sequential then ${LATENCY_IN_FLIGHT} in flight)`);
  const warm = await writeBatch(b.churn, LATENCY_WARMUP_WRITES, 1, performance.now() + BATCH_LIMIT_MS);
  const batches = [warm];
  for (const inFlight of [1, LATENCY_IN_FLIGHT]) {
    const s = await withTimeout(writeBatch(b.churn, LATENCY_WRITES, inFlight, performance.now() + BATCH_LIMIT_MS), BATCH_LIMIT_MS + 30_000, 'write batch');
    batches.push(s);
    b.report.writeLatency.push({ workers, inFlight, ...s });
    console.log(
      `  ${String(inFlight).padStart(2)} in flight: ${s.writes} writes in ${s.seconds.toFixed(1)} s (${s.writesPerSecond.toFixed(0)}/s)` +
        `  mean ${fmtMs(s.latency.mean)}  p50 ${fmtMs(s.latency.p50)}  p99 ${fmtMs(s.latency.p99)}  max ${fmtMs(s.latency.max)} ms  errors ${s.errors}`,
    );
  }
  const errors = batches.reduce((n, s) => n + s.errors, 0);
  const example = batches.flatMap((s) => s.examples)[0] ?? '';
  if (errors > 0) b.report.failures.push(`write latency, AUTH_WORKERS=${workers}: ${errors} failed writes (${example})`);
}

async function main(): Promise<number> {
  installCleanup();
  const cfg = loadConfig();
  const perRun = cfg.durationS + cfg.warmupS + 15;
  timeLimit('bench:cluster', 180 + cfg.seedTimeoutS + (4 * cfg.rounds + 2 * cfg.mixedPairs + 6) * perRun + LATENCY_WORKERS.length * (420 + 2 * BATCH_LIMIT_MS / 1000));
  if (!cfg.wrk) {
    console.log(`bench:cluster needs wrk (${process.env.BENCH_WRK === '0' ? 'BENCH_WRK=0 is not supported here' : 'apt-get install wrk'})`);
    return 1;
  }
  const pinning = 'off: AUTH_WORKERS=2 needs both cores; the servers, wrk and this process share every CPU';
  console.log(`CPU pinning ${pinning}${process.env.BENCH_PIN === undefined ? '' : ` (BENCH_PIN=${process.env.BENCH_PIN} ignored)`}`);
  const ds = generate(cfg);
  const info = datasetInfo(cfg, ds);
  console.log(`data set: ${JSON.stringify(info)}`);
  const { pin: _pin, ...printable } = cfg;
  const report: ClusterReport = {
    date: new Date().toISOString(),
    ok: false,
    failures: [],
    machine: machineInfo(),
    config: { ...printable, writeShare: WRITE_SHARE, mixedWorkers: MIXED_WORKERS, proberRate: PROBE_RATE, proberLanes: PROBE_LANES, latencyWrites: LATENCY_WRITES, latencyInFlight: LATENCY_IN_FLIGHT },
    dataset: info,
    pinning,
    restarts: [],
    gatewayLogs: [],
    pure: [],
    writeLatency: [],
    runs: [],
    mixedWrites: [],
  };
  // One SQLite file for every gateway of the run, owned here: removed at exit, whatever the exit.
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-cluster-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const sqlitePath = join(dir, 'rbac.sqlite3');
  const key = randomUUID();
  const load = probes(ds, cfg.loadUrls, cfg.seed + 2);

  let workers = 1;
  let { gateway, seconds } = await start({ cfg, sqlitePath }, workers);
  let bare: Server | undefined;
  const run = async (): Promise<void> => {
    const churn = new Churn(new RbacClient({ baseUrl: gateway.baseUrl, key }));
    const seeded = await seedDataset(cfg, ds, churn.client);
    report.seeding = seeded;
    if (seeded.maxRevision !== writeCount(ds)) {
      report.failures.push(`revision after ${writeCount(ds)} writes on an empty client is ${seeded.maxRevision} (CONTRACT.md §6: +1 per write)`);
      return;
    }
    await churn.setup();
    const ctx: PhaseContext = {
      key,
      probes: load,
      revision: churn.revision,
      connections: cfg.connections,
      durationS: cfg.durationS,
      warmupS: cfg.warmupS,
      rounds: cfg.rounds,
      verifyEvery: cfg.verifyEvery,
      checkerRate: cfg.checkerRate,
      loadCpus: undefined,
      cwd: ROOT,
    };
    const b: Bench = { cfg, report, key, sqlitePath, sample: probes(ds, cfg.correctnessSample, cfg.seed + 1), churn, ctx };
    if (!(await checkStart(b, gateway, 1, seconds))) return;

    const yes = load.find((p) => p.expected);
    const no = load.find((p) => !p.expected);
    if (yes === undefined || no === undefined) throw new Error('the probe set needs true and false answers');
    const [t, f] = await Promise.all([rawAnswer(gateway.baseUrl, key, yes), rawAnswer(gateway.baseUrl, key, no)]);
    bare = await startBare({ bodyTrue: t.body, bodyFalse: f.body, revision: churn.revision, requestIdLength: f.requestId.length, cpus: undefined });
    console.log(`bare server listening on ${bare.baseUrl}; response body ${f.body.length} bytes`);
    report.backgroundCores = await backgroundCores();
    if (report.backgroundCores > 0.2) console.log(`WARNING: ${report.backgroundCores.toFixed(2)} cores busy with other work before the load: figures will be noisy`);

    const phases = selectedPhases();
    const plan = LATENCY_WORKERS.filter((w) => (phases.has('latency') || (phases.has('pure') && w <= 2) || (phases.has('mixed') && w === MIXED_WORKERS)));
    for (const w of plan) {
      if (w !== workers) {
        await stop(b, gateway, workers);
        workers = w;
        ({ gateway, seconds } = await start(b, workers));
        churn.client = new RbacClient({ baseUrl: gateway.baseUrl, key });
        if (!(await checkStart(b, gateway, workers, seconds))) return;
      }
      if (phases.has('pure') && workers <= 2) await purePhase(b, bare, gateway, workers);
      if (phases.has('mixed') && workers === MIXED_WORKERS) await mixedPhase(b, gateway);
      if (phases.has('latency')) await latencyPhase(b, workers);
    }
  };
  try {
    await run();
  } finally {
    await bare?.stop();
    if (gateway.child.running()) await stop({ report }, gateway, workers);
  }
  report.failures.push(...loadFailures(report.runs));
  return finish(report);
}

const PHASES = ['pure', 'mixed', 'latency'] as const;

/** BENCH_CLUSTER_PHASES (comma-separated, default all): the phases to run, e.g. `mixed` alone. */
function selectedPhases(): Set<string> {
  const raw = process.env.BENCH_CLUSTER_PHASES;
  if (raw === undefined || raw.trim() === '') return new Set(PHASES);
  const asked = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
  const unknown = asked.filter((x) => !(PHASES as readonly string[]).includes(x));
  if (unknown.length > 0) throw new Error(`BENCH_CLUSTER_PHASES: unknown phase ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  return new Set(asked);
}

function printTables(r: ClusterReport): void {
  const ms = (x: number): string => fmtMs(x);
  const pureRows = [[...SUMMARY_HEADER, 'vs bare']];
  for (const p of r.pure) {
    pureRows.push([...summaryRow('bare', `(ref. w=${p.workers})`, p.bare), '']);
    pureRows.push([...summaryRow('gateway', `w=${p.workers}`, p.gateway), p.ratio.rps.toFixed(2)]);
  }
  console.log(`\nhas_permission, wrk -t1 -c${String((r.config as { connections?: number }).connections)}, not pinned (medians)\n${table(pureRows)}`);
  const [w1, w2] = [r.pure.find((p) => p.workers === 1), r.pure.find((p) => p.workers === 2)];
  if (w1 !== undefined && w2 !== undefined) {
    console.log(`AUTH_WORKERS=2 vs 1: throughput x${(w2.gateway.rps / w1.gateway.rps).toFixed(2)}, p99 x${(w2.gateway.latency.p99 / w1.gateway.latency.p99).toFixed(2)}`);
  }
  const m = r.mixed;
  if (m !== undefined) {
    const rows = [SUMMARY_HEADER, summaryRow(`w=${m.workers}`, 'checks only', m.pure), summaryRow(`w=${m.workers}`, `1 in ${m.writeEvery} a write`, m.mixed)];
    console.log(`\nmixed run, AUTH_WORKERS=${m.workers}, wrk sends a write as every ${m.writeEvery}th request (medians; req/s counts writes too)\n${table(rows)}`);
    console.log(
      `checks ${Math.round(m.checksPerSecond)}/s beside ${Math.round(m.writesPerSecond)} writes/s (medians)\n` +
        `checks mixed/pure per pair of runs: ${m.pairRatios.map((x) => x.toFixed(2)).join(' ')}\n` +
        // A figure, not a verdict: on a machine this noisy a throughput ratio swings by ±10%, so
        // only wrong answers and failed writes fail the run (and exit non-zero).
        `median ${m.ratio.toFixed(2)} (aim >= ${PASS_RATIO}: ${m.pass ? 'met' : 'not met'}); all mixed checks over all pure checks ${m.ratioOfSums.toFixed(2)}`,
    );
    console.log(
      `read-your-writes prober: ${m.prober.writes} writes (${m.prober.writesPerSecond.toFixed(0)}/s), latency p50 ${ms(m.prober.p50)} ms, p99 ${ms(m.prober.p99)} ms, ${m.prober.errors} failed`,
    );
    console.log(`wrong answers: read-your-writes on new connections ${m.readYourWrites.wrong} of ${m.readYourWrites.checked}, checker ${m.checker.wrong} of ${m.checker.checked}`);
  }
  const rows = [['workers', 'in flight', 'writes', 'writes/s', 'mean ms', 'p50 ms', 'p99 ms', 'max ms', 'errors']];
  for (const w of r.writeLatency) {
    rows.push([String(w.workers), String(w.inFlight), String(w.writes), w.writesPerSecond.toFixed(0), ms(w.latency.mean), ms(w.latency.p50), ms(w.latency.p99), ms(w.latency.max), String(w.errors)]);
  }
  if (r.writeLatency.length > 0) console.log(`\nwrite latency (grant/revoke, client-side, one connection per write in flight)\n${table(rows)}`);
}

function finish(report: ClusterReport): number {
  report.ok = report.failures.length === 0;
  printTables(report);
  const file = writeReport(report, RESULTS, 'cluster-');
  console.log(`\nresults: ${file} (and bench/results/cluster-latest.json)`);
  if (!report.ok) {
    console.log('\nFAILED:');
    for (const f of report.failures) console.log(`  ${f}`);
  }
  return report.ok ? 0 : 1;
}

runMain('bench:cluster', main);
