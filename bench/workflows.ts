/**
 * `npm run bench:workflows`: what a scheduled workflow check (CONTRACT.md §5 workflow routes, §10)
 * costs when the workflow is held by 100,000 users through 1,000 roles, and whether the
 * has_permission checks beside its runs notice them. See bench/README.md.
 *
 * 0. One client (a random UUID v4 key, never printed) is seeded through the store port into a
 *    SQLite file before any gateway starts: the probe data set of dataset.ts and the workflow's
 *    data (workflow-model.ts: every role granted `bench.workflow` and three other permissions,
 *    every user in one role, 100 per role). PostgreSQL, when reachable (PG=0 skips it), gets a
 *    copy of those rows in a fresh database (workflow-store.ts).
 * 1. Per store, the real gateway (`node --import tsx src/main.ts`, AUTH_WORKERS=1, intervals down
 *    to 1 s, metrics on, webhooks allowed to the bench's loopback receiver only) is started on
 *    that data. Its answers are checked against the model, and so is the list of the workflow's
 *    users. Step 1 (workflow-runs.ts) times the first run of a new schedule, steady runs, and runs
 *    after batches of membership changes sent over HTTP; step 2 (workflow-load.ts) loads
 *    has_permission in rounds without a schedule (A) and with one running every second (B).
 * 2. Every run listed and every webhook delivery is checked against the model
 *    (workflow-check.ts), the receiver verifies every signature, and has_permission answers are
 *    checked before, between and after the steps and during the load.
 *
 * Any wrong answer, failed request or delivery, missing run, or run made without a schedule fails
 * the run (exit 1), whatever the speed; the CPU aim (B/A within 5 %) is reported, not enforced.
 * Results: a table and bench/results/workflows-latest.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TenantId } from '../src/authz/tenant.ts';
import { RbacClient } from '../src/client/index.ts';
import { tenantOfKey } from '../src/http/input/credentials.ts';
import { loadConfig, type BenchConfig } from './config.ts';
import { generate, type Dataset } from './dataset.ts';
import { describe } from './gateways.ts';
import { checkAnswers, datasetInfo } from './prepare.ts';
import { backgroundCores, installCleanup, pinSelf, runMain, timeLimit } from './procs.ts';
import { machineInfo } from './report.ts';
import { ROOT, type Server } from './servers.ts';
import { startWorkflowGateway, type StoreKind } from './workflow-gateway.ts';
import { abRounds } from './workflow-load.ts';
import { datasetChanges, mixedProbes, WORKFLOW, WorkflowModel, type WorkflowShape } from './workflow-model.ts';
import { startReceiver, type Receiver } from './workflow-receiver.ts';
import { printRatios, printRounds, printRunTimes, spread, type StoreResult } from './workflow-report.ts';
import { measureRunTimes, RunsAudit, type StepContext } from './workflow-runs.ts';
import { postgresMissing } from './databases.ts';
import { postgresCopy, seedSqlite } from './workflow-store.ts';

const RESULT_FILE = join(ROOT, 'bench', 'results', 'workflows-latest.json');

interface Settings {
  shape: WorkflowShape;
  durationS: number;
  warmupS: number;
  rounds: number;
  steadyRuns: number;
  batches: number;
  batchSize: number;
  tickMs: number;
}

function num(name: string, dflt: number, min: number, max: number): number {
  const raw = process.env[name];
  const v = raw === undefined || raw === '' ? dflt : Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`${name}=${raw}: expected an integer in ${min}..${max}`);
  return v;
}

function settings(): Settings {
  const rounds = num('BENCH_WF_ROUNDS', 6, 2, 20);
  if (rounds % 2 !== 0) throw new Error(`BENCH_WF_ROUNDS=${rounds}: expected an even number (pairs of A and B)`);
  return {
    shape: { users: num('BENCH_WF_USERS', 100_000, 1_000, 1_000_000), roles: num('BENCH_WF_ROLES', 1_000, 1, 100_000) },
    durationS: num('BENCH_WF_DURATION', 15, 3, 600),
    warmupS: num('BENCH_WF_WARMUP', 8, 1, 60),
    rounds,
    steadyRuns: num('BENCH_WF_STEADY', 5, 1, 60),
    batches: num('BENCH_WF_BATCHES', 2, 1, 10),
    batchSize: num('BENCH_WF_BATCH', 100, 1, 1_000),
    tickMs: num('BENCH_WF_TICK_MS', 500, 0, 10_000),
  };
}

interface Bench {
  cfg: BenchConfig;
  wf: Settings;
  ds: Dataset;
  key: string;
  tenant: TenantId;
  /** The revision once seeded: every write of the seed. */
  revision: number;
  receiver: Receiver;
  failures: string[];
  /** Observations that do not fail the run. */
  notes: string[];
}

