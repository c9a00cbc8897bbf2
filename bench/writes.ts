/**
 * The write path of several gateway builds in one run (`node --import tsx bench/writes.ts`), to
 * report before and after a rewrite. GATEWAYS=before:/tmp/oldtree,after:/work/main (name:dir
 * pairs, each a checkout with node_modules; default current:<this repo>), DURATION_S (6), ROUNDS
 * (2), QUICK=1 (2 s, 1 round, 1 and 2 workers). Rounds alternate the gateways A B A B for each
 * worker count, and the tables print medians over rounds. For each gateway:
 *   1. server CPU per write (all its processes and threads, from /proc) with 1 and 16 writes in
 *      flight, AUTH_WORKERS=1, 2, 4: grant/revoke over 16 tenants, kept-alive connections;
 *   2. write latency, 2 workers, alone and beside wrk -c16 on has_permission;
 *   3. server CPU per check, 2 workers, checks alone then with writes paced to 1 per 100 checks
 *      of the checks-only rate (16 loops on one schedule; CPU per request, writes included, and
 *      the write count).
 * Any failed write, wrong answer or wrk error prints FAIL and exits 1; the final state of every
 * tenant is read back against the model on new connections. JSON: bench/results/writes-latest.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, median, table } from './stats.ts';
import { checkCheckout, describeCheckout, installCleanup, machineBusySeconds, sleep, startGateway, type Gateway } from './writes-gateway.ts';
import { checkOnce, Model, newTally, runWrites, runWrk, startChecker, verifyModel, type Tally, type WriteResult, type WrkResult } from './writes-load.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULT_FILE = resolve(ROOT, 'bench', 'results', 'writes-latest.json');
const IN_FLIGHT = [1, 16];
const CHECK_WORKERS = 2;
const WRK_CONNECTIONS = 16;
const WRITES_PER_CHECKS = 100;
/**
 * Loops sharing the paced writes beside the checks (each loop one write at a time, all on one
 * schedule): under check load a build with write cohorts holds a write up to 30 ms, so one loop,
 * or four, could not keep up with 1% of 70,000 checks/s there.
 */
const PACED_LOOPS = 16;
/** A phase that ran beside more than this many cores of other work is marked disturbed (`*`). */
const DISTURBED_CORES = 0.3;
/** Before each gateway start, wait up to this many seconds for the machine to use less than QUIET_CORES. */
const QUIET_WAIT_S = 12;
const QUIET_CORES = 0.3;

interface Config {
  gateways: Array<{ name: string; dir: string; version?: string }>;
  durationS: number;
  rounds: number;
  workers: number[];
  warmupS: number;
  quick: boolean;
}

function loadConfig(): Config {
  const quick = process.env.QUICK === '1';
  const num = (name: string, dflt: number, min: number, max: number): number => {
    const raw = process.env[name];
    const v = raw === undefined || raw === '' ? dflt : Number(raw);
    if (!Number.isFinite(v) || v < min || v > max) throw new Error(`${name}=${raw}: expected a number in ${min}..${max}`);
    return v;
  };
  const spec = process.env.GATEWAYS ?? `current:${ROOT}`;
  const gateways = spec.split(',').map((pair) => {
    const i = pair.indexOf(':');
    if (i <= 0) throw new Error(`GATEWAYS: "${pair}" is not name:directory`);
    const dir = resolve(pair.slice(i + 1));
    const problem = checkCheckout(dir);
    if (problem !== undefined) throw new Error(`GATEWAYS: ${problem}`);
    const version = describeCheckout(dir);
    return { name: pair.slice(0, i), dir, ...(version === undefined ? {} : { version }) };
  });
  if (new Set(gateways.map((g) => g.name)).size !== gateways.length) throw new Error('GATEWAYS: names must differ');
  return {
    gateways,
    durationS: num('DURATION_S', quick ? 2 : 6, 1, 120),
    rounds: Math.round(num('ROUNDS', quick ? 1 : 2, 1, 10)),
    workers: quick ? [1, 2] : [1, 2, 4],
    warmupS: quick ? 0.5 : 1,
    quick,
  };
}

