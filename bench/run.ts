/**
 * `npm run bench`: has_permission throughput, latency and CPU per request of the real gateway on
 * each HTTP engine (AUTH_HTTP_ENGINE: uws, node), of the uws gateway with a signed token instead
 * of the key, and of a uws gateway with metrics on, against a bare uWebSockets.js ceiling, with
 * autocannon and (when installed)
 * wrk, in one run. Seeds a deterministic data set, checks answers against an in-bench model before
 * and during the load, and fails (exit 1) on any wrong answer, whatever the speed. See
 * bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacClient } from '../src/client/index.ts';
import { loadConfig, type BenchConfig } from './config.ts';
import { generate, probes, writeCount, type Dataset, type Probe } from './dataset.ts';
import { compareEngines, labelOf, metricsLabel, noteSideRatio, tokenLabel, type Variant } from './engines.ts';
import { describe, engineProblems, snapshot, sqliteFile, startEngine } from './gateways.ts';
import { runRounds, type PhaseContext, type Tool } from './phases.ts';
import { checkAnswers, datasetInfo, rawAnswer, seedDataset } from './prepare.ts';
import { backgroundCores, installCleanup, pinSelf, runMain, timeLimit } from './procs.ts';
import { loadFailures, newReport, printSummary, summariseTool, writeReport, type Report } from './report.ts';
import { metricsBaseline, metricsPlan, startMetricsGateway, verifyCounter, type MetricsPlan } from './metrics-run.ts';
import { ROOT, startBare, type Server } from './servers.ts';
import { prepareToken, tokenEnv, tokenPlan, type TokenPlan } from './token.ts';

const RESULTS = join(ROOT, 'bench', 'results');
/** `other cpu` above this (in a quiet run it is near 0.05) means another job shared the machine. */
const DISTURBED_CORES = 0.3;

interface Bench {
  cfg: BenchConfig;
  ds: Dataset;
  report: Report;
  key: string;
  /** Checked against the model on every gateway before timing. */
  sample: Probe[];
  /** The gateway loaded with a token too (its engine, and the secret every gateway gets), or why none. */
  token: TokenPlan;
  /** The engine of the gateway run a second time with metrics on, or why none. */
  metrics: MetricsPlan;
}

/** The servers compared with their engine's plain gateway: `uws+token`, `uws+metrics`. */
function variants(b: Bench): Variant[] {
  const out: Variant[] = [];
  if ('engine' in b.token) out.push({ label: tokenLabel(b.token.engine), engine: b.token.engine });
  if ('engine' in b.metrics) out.push({ label: metricsLabel(b.metrics.engine), engine: b.metrics.engine });
  return out;
}

/** Seeds the first gateway and checks it; the revision after seeding, or undefined on a failure. */
async function prepare(b: Bench, gateway: Server): Promise<number | undefined> {
  const client = new RbacClient({ baseUrl: gateway.baseUrl, key: b.key });
  const writes = writeCount(b.ds);
  const seeded = await seedDataset(b.cfg, b.ds, client);
  b.report.seeding = seeded;
  if (seeded.maxRevision !== writes) {
    b.report.failures.push(`revision after ${writes} writes on an empty client is ${seeded.maxRevision} (CONTRACT.md §6: +1 per write)`);
    return undefined;
  }
  return (await check(b, gateway, writes)) ? writes : undefined;
}

/** The sample of answers against the model, strictly (answer, envelope, revision, headers). */
async function check(b: Bench, gateway: Server, revision: number): Promise<boolean> {
  const client = new RbacClient({ baseUrl: gateway.baseUrl, key: b.key });
  const tally = await checkAnswers(client, b.sample, { strict: true, revision }, `correctness (${gateway.label})`);
  if (b.report.correctness === undefined) b.report.correctness = tally;
  (b.report.gateways ??= []).push(describe(gateway, tally));
  if (tally.wrong === 0) return true;
  b.report.failures.push(`${gateway.label}: ${tally.wrong} wrong answers of ${tally.checked} before timing (${tally.examples[0] ?? ''})`);
  return false;
}

/** The other engines' gateways, each on a snapshot of the seeded file; false on a wrong answer. */
async function startOthers(b: Bench, dir: string, revision: number, gateways: Server[]): Promise<boolean> {
  const seeded = sqliteFile(dir, b.cfg.engines[0] ?? '');
  for (const engine of b.cfg.engines.slice(1)) {
    const file = sqliteFile(dir, engine);
    await snapshot(seeded, file);
    const gateway = await startEngine(b.cfg, engine, file, tokenEnv(b.token));
    gateways.push(gateway);
    if (!(await check(b, gateway, revision))) return false;
  }
  return true;
}