/** The gateway's answers against the model at its revision; wrong ones go to the failures. */
async function checkSample(b: Bench, client: RbacClient, model: WorkflowModel, label: string, seed: number): Promise<StoreResult['correctness']['before']> {
  const sample = mixedProbes(b.ds, model, b.cfg.correctnessSample, seed);
  const tally = await checkAnswers(client, sample, { strict: true, revision: model.revision }, label);
  if (tally.wrong > 0) b.failures.push(`${label}: ${tally.wrong} wrong answers of ${tally.checked} (${tally.examples[0] ?? ''})`);
  return tally;
}

/** `GET /api/workflow/users/{workflow}` (from memory), paged, against the model's holders; how many it listed. */
async function checkHolders(b: Bench, client: RbacClient, model: WorkflowModel, label: string): Promise<number> {
  const listed = (await client.all((o) => client.workflowUsers(WORKFLOW, o), 10_000)).map((u) => u.user);
  const want = model.holdersAt(model.revision);
  const at = listed.findIndex((u, i) => u !== want[i]);
  if (listed.length !== want.length || at !== -1) b.failures.push(`${label}: the workflow's users listed ${listed.length}, the model says ${want.length} (first difference at ${at})`);
  return listed.length;
}

/** Both steps on one store's gateway. */
async function session(b: Bench, store: StoreKind, sqlitePath: string, pgUrl: string | undefined): Promise<StoreResult> {
  const { cfg, wf } = b;
  console.log(`\n== ${store} ==`);
  const model = new WorkflowModel(wf.shape);
  model.baseRevision = b.revision;
  const gateway = await startWorkflowGateway(cfg, store, sqlitePath, pgUrl, b.receiver.host);
  const failed = b.failures.length;
  try {
    const client = new RbacClient({ baseUrl: gateway.baseUrl, key: b.key });
    const before = await checkSample(b, client, model, `${store} correctness before step 1`, cfg.seed + 1);
    const holdersListed = await checkHolders(b, client, model, store);
    const step: StepContext = { client, metricsUrl: gateway.metricsUrl ?? '', receiver: b.receiver, model, failures: b.failures, audit: new RunsAudit({ client, receiver: b.receiver, model, failures: b.failures }), steadyRuns: wf.steadyRuns, tickMs: wf.tickMs, batches: wf.batches, batchSize: wf.batchSize };
    console.log(`step 1: run time (schedule every second, webhook on)`);
    const runTimes = await measureRunTimes(step);
    const afterChanges = await checkSample(b, client, model, `${store} correctness after the changes`, cfg.seed + 3);
    const idle = await backgroundCores();
    if (idle > 0.2) console.log(`WARNING: ${idle.toFixed(2)} cores busy with other work before the load: figures will be noisy`);
    const tool = cfg.wrk ? 'wrk' : 'autocannon';
    console.log(`step 2: has_permission with ${tool}, ${cfg.connections} connections, ${wf.durationS} s per round, rounds ${wf.rounds} (A B, B A, ...)`);
    const phase = {
      key: b.key, probes: mixedProbes(b.ds, model, cfg.loadUrls, cfg.seed + 2), revision: model.revision, connections: cfg.connections,
      durationS: wf.durationS, warmupS: wf.warmupS, rounds: wf.rounds, verifyEvery: cfg.verifyEvery, checkerRate: cfg.checkerRate, loadCpus: cfg.pin?.load, cwd: ROOT,
    };
    const late: string[] = [];
    const ab = await abRounds({ step, gateway, phase, tool, rounds: wf.rounds, notes: late }, true);
    b.notes.push(...late.map((n) => `${store} ${n}`));
    const afterLoad = await checkSample(b, client, model, `${store} correctness after step 2`, cfg.seed + 4);
    const leftover = step.audit.finish();
    const { audit } = step;
    const seen = runTimes.seen;
    return {
      store,
      gateway: (({ pid, processes, threads, reportedEngine }) => ({ pid, processes, threads, engine: reportedEngine }))(describe(gateway)),
      correctness: { before, afterChanges, afterLoad },
      holdersListed,
      runTimes,
      runMs: {
        unchanged: spread(seen.filter((s) => s.kind === 'unchanged' && s.counted === 1).map((s) => s.runMs)),
        recomputed: spread(seen.filter((s) => s.kind === 'recomputed' && s.counted === 1).map((s) => s.runMs)),
        change: spread(seen.filter((s) => s.kind === 'change' && s.counted === 1).map((s) => s.runMs)),
      },
      gapS: spread(runTimes.gapsS),
      ab,
      audit: { runs: audit.runs, retried: audit.retried, deliveries: audit.deliveries, matched: audit.matched, leftover },
      logWarnings: warnings(gateway),
    };
  } catch (err) {
    throw new Error(`${store}: ${err instanceof Error ? err.message : String(err)}${exitOf(gateway)}`);
  } finally {
    await gateway.stop();
    for (const f of b.failures.slice(failed)) console.log(`  FAILED: ${f}`);
  }
}