/** One measured phase of one gateway start. */
interface Rec {
  gateway: string;
  round: number;
  workers: number;
  /** write-cpu: writes alone; lat-checks: 1 write loop beside wrk; checks: wrk alone; checks-writes: wrk + paced writes. */
  phase: 'write-cpu' | 'lat-checks' | 'checks' | 'checks-writes';
  inFlight: number;
  seconds: number;
  serverCpuSeconds: number;
  serverProcesses: number;
  serverThreads: number;
  /** This process's CPU (the write loops and the checker), and the rest of the machine's busy CPU, in cores. */
  clientCores: number;
  otherCores: number;
  writes?: WriteResult;
  wrk?: WrkResult;
  /** Derived: ms of server CPU per write (write-cpu), µs per request (checks, checks-writes). */
  cpuPerWriteMs?: number;
  cpuPerRequestUs?: number;
}

interface Start {
  gateway: string;
  round: number;
  workers: number;
  startSeconds: number;
  exitCode: number | null;
  warnLines: string[];
}

const failures: string[] = [];
const notes: string[] = [];
const recs: Rec[] = [];
const starts: Start[] = [];
const answers: Tally = newTally();

/** Runs `fn` and measures the gateway's CPU, this process's and the machine's around it. */
async function measure<T extends object>(gw: Gateway, fn: () => Promise<T>): Promise<T & Pick<Rec, 'seconds' | 'serverCpuSeconds' | 'serverProcesses' | 'serverThreads' | 'clientCores' | 'otherCores'>> {
  const c0 = gw.cpu();
  const b0 = machineBusySeconds();
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  const out = await fn();
  const seconds = (performance.now() - t0) / 1000;
  const c1 = gw.cpu();
  const u = process.cpuUsage(u0);
  const client = (u.user + u.system) / 1e6;
  const server = c1.seconds - c0.seconds;
  const other = machineBusySeconds() - b0 - server - client - ((out as { wrk?: WrkResult }).wrk?.cpuSeconds ?? 0);
  return { ...out, seconds, serverCpuSeconds: server, serverProcesses: c1.processes, serverThreads: c1.threads, clientCores: client / seconds, otherCores: Math.max(0, other) / seconds };
}

function noteWrites(what: string, w: WriteResult): void {
  if (w.failures > 0) failures.push(`${what}: ${w.failures} failed writes (${w.examples[0] ?? ''})`);
}

function noteWrk(what: string, w: WrkResult): void {
  if (w.non2xx + w.errors > 0) failures.push(`${what}: wrk saw ${w.non2xx} non-2xx answers and ${w.errors} socket errors or timeouts`);
}

const ms = (x: number | undefined): string => (x === undefined ? '-' : fmtMs(x));

async function writePhase(cfg: Config, gw: Gateway, model: Model, round: number, inFlight: number): Promise<void> {
  const what = `${gw.name} w=${gw.workers} ${inFlight} in flight`;
  const r = await measure(gw, async () => ({ writes: await runWrites(model, { loops: inFlight, durationS: cfg.durationS }).done }));
  noteWrites(what, r.writes);
  const rec: Rec = { gateway: gw.name, round, workers: gw.workers, phase: 'write-cpu', inFlight, ...r, cpuPerWriteMs: (1000 * r.serverCpuSeconds) / r.writes.writes };
  recs.push(rec);
  console.log(
    `  ${what}: ${r.writes.writes} writes (${(r.writes.writes / r.seconds).toFixed(0)}/s), server ${ms(rec.cpuPerWriteMs)} ms CPU/write, ` +
      `p50 ${ms(r.writes.latency.p50)} p99 ${ms(r.writes.latency.p99)} ms, client ${r.clientCores.toFixed(2)} other ${r.otherCores.toFixed(2)} cores`,
  );
}

