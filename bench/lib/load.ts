/**
 * One measured run: the load generator against the target (its connections spread over the
 * instances) as fast as they answer, or at a fixed rate; the target's CPU read from /proc before
 * and after. The load generator runs in processes of its own (bench/lib/client.ts, autocannon),
 * pinned to the client's CPUs, or is wrk (bench/lib/wrk.ts) for flat-out runs with `--client wrk`.
 * A flat-out run whose server stayed below 0.9 of a core per busy thread it could use is marked
 * client-bound: it measured the load generator, not the server.
 */
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { ROOT } from '../../support/launcher.ts';
import { histogram, type ClientJob, type ClientReply, type ClientReport, type ClientRequest } from './client.ts';
import type { CpuSplit } from './cpus.ts';
import type { Target } from './gateway.ts';
import { spawnChild, systemBusySeconds, treeCpuSeconds, type Child } from './procs.ts';
import { orderFree, type Mix } from './requests.ts';
import { merge } from './verify.ts';
import { driveWrk } from './wrk.ts';

/** Milliseconds. */
export interface Latency {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

export type Generator = 'autocannon' | 'wrk';

/** A server is saturated at this share of a core per busy thread it can use. */
export const SATURATED = 0.9;

export interface RunFigures {
  requests: number;
  durationS: number;
  rps: number;
  latency: Latency;
  non2xx: number;
  errors: number;
  /** Server CPU (user + system of all its processes and threads) per request, µs; null when unknown. */
  cpuPerOpUs: number | null;
  serverCores: number | null;
  /** Busy cores of the machine beyond the server, the load generator and the benchmark: other work, a noisy figure. */
  otherCores: number;
  /** Cores the load generator's processes used. */
  clientCores?: number;
  /** What sent the load. */
  generator?: Generator;
  /** Cores the server had to keep busy to count as saturated (0.9 per busy thread it could use). */
  saturatedAt?: number;
  /** Flat out and the server below `saturatedAt`: the load generator was the limit. Null at a fixed rate or without the server's CPU. */
  clientBound?: boolean | null;
  rssMb: number | null;
  logLines: number;
  /** The first socket errors, by message, when there were any. */
  errorKinds?: Record<string, number>;
}

export interface LoadSpec {
  target: Target;
  mix: Mix;
  connections: number;
  durationS: number;
  /** Requests per second over all connections; absent: as fast as answered. */
  rate?: number;
  /** Numbers the run (fresh write names per run). */
  run: number;
  /** Where the server and the load generator run. */
  split: CpuSplit;
  /** wrk for flat-out runs of mixes it can send (no writes, no per-request keys); autocannon otherwise. */
  generator?: Generator;
  /**
   * Ends the run when it settles, before `durationS` (then a cap): a load beside something whose
   * length is not known beforehand, such as an import (autocannon only; it stops within a second).
   */
  until?: Promise<unknown>;
}

/** What one load generator run gives back, before the server's side is added. */
export interface Drive {
  requests: number;
  durationS: number;
  latency: Latency;
  non2xx: number;
  errors: number;
  errorKinds: Record<string, number>;
  /** CPU seconds the load generator used. */
  clientSeconds: number;
  generator: Generator;
}

interface ClientProc {
  child: Child;
  cpus: string | undefined;
  busy: boolean;
  ready: Promise<void>;
  waiting: Map<number, { resolve: (r: ClientReport) => void; reject: (e: Error) => void }>;
}

const pool: ClientProc[] = [];
let jobIds = 0;

function spawnClient(cpus: string | undefined): ClientProc {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  const child = spawnChild('load generator', process.execPath, ['--import', 'tsx', join('bench', 'lib', 'client.ts')], { cwd: ROOT, env, cpus, ipc: true });
  const waiting: ClientProc['waiting'] = new Map();
  let isReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (isReady = resolve));
  child.proc.on('message', (m: ClientReply) => {
    if ('ready' in m) return isReady();
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if ('error' in m) w?.reject(new Error(`load generator: ${m.error}`));
    else w?.resolve(m.report);
  });
  void child.exited.then((code) => {
    const gone = new Error(`load generator exited (code ${code}):\n${child.output().slice(-2000)}`);
    for (const w of waiting.values()) w.reject(gone);
    waiting.clear();
    isReady();
    pool.splice(pool.indexOf(proc), 1);
  });
  const proc: ClientProc = { child, cpus, busy: false, ready, waiting };
  pool.push(proc);
  return proc;
}

/** `n` idle load generator processes on `cpus` (started when there are not enough; they stay for the next runs). */
async function acquire(n: number, cpus: string | undefined): Promise<ClientProc[]> {
  const got = pool.filter((p) => !p.busy && p.cpus === cpus && p.child.running()).slice(0, n);
  while (got.length < n) got.push(spawnClient(cpus));
  for (const p of got) p.busy = true;
  await Promise.all(got.map((p) => p.ready));
  for (const p of got) if (!p.child.running()) throw new Error(`load generator exited before it was ready:\n${p.child.output().slice(-2000)}`);
  return got;
}

