/**
 * One measured run: autocannon against the target (its connections spread over the instances)
 * as fast as they answer, or at a fixed rate; the target's CPU read from /proc before and after.
 * Latency is taken per response with microsecond resolution into an HDR histogram (autocannon's
 * own rounds to milliseconds), leaving out each connection's first answer. At a fixed rate each
 * response is recorded with HdrHistogram's correction for coordinated omission: a response late by
 * k request intervals also stands for the k requests the connection could not send meanwhile.
 */
import autocannon from 'autocannon';
import * as hdr from 'hdr-histogram-js';
import type { Target } from './gateway.ts';
import { systemBusySeconds } from './procs.ts';
import type { Mix } from './requests.ts';

/** Milliseconds. */
export interface Latency {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

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
  /** Busy cores of the machine beyond the server and this process: other work, a noisy figure. */
  otherCores: number;
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
}

const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });

function one(url: string, spec: LoadSpec, connections: number, offset: number, h: hdr.Histogram, errorKinds: Map<string, number>): Promise<autocannon.Result> {
  let conn = offset;
  // Expected µs between two requests of one connection at the fixed rate.
  const interval = spec.rate === undefined ? 0 : Math.round((spec.connections / spec.rate) * 1e6);
  const options: autocannon.Options = {
    url,
    connections,
    pipelining: 1,
    duration: spec.durationS,
    timeout: 10,
    requests: spec.mix.requests(offset, spec.run),
    setupClient: (client) => client.setRequests(spec.mix.requests(conn++, spec.run)),
    ...(spec.rate === undefined ? {} : { overallRate: Math.max(1, Math.round((spec.rate * connections) / spec.connections)) }),
  };
  return new Promise<autocannon.Result>((resolve, reject) => {
    const guard = setTimeout(
      () => {
        instance.stop();
        reject(new Error(`autocannon did not finish within ${spec.durationS + 30} s`));
      },
      (spec.durationS + 30) * 1000,
    );
    const instance = autocannon(options, (err: unknown, r) => {
      clearTimeout(guard);
      if (err !== null && err !== undefined) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(r);
    });
    // A connection's first answer waited for every other connection to be set up: not a latency.
    const started = new WeakSet<object>();
    instance.on('reqError', (err: Error) => errorKinds.set(err.message, (errorKinds.get(err.message) ?? 0) + 1));
    instance.on('response', (client, _status, _bytes, responseTime) => {
      if (!started.has(client)) return void started.add(client);
      const us = Math.max(1, Math.round(responseTime * 1000));
      if (interval > 0) h.recordValueWithExpectedInterval(us, interval);
      else h.recordValue(us);
    });
  });
}

export async function runLoad(spec: LoadSpec): Promise<RunFigures> {
  const { target } = spec;
  const h = histogram();
  const errorKinds = new Map<string, number>();
  const urls = target.baseUrls;
  const busy0 = systemBusySeconds();
  const self0 = process.cpuUsage();
  const cpu0 = target.cpuSeconds();
  const lines0 = target.lines();
  const share = (i: number): number => Math.floor(spec.connections / urls.length) + (i < spec.connections % urls.length ? 1 : 0);
  const results = await Promise.all(urls.map((url, i) => one(url, spec, share(i), i * 1000, h, errorKinds)));
  const cpu1 = target.cpuSeconds();
  const self = process.cpuUsage(self0);
  const busy = systemBusySeconds() - busy0;
  const requests = results.reduce((n, r) => n + r.requests.total, 0);
  const durationS = Math.max(...results.map((r) => r.duration));
  const serverCpu = cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0;
  const at = (p: number): number => h.getValueAtPercentile(p) / 1000;
  return {
    requests,
    durationS,
    rps: requests / durationS,
    latency: { p50: at(50), p99: at(99), p999: at(99.9), max: h.maxValue / 1000 },
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
    cpuPerOpUs: serverCpu === undefined || requests === 0 ? null : (serverCpu / requests) * 1e6,
    serverCores: serverCpu === undefined ? null : serverCpu / durationS,
    otherCores: Math.max(0, busy - (serverCpu ?? 0) - (self.user + self.system) / 1e6) / durationS,
    rssMb: target.rssMb() ?? null,
    logLines: target.lines() - lines0,
    ...(errorKinds.size === 0 ? {} : { errorKinds: Object.fromEntries(errorKinds) }),
  };
}