/** wrk on has_permission with the checker beside it, and optionally a write loop (paced at `rate`/s, or back to back). */
async function checkPhase(cfg: Config, gw: Gateway, model: Model, round: number, phase: Rec['phase'], writeRate: number | 'max' | undefined): Promise<Rec> {
  const r = await measure(gw, async () => {
    const checker = startChecker(model, answers);
    const loops = writeRate === 'max' ? 1 : PACED_LOOPS;
    const writer = writeRate === undefined ? undefined : runWrites(model, { loops, durationS: cfg.durationS, ...(writeRate === 'max' ? {} : { rate: writeRate }) });
    try {
      const wrk = await runWrk(model, WRK_CONNECTIONS, cfg.durationS);
      writer?.stop();
      const writes = await writer?.done;
      return { wrk, ...(writes === undefined ? {} : { writes }) };
    } finally {
      writer?.stop();
      await checker.stop();
    }
  });
  const what = `${gw.name} w=${gw.workers} ${phase}`;
  noteWrk(what, r.wrk);
  if (r.writes !== undefined) noteWrites(what, r.writes);
  const requests = r.wrk.requests + (r.writes?.writes ?? 0);
  const rec: Rec = { gateway: gw.name, round, workers: gw.workers, phase, inFlight: writeRate === undefined ? 0 : writeRate === 'max' ? 1 : PACED_LOOPS, ...r, cpuPerRequestUs: (1e6 * r.serverCpuSeconds) / requests };
  recs.push(rec);
  const w = r.writes === undefined ? '' : `, ${r.writes.writes} writes (${(r.writes.writes / r.seconds).toFixed(0)}/s) p50 ${ms(r.writes.latency.p50)} p99 ${ms(r.writes.latency.p99)} ms`;
  console.log(
    `  ${what}: ${r.wrk.requests} checks (${r.wrk.rps.toFixed(0)}/s)${w}, server ${(rec.cpuPerRequestUs ?? NaN).toFixed(1)} µs CPU/request, ` +
      `wrk ${(r.wrk.cpuSeconds / r.seconds).toFixed(2)} client ${r.clientCores.toFixed(2)} other ${r.otherCores.toFixed(2)} cores`,
  );
  return rec;
}

/** Waits (at most QUIET_WAIT_S) until the machine is near idle: other jobs share it and disturb the figures. */
async function waitQuiet(): Promise<void> {
  const t0 = performance.now();
  let busy = NaN;
  for (let i = 0; i < QUIET_WAIT_S; i++) {
    const b0 = machineBusySeconds();
    await sleep(1_000);
    busy = machineBusySeconds() - b0;
    if (busy < QUIET_CORES) break;
  }
  const waited = (performance.now() - t0) / 1000;
  if (busy >= QUIET_CORES) console.log(`\n(the machine stayed busy, ${busy.toFixed(2)} cores of other work, after ${waited.toFixed(0)} s of waiting: going on)`);
  else if (waited > 1.5) console.log(`\n(waited ${waited.toFixed(0)} s for other work to calm down)`);
}

