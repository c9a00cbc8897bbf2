/**
 * Step 2 of `npm run bench:workflows` on one gateway: has_permission beside the runs. Phase A has
 * no schedule (deleted before it); phase B has the schedule running every second (interval 1,
 * webhook on, steady runs: nobody's answer changes). In both, the ticker (workflow-ticker.ts)
 * moves the revision twice a second, so that each run of B reads all the holders again, as on a
 * tenant that is being written to; its writes cost the worker the same in A and B (they are not
 * counted as checks). Rounds alternate A B, B A, A B ... so that a drift of the machine in time
 * weighs on both alike; each round is one run of bench/phases.ts's runOne
 * (wrk with its parallel checker, or autocannon checking one answer in N) with the CPU measured
 * on a view of the gateway whose pid is the HTTP worker's: CPU per check is the worker's CPU
 * (its threads and descendants) over the requests it completed. Measured beside it, from /proc:
 * the primary's own CPU (the scheduler: its event loop and its store thread), the whole gateway's,
 * the worker's user/system split and context switches, PostgreSQL's server processes (where its
 * runs are made) and the rest of the machine's; from the primary's metrics: the runs made and
 * their summed duration.
 *
 * A round of A with a run fails the run; a round of B with fewer runs than its seconds less 2 is
 * noted (runs falling behind the interval under load are slow, not wrong).
 *
 * Entering B recreates the schedule and waits for its first run (every holder, as after any
 * creation) and two steady ones to be delivered before the load starts; leaving B lists and
 * checks every run of that schedule (workflow-check.ts) before deleting it.
 */
import { runOne, type PhaseContext, type RunRecord, type Tool } from './phases.ts';
import { sleep, systemBusySeconds, treeCpuSeconds } from './procs.ts';
import type { Server } from './servers.ts';
import { median } from './stats.ts';
import { cpuSplit, ownCpuSeconds, schedule, scrapeScheduler, secondsBetween, splitDelta, ticksOfName, unschedule, workerPids, workerView, type CpuSplit } from './workflow-gateway.ts';
import type { StepContext } from './workflow-runs.ts';
import { startTicker } from './workflow-ticker.ts';

/** `other cores` above this (near 0.05 on a quiet machine) means other work shared the machine during a round. */
export const DISTURBED_CORES = 0.3;

export type Mode = 'A' | 'B';

export interface AbRound {
  round: number;
  mode: Mode;
  warmup: boolean;
  /** runOne's record; its server figures are the worker's. */
  run: RunRecord;
  workerCpuSeconds: number;
  /** Worker CPU per completed request, µs. */
  cpuPerCheckUs: number;
  primaryCores: number;
  gatewayCores: number;
  /** PostgreSQL's server processes (the runs' queries on that store; also anyone else's), in cores. */
  postgresCores: number;
  /** Busy CPU of the machine beyond the gateway, PostgreSQL and the load side (wrk, this process), in cores. */
  otherCores: number;
  runs: number;
  /** Summed duration of those runs (metric), s. */
  runSeconds: number;
  deliveries: number;
  /** The worker process alone (not its esbuild helper): user and system CPU, context switches. */
  worker: CpuSplit;
}

export interface AbPair {
  a: number;
  b: number;
  /** B over A: worker CPU per check, throughput. */
  cpuPerCheck: number;
  throughput: number;
  /** Neither round shared the machine with other work (other cores at most DISTURBED_CORES). */
  quiet: boolean;
}

export interface AbResult {
  tool: Tool;
  rounds: AbRound[];
  pairs: AbPair[];
  /** Medians over the pairs of B/A. */
  cpuPerCheckRatio: number;
  throughputRatio: number;
  /** The median of B/A cpu per check over the pairs whose rounds both ran on a quiet machine; NaN when none did. */
  quietCpuPerCheckRatio: number;
  /** Largest over smallest cpu per check among the A rounds: how far rounds of one mode differ (the noise floor). */
  aSpread: number;
  median: Record<Mode, { cpuPerCheckUs: number; rps: number; primaryCores: number; runsPerSecond: number; runMs: number }>;
}

export interface AbContext {
  step: StepContext;
  gateway: Server;
  phase: PhaseContext;
  tool: Tool;
  /** Measured rounds: an even number, pairs of A and B. */
  rounds: number;
  /** Where observations that do not fail the run go (runs falling behind). */
  notes: string[];
}

/** A B, B A, A B, ...: every pair holds one of each, and the order flips from pair to pair. */
export const roundOrder = (rounds: number): Mode[] => Array.from({ length: rounds }, (_, i) => ((i % 2 === 0) === (Math.floor(i / 2) % 2 === 0) ? 'A' : 'B'));

