/**
 * The measured phase: for each tool, a warm-up per server, then rounds in mirrored order (A B C,
 * C B A, ...; with two servers ABBA) so that drift of this small machine hits every server alike.
 * Every run records throughput, latency, errors, wrong answers and the CPU each side used.
 */
import { RbacClient } from '../src/client/index.ts';
import type { Probe } from './dataset.ts';
import { runAutocannon } from './load-autocannon.ts';
import { runWrk, type WrkWrites } from './load-wrk.ts';
import { systemBusySeconds, treeCpuSeconds } from './procs.ts';
import type { Server } from './servers.ts';
import type { Latency, Summary } from './stats.ts';
import { startChecker, type Expectation, type Tally } from './verify.ts';

export type Tool = 'autocannon' | 'wrk';

export interface RunRecord extends Summary {
  tool: Tool;
  target: Server['name'];
  round: number;
  warmup: boolean;
  requests: number;
  durationS: number;
  latency: Latency;
  non2xx: number;
  errors: number;
  timeouts: number;
  checked: number;
  wrong: number;
  examples: string[];
  /** Lines the server wrote to stdout/stderr during the run (a log line per request shows here). */
  serverLogLines: number;
  /** The gateway's AUTH_HTTP_ENGINE, when it was started with one. */
  engine?: string;
  /** `token`: the load carried a signed token instead of the client key. */
  credential?: 'token';
  /** `on`: the gateway counted its requests for GET /metrics (AUTH_METRICS_PORT set). */
  metrics?: 'on';
  /** CPU seconds of the server's processes and threads, sampled before and after the run. */
  serverCpuSeconds: number;
  /** Requests the server completed: the load generator's and the parallel checker's. */
  served: number;
  /** serverCpuSeconds / served, in microseconds: steadier than req/s on a shared machine. */
  cpuPerRequestUs: number;
  /** PhaseContext.tag of the run, when it had one. */
  tag?: string;
}

export interface PhaseContext {
  key: string;
  probes: Probe[];
  revision: number;
  connections: number;
  durationS: number;
  warmupS: number;
  rounds: number;
  verifyEvery: number;
  checkerRate: number;
  loadCpus: string | undefined;
  cwd: string;
  /** Answers may carry a revision above `revision` (writes run during the load). */
  revisionAtLeast?: boolean;
  /** Printed after the server's name and kept in the record (`w2`, `mixed`). */
  tag?: string;
  /** wrk only: writes in its request stream (see {@link WrkWrites}). */
  writes?: WrkWrites;
  /** wrk only: work started beside each run (after the checker, before wrk) and stopped right after it. */
  alongside?: () => { stop(): Promise<void> };
}

interface Outcome {
  requests: number;
  durationS: number;
  rps: number;
  latency: Latency;
  non2xx: number;
  errors: number;
  timeouts: number;
  tally: Tally;
  loadCpuSeconds: number;
  /** Requests the server answered, the checker's included. */
  served: number;
}

/** The bearer credential of the requests to `server`. */
const credentialOf = (server: Server, ctx: PhaseContext): string => server.token ?? ctx.key;

function expectation(server: Server, ctx: PhaseContext): Expectation {
  const exp: Expectation = { strict: server.name === 'gateway', revision: ctx.revision };
  if (ctx.revisionAtLeast === true) exp.revisionAtLeast = true;
  return exp;
}

async function autocannonOnce(server: Server, ctx: PhaseContext, durationS: number): Promise<Outcome> {
  const before = process.cpuUsage();
  const out = await runAutocannon({
    url: server.baseUrl,
    authorization: `Bearer ${credentialOf(server, ctx)}`,
    probes: ctx.probes,
    connections: ctx.connections,
    durationS,
    verifyEvery: ctx.verifyEvery,
    expectation: expectation(server, ctx),
  });
  const used = process.cpuUsage(before);
  // autocannon's own requests carry the checks: nothing else reaches the server.
  return { ...out, loadCpuSeconds: (used.user + used.system) / 1e6, served: out.requests };
}