/** One start of one gateway: set up, warm up, the phases of this worker count, read back, stop. */
async function session(cfg: Config, g: Config['gateways'][number], workers: number, round: number): Promise<void> {
  const gw = await startGateway(g.name, g.dir, workers);
  const start: Start = { gateway: g.name, round, workers, startSeconds: gw.startSeconds, exitCode: null, warnLines: [] };
  starts.push(start);
  console.log(`\n${g.name} AUTH_WORKERS=${workers} (round ${round + 1}) on ${gw.baseUrl}, pid ${gw.pid}, started in ${gw.startSeconds.toFixed(1)} s`);
  const model = new Model(gw.port);
  try {
    await model.setup();
    await checkOnce(model, answers);
    const warm = await runWrites(model, { loops: 4, durationS: cfg.warmupS }).done;
    noteWrites(`${g.name} w=${workers} warm-up`, warm);
    if (workers === CHECK_WORKERS) noteWrk(`${g.name} warm-up`, await runWrk(model, WRK_CONNECTIONS, Math.max(1, Math.round(cfg.warmupS))));
    for (const n of IN_FLIGHT) await writePhase(cfg, gw, model, round, n);
    if (workers === CHECK_WORKERS) {
      await checkPhase(cfg, gw, model, round, 'lat-checks', 'max');
      const only = await checkPhase(cfg, gw, model, round, 'checks', undefined);
      await checkPhase(cfg, gw, model, round, 'checks-writes', only.wrk === undefined ? 1 : only.wrk.rps / WRITES_PER_CHECKS);
    }
    const before = answers.wrong;
    await verifyModel(model, answers, workers > 1 ? 3 : 1);
    await checkOnce(model, answers);
    if (answers.wrong > before) console.log(`  WRONG after the run: ${answers.examples.slice(-1)[0] ?? ''}`);
    if (!gw.running()) failures.push(`${g.name} w=${workers}: the gateway exited during the run`);
  } finally {
    start.exitCode = await gw.stop();
    start.warnLines = gw.output().split('\n').filter((l) => /"level":"?(warn|error|fatal)/.test(l)).slice(0, 5);
    if (start.warnLines.length > 0) notes.push(`${g.name} w=${workers} round ${round + 1} logged: ${start.warnLines[0] ?? ''}`);
    if (start.exitCode !== 0) notes.push(`${g.name} w=${workers} round ${round + 1}: exit code ${start.exitCode} after SIGTERM`);
  }
}

// ---- tables ----

const pick = (gateway: string, f: (r: Rec) => boolean): Rec[] => recs.filter((r) => r.gateway === gateway && f(r));

function printFigures(cfg: Config): { medians: Record<string, Record<string, number>>; byRoundRatios: Record<string, number[]> } {
  const names = cfg.gateways.map((g) => g.name);
  const first = names[0] as string;
  const last = names[names.length - 1] as string;
  const withRatio = names.length > 1;
  const ratioHead = withRatio ? [`${last}/${first}`] : [];
  const medians: Record<string, Record<string, number>> = {};
  const byRoundRatios: Record<string, number[]> = {};
  /** Per gateway: the median over rounds of `get` on the records `f` selects; then last/first. */
  const cells = (id: string, f: (r: Rec) => boolean, get: (r: Rec) => number | undefined, fmt: (x: number) => string): string[] => {
    const vals = names.map((n) => median(pick(n, f).map((r) => get(r) ?? NaN)));
    medians[id] = Object.fromEntries(names.map((n, i) => [n, vals[i] as number]));
    const ratio = (vals[vals.length - 1] as number) / (vals[0] as number);
    return [...vals.map(fmt), ...(withRatio ? [Number.isFinite(ratio) ? ratio.toFixed(2) : '-'] : [])];
  };
  const byRoundHead = withRatio && cfg.rounds > 1 ? ['by round'] : [];
  /** last/first within each round, `*` when either phase was disturbed by other work. */
  const byRound = (id: string, f: (r: Rec) => boolean, get: (r: Rec) => number | undefined): string[] => {
    if (byRoundHead.length === 0) return [];
    const out: string[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < cfg.rounds; round++) {
      const [a, b] = [pick(first, (r) => r.round === round && f(r))[0], pick(last, (r) => r.round === round && f(r))[0]];
      const x = a === undefined || b === undefined ? NaN : (get(b) ?? NaN) / (get(a) ?? NaN);
      ratios.push(x);
      const mark = (a?.otherCores ?? 0) > DISTURBED_CORES || (b?.otherCores ?? 0) > DISTURBED_CORES ? '*' : '';
      out.push(`${Number.isFinite(x) ? x.toFixed(2) : '-'}${mark}`);
    }
    byRoundRatios[id] = ratios;
    return [out.join(' ')];
  };
  const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');
  const f0 = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
  const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const rate = (r: Rec): number | undefined => (r.writes === undefined ? undefined : r.writes.writes / r.seconds);

  const t1 = [['workers, in flight', ...names.map((n) => `${n} ms/write`), ...ratioHead, ...byRoundHead, ...names.map((n) => `${n} writes/s`), ...ratioHead]];
  for (const w of cfg.workers) {
    for (const n of IN_FLIGHT) {
      const f = (r: Rec): boolean => r.phase === 'write-cpu' && r.workers === w && r.inFlight === n;
      t1.push([`w=${w}, ${n} in flight`, ...cells(`cpuPerWriteMs.w${w}.n${n}`, f, (r) => r.cpuPerWriteMs, f2), ...byRound(`cpuPerWriteMs.w${w}.n${n}`, f, (r) => r.cpuPerWriteMs), ...cells(`writesPerSecond.w${w}.n${n}`, f, rate, f0)]);
    }
  }
  const star = byRoundHead.length > 0 ? ` ('by round': ${last}/${first} within each round, * = disturbed by other work)` : '';
  console.log(`\n1. server CPU per write (ms, all processes and threads of the gateway; medians of ${cfg.rounds} round(s))${star}\n${table(t1)}`);

  const t2 = [['write latency', ...names.map((n) => `${n} p50`), ...ratioHead, ...names.map((n) => `${n} p99`), ...ratioHead, ...names.map((n) => `${n} checks/s`)]];
  const alone = (r: Rec): boolean => r.phase === 'write-cpu' && r.workers === CHECK_WORKERS && r.inFlight === 1;
  const loaded = (r: Rec): boolean => r.phase === 'lat-checks';
  t2.push([`alone (w=${CHECK_WORKERS}, 1 in flight)`, ...cells('latencyP50.alone', alone, (r) => r.writes?.latency.p50, ms), ...cells('latencyP99.alone', alone, (r) => r.writes?.latency.p99, ms), ...names.map(() => '')]);
  t2.push([
    `beside wrk -c${WRK_CONNECTIONS} checks`,
    ...cells('latencyP50.checks', loaded, (r) => r.writes?.latency.p50, ms),
    ...cells('latencyP99.checks', loaded, (r) => r.writes?.latency.p99, ms),
    ...cells('checksPerSecond.latChecks', loaded, (r) => r.wrk?.rps, f0).slice(0, names.length),
  ]);
  console.log(`\n2. write latency (ms, client-side, AUTH_WORKERS=${CHECK_WORKERS}, one write loop)\n${table(t2)}`);

  const t3 = [['has_permission, w=2', ...names.map((n) => `${n} µs/req`), ...ratioHead, ...byRoundHead, ...names.map((n) => `${n} checks/s`), ...names.map((n) => `${n} writes`), ...names.map((n) => `${n} w/100c`)]];
  for (const [label, phase] of [
    ['checks only', 'checks'],
    [`checks + 1 write per ${WRITES_PER_CHECKS}`, 'checks-writes'],
  ] as const) {
    const f = (r: Rec): boolean => r.phase === phase;
    t3.push([
      label,
      ...cells(`cpuPerRequestUs.${phase}`, f, (r) => r.cpuPerRequestUs, f1),
      ...byRound(`cpuPerRequestUs.${phase}`, f, (r) => r.cpuPerRequestUs),
      ...cells(`checksPerSecond.${phase}`, f, (r) => r.wrk?.rps, f0).slice(0, names.length),
      ...cells(`writes.${phase}`, f, (r) => r.writes?.writes ?? 0, f0).slice(0, names.length),
      ...cells(`writesPer100Checks.${phase}`, f, (r) => (100 * (r.writes?.writes ?? 0)) / (r.wrk?.requests ?? NaN), f2).slice(0, names.length),
    ]);
  }
  // Derived, per round: the mixed run's server CPU less its checks at the checks-only run's cost, per write.
  const implied = (r: Rec): number | undefined => {
    const only = recs.find((o) => o.phase === 'checks' && o.gateway === r.gateway && o.round === r.round);
    if (only?.cpuPerRequestUs === undefined || r.wrk === undefined || r.writes === undefined) return undefined;
    return (1000 * r.serverCpuSeconds - (only.cpuPerRequestUs / 1000) * r.wrk.requests) / r.writes.writes;
  };
  const imp = cells('impliedCpuPerWriteMs.checks-writes', (r) => r.phase === 'checks-writes', implied, f2);
  console.log(`\n3. server CPU per request under wrk -c${WRK_CONNECTIONS} checks (µs; with writes: all server CPU over checks + writes)\n${table(t3)}`);
  console.log(`   derived: ms of server CPU per write beside the checks (mixed CPU less its checks at the checks-only cost): ${names.map((n, i) => `${n} ${imp[i] ?? '-'}`).join(', ')}${withRatio ? `, ${last}/${first} ${imp[names.length] ?? '-'}` : ''}`);
  return { medians, byRoundRatios };
}

async function main(): Promise<number> {
  installCleanup();
  const cfg = loadConfig();
  const t0 = performance.now();
  // Each start costs about its phases, plus a few seconds to start, warm up and stop.
  const phases = cfg.workers.length * IN_FLIGHT.length + 3;
  const limitS = Math.max(600, 2.5 * cfg.rounds * cfg.gateways.length * (phases * (cfg.durationS + 2) + cfg.workers.length * (25 + QUIET_WAIT_S)));
  setTimeout(() => {
    console.error(`bench/writes.ts: over its time limit of ${Math.round(limitS)} s, stopping`);
    process.exit(1);
  }, limitS * 1000).unref();
  console.log(`bench/writes.ts: ${cfg.quick ? 'QUICK, ' : ''}${cfg.durationS} s per phase, ${cfg.rounds} round(s), workers ${cfg.workers.join(',')}; not pinned`);
  for (const g of cfg.gateways) console.log(`  ${g.name}: ${g.dir} (${g.version ?? 'not a git checkout'})`);
  for (let round = 0; round < cfg.rounds; round++) {
    for (const workers of cfg.workers) {
      for (const g of cfg.gateways) {
        await waitQuiet();
        await session(cfg, g, workers, round);
      }
    }
  }
  const { medians, byRoundRatios } = printFigures(cfg);
  if (answers.wrong > 0) failures.push(`${answers.wrong} wrong answers of ${answers.checked} checked (${answers.examples[0] ?? ''})`);
  const disturbed = recs.filter((r) => r.otherCores > DISTURBED_CORES);
  if (disturbed.length > 0) notes.push(`${disturbed.length} phase(s) ran beside more than ${DISTURBED_CORES} cores of other work: ${disturbed.map((r) => `${r.gateway} w=${r.workers} ${r.phase}/${r.inFlight} (${r.otherCores.toFixed(2)})`).join(', ')}`);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`\nanswers checked: ${answers.checked}, wrong: ${answers.wrong}; run took ${Math.round(seconds)} s`);
  for (const n of notes) console.log(`note: ${n}`);
  const report = { date: new Date().toISOString(), ok: failures.length === 0, failures, notes, seconds, config: { ...cfg, inFlight: IN_FLIGHT, checkWorkers: CHECK_WORKERS, wrkConnections: WRK_CONNECTIONS, writesPerChecks: WRITES_PER_CHECKS, pacedLoops: PACED_LOOPS }, medians, byRoundRatios, answers, starts, runs: recs };
  mkdirSync(resolve(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(RESULT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`results: ${RESULT_FILE}`);
  if (failures.length === 0) return 0;
  console.log('\nFAIL');
  for (const f of failures) console.log(`  ${f}`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('bench/writes.ts failed:', err instanceof Error ? err.message : err);
    console.log('FAIL');
    process.exit(1);
  },
);