/** Sets the gateway in `mode`; `scheduled` says where it is. */
async function enter(c: AbContext, mode: Mode, scheduled: boolean, label: string): Promise<boolean> {
  const s = c.step;
  if (mode === 'A' && scheduled) {
    await s.audit.check(label);
    await unschedule(s.client);
    await sleep(1_000); // a run or delivery under way finishes
  }
  if (mode === 'B' && !scheduled) {
    const m0 = await scrapeScheduler(s.metricsUrl);
    const d0 = s.receiver.deliveries().length;
    s.receiver.trust(await schedule(s.client, 1, s.receiver.url));
    const deadline = Date.now() + 20_000;
    // The first run (every holder) and two steady ones, delivered: then the schedule is in its steady state.
    while ((await scrapeScheduler(s.metricsUrl)).runsOk - m0.runsOk < 3 || s.receiver.deliveries().length - d0 < 3) {
      if (Date.now() > deadline) throw new Error('the recreated schedule did not make and deliver three runs within 20 s');
      await sleep(100);
    }
  }
  return mode === 'B';
}

/** One round in `mode` (already entered): runOne on the worker's view, with the primary and the metrics around it. */
async function measureRound(c: AbContext, round: number, mode: Mode, warmup: boolean, worker: number): Promise<AbRound> {
  const s = c.step;
  const primary = c.gateway.child.pid;
  const [m0, d0] = [await scrapeScheduler(s.metricsUrl), s.receiver.deliveries().length];
  const [p0, g0, busy0, w0, pg0] = [ownCpuSeconds(primary), treeCpuSeconds(primary), systemBusySeconds(), cpuSplit(worker), ticksOfName('postgres')];
  const ticker = startTicker(s.client, s.model, s.tickMs, s.failures);
  // Answers carry the revision they reflect: with the ticker on, at least the one of the round's start.
  const phase: PhaseContext = { ...c.phase, revision: s.model.revision, revisionAtLeast: s.tickMs > 0 };
  let run: RunRecord;
  try {
    run = await runOne(c.tool, workerView(c.gateway, worker, `worker/${mode}`), round, phase, warmup);
  } finally {
    await ticker.stop();
  }
  const [p1, g1, busy1, w1, pg1] = [ownCpuSeconds(primary), treeCpuSeconds(primary), systemBusySeconds(), cpuSplit(worker), ticksOfName('postgres')];
  const m1 = await scrapeScheduler(s.metricsUrl);
  const seconds = run.durationS;
  const gateway = g1 - g0;
  const load = run.loadCores * seconds;
  const postgres = secondsBetween(pg0, pg1);
  return {
    round,
    mode,
    warmup,
    run,
    workerCpuSeconds: run.serverCpuSeconds,
    cpuPerCheckUs: run.cpuPerRequestUs,
    primaryCores: (p1 - p0) / seconds,
    gatewayCores: gateway / seconds,
    postgresCores: postgres / seconds,
    otherCores: Math.max(0, busy1 - busy0 - gateway - load - postgres) / seconds,
    runs: m1.runsOk - m0.runsOk,
    runSeconds: m1.durationSum - m0.durationSum,
    deliveries: s.receiver.deliveries().length - d0,
    worker: splitDelta(w0, w1),
  };
}

function problemsOf(r: AbRound): string[] {
  const what = `${r.warmup ? 'warm-up' : `round ${r.round + 1}`} (${r.mode})`;
  const out: string[] = [];
  const x = r.run;
  if (x.wrong > 0) out.push(`${what}: ${x.wrong} wrong answers of ${x.checked} checked (${x.examples[0] ?? ''})`);
  if (x.checked === 0) out.push(`${what}: no answer was checked`);
  if (x.non2xx > 0) out.push(`${what}: ${x.non2xx} non-2xx responses`);
  if (x.errors + x.timeouts > 0) out.push(`${what}: ${x.errors} socket errors, ${x.timeouts} timeouts`);
  if (r.mode === 'A' && r.runs > 0) out.push(`${what}: ${r.runs} workflow runs made without a schedule`);
  return out;
}

/** A B round with fewer runs than its seconds less 2: the runs fell behind the interval (slow, not wrong: noted). */
function behind(r: AbRound): string | undefined {
  const seconds = r.run.durationS;
  if (r.mode !== 'B' || r.runs >= seconds - 2) return undefined;
  return `round ${r.round + 1} (B): ${r.runs} runs in ${seconds.toFixed(1)} s of a schedule every second (each took ${((1000 * r.runSeconds) / Math.max(1, r.runs)).toFixed(0)} ms): runs fell behind`;
}