/**
 * The token's server (the gateway of its engine, loaded with a token), when this run has one and
 * its answers are right; a skipped plan is only noted.
 */
async function startToken(b: Bench, gateways: Server[], revision: number): Promise<Server | undefined> {
  if ('skipped' in b.token) {
    console.log(`note: token run skipped: ${b.token.skipped}`);
    b.report.token = { skipped: b.token.skipped };
    return undefined;
  }
  const { engine } = b.token;
  const gateway = gateways.find((g) => g.engine === engine);
  if (gateway === undefined) throw new Error(`no gateway of ${engine} to load with a token`);
  const { server, report } = await prepareToken(gateway, b.key, b.sample, revision, b.report.failures);
  if (report !== undefined) b.report.token = report;
  return server;
}

/**
 * A gateway of the metrics plan's engine with metrics on, on its own snapshot of the seeded file
 * (added to `gateways`, which are stopped at the end), its answers and its counter checked; a
 * failure goes to the report, a skipped plan is only noted.
 */
async function startMetrics(b: Bench, dir: string, revision: number, gateways: Server[]): Promise<void> {
  if ('skipped' in b.metrics) {
    console.log(`note: metrics run skipped: ${b.metrics.skipped}`);
    b.report.metrics = { skipped: b.metrics.skipped };
    return;
  }
  const { engine } = b.metrics;
  const file = sqliteFile(dir, metricsLabel(engine));
  await snapshot(sqliteFile(dir, b.cfg.engines[0] ?? ''), file);
  const gateway = await startMetricsGateway(b.cfg, engine, file, tokenEnv(b.token));
  gateways.push(gateway);
  if (!(await check(b, gateway, revision))) return;
  b.report.failures.push(...engineProblems([gateway]));
  const section = await metricsBaseline(gateway, b.sample.length, b.report.failures);
  if (section !== undefined) b.report.metrics = section;
}

/** The load order: bare and each plain gateway, its variants (token, then metrics) right after it. */
function loadOrder(servers: Server[], token: Server | undefined): Server[] {
  const isVariant = (s: Server): boolean => s.token !== undefined || s.metricsUrl !== undefined;
  const extra = [token, ...servers].filter((s): s is Server => s !== undefined && isVariant(s));
  const plain = servers.filter((s) => !isVariant(s));
  return plain.flatMap((s) => (s.name === 'gateway' ? [s, ...extra.filter((v) => v.engine === s.engine)] : [s]));
}

/** The bare server, answering bodies captured from `gateway` (same size, same headers). */
async function startCeiling(b: Bench, gateway: Server, load: Probe[], revision: number): Promise<Server> {
  const yes = load.find((p) => p.expected);
  const no = load.find((p) => !p.expected);
  if (yes === undefined || no === undefined) throw new Error('the probe set needs true and false answers');
  const [t, f] = await Promise.all([rawAnswer(gateway.baseUrl, b.key, yes), rawAnswer(gateway.baseUrl, b.key, no)]);
  const cpus = b.cfg.pin === undefined ? undefined : String(b.cfg.pin.server);
  const bare = await startBare({ bodyTrue: t.body, bodyFalse: f.body, revision, requestIdLength: f.requestId.length, cpus });
  console.log(`bare server listening on ${bare.baseUrl}; response body ${f.body.length} bytes`);
  return bare;
}