function send(p: ClientProc, job: ClientJob, until?: Promise<unknown>): Promise<ClientReport> {
  const id = ++jobIds;
  const stop = (): void => {
    if (p.child.proc.connected) p.child.proc.send({ stop: id } satisfies ClientRequest);
  };
  void until?.then(stop, stop);
  return new Promise<ClientReport>((resolve, reject) => {
    p.waiting.set(id, { resolve, reject });
    p.child.proc.send({ id, job } satisfies ClientRequest);
  });
}

/** autocannon in `split.clientProcs` processes (at most one per connection), each with its share of the connections and of the rate. */
async function driveAutocannon(spec: LoadSpec, amount?: number): Promise<Drive> {
  const n = Math.max(1, Math.min(spec.split.clientProcs, spec.connections));
  const procs = await acquire(n, spec.split.client);
  const cpu0 = procs.map((p) => treeCpuSeconds(p.child.pid));
  const share = (i: number): number => Math.floor(spec.connections / n) + (i < spec.connections % n ? 1 : 0);
  // Expected µs between two requests of one connection at the fixed rate.
  const intervalUs = spec.rate === undefined ? 0 : Math.round((spec.connections / spec.rate) * 1e6);
  try {
    const reports = await Promise.all(
      procs.map((p, i) =>
        send(
          p,
          {
            urls: spec.target.baseUrls,
            connections: share(i),
            firstConnection: i * 10_000,
            durationS: spec.durationS,
            intervalUs,
            run: spec.run,
            recipe: spec.mix.recipe,
            ...(spec.rate === undefined ? {} : { rate: (spec.rate * share(i)) / spec.connections }),
            ...(amount === undefined ? {} : { amount: Math.ceil((amount * share(i)) / spec.connections) }),
          },
          spec.until,
        ),
      ),
    );
    const clientSeconds = procs.reduce((s, p, i) => s + treeCpuSeconds(p.child.pid) - (cpu0[i] ?? 0), 0);
    const h = histogram();
    for (const r of reports) h.add(hdr.decodeFromCompressedBase64(r.histogram));
    const errorKinds: Record<string, number> = {};
    for (const r of reports) {
      merge(spec.mix.tally, r.tally);
      for (const [k, v] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + v;
    }
    const at = (p: number): number => h.getValueAtPercentile(p) / 1000;
    return {
      requests: reports.reduce((s, r) => s + r.requests, 0),
      durationS: Math.max(...reports.map((r) => r.durationS)),
      latency: { p50: at(50), p99: at(99), p999: at(99.9), max: h.maxValue / 1000 },
      non2xx: reports.reduce((s, r) => s + r.non2xx, 0),
      errors: reports.reduce((s, r) => s + r.errors, 0),
      errorKinds,
      clientSeconds,
      generator: 'autocannon',
    };
  } finally {
    for (const p of procs) p.busy = false;
  }
}

/**
 * A sample of the mix's requests sent through autocannon and checked by the usual judges: wrk
 * checks no answer, so its runs are framed by these (the checks land in the mix's tally).
 */
async function verifySample(spec: LoadSpec): Promise<void> {
  const { rate: _rate, ...flatOut } = spec;
  const sample: LoadSpec = { ...flatOut, connections: Math.min(spec.connections, 4), durationS: 30 };
  const d = await driveAutocannon(sample, 2_048);
  if (d.non2xx > 0 || d.errors > 0)
    merge(spec.mix.tally, { checked: 1, wrong: 1, examples: [`answers sampled beside wrk: ${d.non2xx} non-2xx, ${d.errors} errors`] });
}

export async function runLoad(spec: LoadSpec): Promise<RunFigures> {
  const { target } = spec;
  const wrk = spec.rate === undefined && spec.until === undefined && spec.generator === 'wrk' && orderFree(spec.mix.recipe) && target.baseUrls.length === 1;
  if (wrk) await verifySample(spec);
  const busy0 = systemBusySeconds();
  const wall0 = performance.now();
  const self0 = process.cpuUsage();
  const cpu0 = target.cpuSeconds();
  const lines0 = target.lines();
  const d = wrk ? await driveWrk(spec) : await driveAutocannon(spec);
  const cpu1 = target.cpuSeconds();
  const self = process.cpuUsage(self0);
  const busy = systemBusySeconds() - busy0;
  const wallS = (performance.now() - wall0) / 1000;
  if (wrk) await verifySample(spec);
  const serverCpu = cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0;
  const serverCores = serverCpu === undefined ? null : serverCpu / d.durationS;
  const saturatedAt = SATURATED * Math.min(target.threads, spec.split.serverCores);
  return {
    requests: d.requests,
    durationS: d.durationS,
    rps: d.requests / d.durationS,
    latency: d.latency,
    non2xx: d.non2xx,
    errors: d.errors,
    cpuPerOpUs: serverCpu === undefined || d.requests === 0 ? null : (serverCpu / d.requests) * 1e6,
    serverCores,
    otherCores: Math.max(0, busy - (serverCpu ?? 0) - d.clientSeconds - (self.user + self.system) / 1e6) / wallS,
    clientCores: d.clientSeconds / d.durationS,
    generator: d.generator,
    saturatedAt,
    clientBound: spec.rate !== undefined || serverCores === null ? null : serverCores < saturatedAt,
    rssMb: target.rssMb() ?? null,
    logLines: target.lines() - lines0,
    ...(Object.keys(d.errorKinds).length === 0 ? {} : { errorKinds: d.errorKinds }),
  };
}