const spreadOf = (xs: number[]): number => (xs.length < 2 ? NaN : Math.max(...xs) / Math.min(...xs));

function summarise(tool: Tool, rounds: AbRound[]): AbResult {
  const measured = rounds.filter((r) => !r.warmup);
  const pairs: AbPair[] = [];
  for (let i = 0; i + 1 < measured.length; i += 2) {
    const two = [measured[i], measured[i + 1]] as AbRound[];
    const a = two.find((r) => r.mode === 'A');
    const b = two.find((r) => r.mode === 'B');
    if (a === undefined || b === undefined) continue;
    pairs.push({ a: a.round, b: b.round, cpuPerCheck: b.cpuPerCheckUs / a.cpuPerCheckUs, throughput: b.run.rps / a.run.rps, quiet: Math.max(a.otherCores, b.otherCores) <= DISTURBED_CORES });
  }
  const of = (mode: Mode): AbResult['median'][Mode] => {
    const rs = measured.filter((r) => r.mode === mode);
    const m = (f: (r: AbRound) => number): number => median(rs.map(f));
    return {
      cpuPerCheckUs: m((r) => r.cpuPerCheckUs),
      rps: m((r) => r.run.rps),
      primaryCores: m((r) => r.primaryCores),
      runsPerSecond: m((r) => r.runs / r.run.durationS),
      runMs: m((r) => (r.runs > 0 ? (1000 * r.runSeconds) / r.runs : NaN)),
    };
  };
  return {
    tool,
    rounds,
    pairs,
    cpuPerCheckRatio: median(pairs.map((p) => p.cpuPerCheck)),
    throughputRatio: median(pairs.map((p) => p.throughput)),
    quietCpuPerCheckRatio: median(pairs.filter((p) => p.quiet).map((p) => p.cpuPerCheck)),
    aSpread: spreadOf(measured.filter((r) => r.mode === 'A').map((r) => r.cpuPerCheckUs)),
    median: { A: of('A'), B: of('B') },
  };
}

/**
 * A warm-up (phase A) and `c.rounds` measured rounds; the schedule is deleted at the end. Wrong
 * answers, failed requests, runs without a schedule and runs that fall behind go to the failures.
 */
export async function abRounds(c: AbContext, scheduledAtStart: boolean): Promise<AbResult> {
  const workers = workerPids(c.gateway.child.pid);
  const worker = workers[0];
  if (workers.length !== 1 || worker === undefined) throw new Error(`expected one HTTP worker process, found ${workers.length} (${workers.join(', ')})`);
  console.log(`  worker pid ${worker} (CPU per check: its process and threads), primary pid ${c.gateway.child.pid} (reported apart: the scheduler)`);
  const rounds: AbRound[] = [];
  let scheduled = await enter(c, 'A', scheduledAtStart, 'step 1');
  const plan: Array<[Mode, boolean]> = [['A', true], ...roundOrder(c.rounds).map((m): [Mode, boolean] => [m, false])];
  let round = 0;
  for (const [mode, warmup] of plan) {
    scheduled = await enter(c, mode, scheduled, `step 2 before round ${round + 1}`);
    const r = await measureRound(c, warmup ? 0 : round, mode, warmup, worker);
    rounds.push(r);
    console.log(
      `    ${mode}: worker ${r.cpuPerCheckUs.toFixed(2)} µs/check, primary ${r.primaryCores.toFixed(3)} cores, gateway ${r.gatewayCores.toFixed(2)}, ` +
        `postgres ${r.postgresCores.toFixed(2)}, other ${r.otherCores.toFixed(2)}; ${r.runs} runs (${r.runs > 0 ? ((1000 * r.runSeconds) / r.runs).toFixed(0) : '-'} ms each), ${r.deliveries} deliveries`,
    );
    c.step.failures.push(...problemsOf(r));
    const late = behind(r);
    if (late !== undefined) c.notes.push(late);
    if (!warmup) round++;
  }
  if (scheduled) {
    await sleep(1_500);
    await c.step.audit.check(`step 2 after round ${round}`);
    await unschedule(c.step.client);
  }
  const now = workerPids(c.gateway.child.pid);
  if (now.join() !== workers.join()) c.step.failures.push(`the HTTP worker was replaced during step 2 (pids ${workers.join(', ')} then ${now.join(', ')})`);
  return summarise(c.tool, rounds);
}