function phaseContext(b: Bench, load: Probe[], revision: number): PhaseContext {
  const { cfg } = b;
  return {
    key: b.key,
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
}

/** One tool over every server, summarised into the report. */
async function measure(b: Bench, tool: Tool, servers: Server[], ctx: PhaseContext): Promise<void> {
  const { report, cfg } = b;
  report.runs.push(...(await runRounds(tool, servers, ctx)));
  const s = summariseTool(report.runs, tool, cfg.engines[0]);
  if (s !== undefined) report.summary[tool] = s;
  const c = compareEngines(report.runs, tool, cfg.engines, variants(b));
  if (c === undefined) return;
  (report.engines ??= {})[tool] = c;
  noteSideRatio(report.token, tool, c);
  noteSideRatio(report.metrics, tool, c);
}

async function load(b: Bench, servers: Server[], ctx: PhaseContext): Promise<void> {
  const { cfg, report } = b;
  const idle = await backgroundCores();
  report.backgroundCores = idle;
  if (idle > 0.2) console.log(`WARNING: ${idle.toFixed(2)} cores busy with other work before the load: figures will be noisy`);
  const order = servers.map((s) => s.label).join(' ');
  console.log(`load: ${ctx.probes.length} URLs (${ctx.probes.filter((p) => p.expected).length} true), ${cfg.connections} connections, ${cfg.durationS} s per run, ${cfg.rounds} rounds of ${order} (mirrored every other round)`);
  await measure(b, 'autocannon', servers, ctx);
  if (cfg.wrk) {
    await measure(b, 'wrk', servers, ctx);
  } else {
    const why = process.env.BENCH_WRK === '0' ? 'BENCH_WRK=0' : 'wrk is not on PATH (apt-get install wrk)';
    console.log(`note: wrk skipped: ${why}`);
    report.summary.wrk = { skipped: why };
    (report.engines ??= {}).wrk = { skipped: why };
    noteSideRatio(report.token, 'wrk', { skipped: why });
    noteSideRatio(report.metrics, 'wrk', { skipped: why });
  }
  report.failures.push(...loadFailures(report.runs));
  noteDisturbed(report);
  for (const s of servers.filter((x) => x.name === 'gateway')) {
    const lines = report.runs.filter((r) => labelOf(r) === s.label).reduce((n, r) => n + r.serverLogLines, 0);
    if (lines > 100) console.log(`note: gateway ${s.label} wrote ${lines} log lines during load (per-request logging costs throughput)`);
  }
}

/** Other work on the machine during a run is the usual reason for an odd figure: say where. */
function noteDisturbed(report: Report): void {
  const measured = report.runs.filter((r) => !r.warmup);
  const busy = measured.filter((r) => r.otherCores > DISTURBED_CORES);
  if (busy.length === 0) return;
  const worst = Math.max(...busy.map((r) => r.otherCores));
  const which =
    busy.length === measured.length ? 'every measured run' : busy.map((r) => `${r.tool} ${labelOf(r)} round ${r.round + 1}`).join(', ');
  console.log(`note: other work on the machine took more than ${DISTURBED_CORES} cores (up to ${worst.toFixed(2)}) during ${which}`);
}

/** Seconds the whole run may take before it is stopped as stuck. */
function timeLimitS(cfg: BenchConfig): number {
  const gateways = cfg.engines.length + (cfg.metrics ? 1 : 0);
  const servers = gateways + (cfg.token ? 2 : 1);
  const perTool = servers * (cfg.rounds * (cfg.durationS + 10) + cfg.warmupS + 10);
  return 120 + cfg.seedTimeoutS + 90 * gateways + 2 * perTool + 120;
}

async function main(): Promise<number> {
  installCleanup();
  // Three rounds: the median of three per-round ratios sets one disturbed round aside, and three
  // servers times two tools still fit in about four minutes.
  const cfg = loadConfig({ rounds: 3 });
  timeLimit('bench', timeLimitS(cfg));
  if (cfg.pin !== undefined) {
    const pinned = pinSelf(cfg.pin.load);
    console.log(pinned ? `pinned: servers on CPU ${cfg.pin.server}, load generators on CPU ${cfg.pin.load}` : 'note: pinning failed, running unpinned');
  }
  const ds = generate(cfg);
  const info = datasetInfo(cfg, ds);
  const { pin: _pin, ...printable } = cfg;
  const report = newReport({ ...printable, pin: cfg.pin ?? 'off' }, info);
  const token = tokenPlan(cfg);
  const metrics = metricsPlan(cfg);
  const notes = ('engine' in token ? `; token: ${token.engine}` : '') + ('engine' in metrics ? `; metrics on: ${metrics.engine}` : '');
  console.log(`data set: ${JSON.stringify(info)}; engines: ${cfg.engines.join(', ')}${notes}`);
  const b: Bench = { cfg, ds, report, key: randomUUID(), sample: probes(ds, cfg.correctnessSample, cfg.seed + 1), token, metrics };

  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-'));
  const servers: Server[] = [];
  try {
    const first = await startEngine(cfg, cfg.engines[0] ?? 'uws', sqliteFile(dir, cfg.engines[0] ?? 'uws'), tokenEnv(token));
    servers.push(first);
    const revision = await prepare(b, first);
    if (revision === undefined || !(await startOthers(b, dir, revision, servers))) return finish(report);
    report.failures.push(...engineProblems(servers));
    if (report.failures.length > 0) return finish(report);
    const tokenServer = await startToken(b, servers, revision);
    if (report.failures.length > 0) return finish(report);
    await startMetrics(b, dir, revision, servers);
    if (report.failures.length > 0) return finish(report);

    const urls = probes(ds, cfg.loadUrls, cfg.seed + 2);
    const bare = await startCeiling(b, first, urls, revision);
    servers.unshift(bare);
    await load(b, loadOrder(servers, tokenServer), phaseContext(b, urls, revision));
    await verifyCounter(report.metrics, report.runs, report.failures);
    return finish(report);
  } finally {
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
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