/** When the gateway is gone: how it ended and the last lines it wrote, for the failure. */
function exitOf(g: Server): string {
  if (g.child.running()) return '';
  const { exitCode, signalCode } = g.child.proc;
  const tail = g.child.output().trimEnd().split('\n').slice(-8).join('\n    ');
  return `; the gateway had exited (code ${String(exitCode)}, signal ${String(signalCode)}), its last lines:\n    ${tail}`;
}

/** One store's session; a session that breaks off fails the run, and the next store still gets its turn. */
async function attempt(b: Bench, results: StoreResult[], run: () => Promise<StoreResult>): Promise<void> {
  try {
    results.push(await run());
  } catch (err) {
    b.failures.push(err instanceof Error ? err.message : String(err));
    console.log(`  FAILED: ${b.failures[b.failures.length - 1] ?? ''}`);
  }
}

const warnings = (g: Server): string[] => g.child.output().split('\n').filter((l) => /"level":"(warn|error|fatal)"/.test(l)).slice(0, 10);

/** Seconds the whole run may take before it is stopped as stuck. */
const timeLimitS = (wf: Settings): number => 180 + 2 * (120 + wf.steadyRuns + 10 * wf.batches + (wf.rounds + 1) * (wf.durationS + 25));

async function main(): Promise<number> {
  installCleanup();
  const started = performance.now();
  const cfg = loadConfig();
  const wf = settings();
  timeLimit('bench:workflows', timeLimitS(wf));
  if (cfg.pin !== undefined) {
    const pinned = pinSelf(cfg.pin.load);
    console.log(pinned ? `pinned: the gateway (primary and worker) on CPU ${cfg.pin.server}, load generators on CPU ${cfg.pin.load}` : 'note: pinning failed, running unpinned');
  }
  const ds = generate(cfg);
  const key = randomUUID();
  const b: Bench = { cfg, wf, ds, key, tenant: tenantOfKey(key), revision: 0, receiver: await startReceiver(), failures: [], notes: [] };
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-workflows-'));
  const results: StoreResult[] = [];
  const drops: Array<() => Promise<void>> = [];
  const seeding: Record<string, number> = {};
  try {
    const changes = [...datasetChanges(ds), ...new WorkflowModel(wf.shape).changes()];
    const sqlitePath = join(dir, 'rbac.sqlite3');
    seeding.sqliteSeconds = await seedSqlite(sqlitePath, b.tenant, changes);
    seeding.writes = b.revision = changes.length;
    console.log(`seeded ${changes.length} writes through the store port in ${seeding.sqliteSeconds.toFixed(1)} s: ${JSON.stringify(datasetInfo(cfg, ds))} + ${wf.shape.users} workflow users in ${wf.shape.roles} roles`);
    const missing = await postgresMissing();
    let pgUrl: string | undefined;
    if (missing === undefined) {
      const pg = await postgresCopy(sqlitePath, b.tenant);
      drops.push(pg.drop);
      [pgUrl, seeding.postgresqlCopySeconds] = [pg.url, pg.seconds];
      console.log(`copied into a fresh PostgreSQL database in ${pg.seconds.toFixed(1)} s`);
    } else {
      b.notes.push(`postgresql skipped: ${missing}`);
      console.log(`postgresql skipped: ${missing}`);
    }
    await attempt(b, results, () => session(b, 'sqlite', sqlitePath, undefined));
    if (pgUrl !== undefined) await attempt(b, results, () => session(b, 'postgresql', join(dir, 'unused.sqlite3'), pgUrl));
  } finally {
    await b.receiver.close();
    for (const drop of drops) await drop().catch((err: unknown) => console.error(`cleanup: ${String(err)}`));
    rmSync(dir, { recursive: true, force: true });
  }
  b.failures.push(...b.receiver.problems());
  return finish(b, results, seeding, (performance.now() - started) / 1000);
}

function finish(b: Bench, results: StoreResult[], seeding: Record<string, number>, seconds: number): number {
  const { notes } = b;
  if (results.length > 0) {
    printRunTimes(results, b.wf.shape.users);
    printRounds(results);
    printRatios(results);
  }
  for (const n of notes) console.log(`note: ${n}`);
  const { pin, ...cfg } = b.cfg;
  const report = {
    date: new Date().toISOString(),
    ok: b.failures.length === 0,
    failures: b.failures,
    notes,
    seconds,
    machine: machineInfo(),
    config: { ...cfg, pin: pin ?? 'off', workflow: b.wf },
    dataset: { probes: datasetInfo(b.cfg, b.ds), workflow: { name: WORKFLOW, ...b.wf.shape, permissionsPerRole: 4 }, revision: b.revision },
    seeding,
    stores: results,
  };
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(RESULT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nresults: ${RESULT_FILE} (${seconds.toFixed(0)} s)`);
  if (report.ok) return 0;
  console.log('\nFAILED:');
  for (const f of b.failures) console.log(`  ${f}`);
  return 1;
}

runMain('bench:workflows', main);