async function wrkOnce(server: Server, ctx: PhaseContext, durationS: number): Promise<Outcome> {
  const client = new RbacClient({ baseUrl: server.baseUrl, key: credentialOf(server, ctx) });
  const before = process.cpuUsage();
  const checker = startChecker(client, ctx.probes, expectation(server, ctx), ctx.checkerRate);
  let beside;
  let out;
  try {
    beside = ctx.alongside?.();
    out = await runWrk({
      url: server.baseUrl,
      authorization: `Bearer ${credentialOf(server, ctx)}`,
      probes: ctx.probes,
      connections: ctx.connections,
      durationS,
      cpus: ctx.loadCpus,
      cwd: ctx.cwd,
      ...(ctx.writes === undefined ? {} : { writes: ctx.writes }),
    });
  } catch (err) {
    await checker.stop();
    await beside?.stop();
    throw err;
  }
  const tally = await checker.stop();
  await beside?.stop();
  const used = process.cpuUsage(before);
  // wrk itself plus this process (the checker and the work alongside).
  return { ...out, tally, loadCpuSeconds: out.cpuSeconds + (used.user + used.system) / 1e6, served: out.requests + tally.checked };
}

/** One run of `tool` against `server` (a warm-up when `warmup`), printed as it ends. */
export async function runOne(tool: Tool, server: Server, round: number, ctx: PhaseContext, warmup: boolean): Promise<RunRecord> {
  const durationS = warmup ? ctx.warmupS : ctx.durationS;
  const busy0 = systemBusySeconds();
  const cpu0 = treeCpuSeconds(server.child.pid);
  const lines0 = server.child.lines();
  const out = tool === 'autocannon' ? await autocannonOnce(server, ctx, durationS) : await wrkOnce(server, ctx, durationS);
  const serverCpu = treeCpuSeconds(server.child.pid) - cpu0;
  const busy = systemBusySeconds() - busy0;
  const rec: RunRecord = {
    tool,
    target: server.name,
    round,
    warmup,
    requests: out.requests,
    durationS: out.durationS,
    rps: out.rps,
    latency: out.latency,
    non2xx: out.non2xx,
    errors: out.errors,
    timeouts: out.timeouts,
    checked: out.tally.checked,
    wrong: out.tally.wrong,
    examples: out.tally.examples,
    serverCores: serverCpu / out.durationS,
    loadCores: out.loadCpuSeconds / out.durationS,
    otherCores: Math.max(0, busy - serverCpu - out.loadCpuSeconds) / out.durationS,
    serverLogLines: server.child.lines() - lines0,
    serverCpuSeconds: serverCpu,
    served: out.served,
    cpuPerRequestUs: out.served > 0 ? (serverCpu / out.served) * 1e6 : NaN,
  };
  if (ctx.tag !== undefined) rec.tag = ctx.tag;
  if (server.engine !== undefined) rec.engine = server.engine;
  if (server.token !== undefined) rec.credential = 'token';
  if (server.metricsUrl !== undefined) rec.metrics = 'on';
  const name = ctx.tag === undefined ? server.label : `${server.label}/${ctx.tag}`;
  const label = warmup ? 'warm-up' : `round ${round + 1}`;
  console.log(
    `  ${tool.padEnd(10)} ${name.padEnd(11)} ${label.padEnd(8)} ${Math.round(rec.rps).toString().padStart(7)} req/s` +
      `  p50 ${rec.latency.p50.toFixed(2)}  p99 ${rec.latency.p99.toFixed(2)}  p99.9 ${rec.latency.p999.toFixed(2)} ms` +
      `  cpu server ${rec.serverCores.toFixed(2)} load ${rec.loadCores.toFixed(2)} other ${rec.otherCores.toFixed(2)}` +
      `  ${rec.cpuPerRequestUs.toFixed(1)} µs/req` +
      `  checked ${rec.checked} wrong ${rec.wrong} non2xx ${rec.non2xx} errors ${rec.errors + rec.timeouts}`,
  );
  for (const e of rec.examples) console.log(`    WRONG: ${e}`);
  return rec;
}

/** Warm-up then ABBA rounds of one tool over both servers. */
export function runPhase(tool: Tool, bare: Server, gateway: Server, ctx: PhaseContext): Promise<RunRecord[]> {
  return runRounds(tool, [bare, gateway], ctx);
}

/**
 * A warm-up per server, then rounds of one tool over every server back to back, the order
 * mirrored every other round (A B C, C B A): a drift that is linear in time then weighs on every
 * server alike over each pair of rounds; the servers of one round run within seconds of each
 * other, which makes ratios taken within a round the fair comparison.
 */
export async function runRounds(tool: Tool, servers: Server[], ctx: PhaseContext): Promise<RunRecord[]> {
  const records: RunRecord[] = [];
  if (ctx.warmupS > 0) {
    for (const s of servers) records.push(await runOne(tool, s, 0, ctx, true));
  }
  for (let round = 0; round < ctx.rounds; round++) {
    const order = round % 2 === 0 ? servers : [...servers].reverse();
    for (const s of order) records.push(await runOne(tool, s, round, ctx, false));
  }
  return records;
}
