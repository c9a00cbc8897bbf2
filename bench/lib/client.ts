/**
 * The load generator's own process: `node --import tsx bench/lib/client.ts`, started (and pinned
 * with taskset to the client's CPUs) by bench/lib/load.ts with an IPC channel. It builds the same
 * deterministic request lists as the benchmark from the mix's recipe (the scenario's settings and
 * the data set's seed), runs autocannon for each job it is sent, checks the sampled answers
 * against the reference model, and sends back its counts, its latency histogram and its tally of
 * checked answers. Outside the benchmark's process, autocannon's event loop has a core of its own
 * and the benchmark's bookkeeping does not slow it down.
 *
 * Latency is taken per response with microsecond resolution into an HDR histogram (autocannon's
 * own rounds to milliseconds), leaving out each connection's first answer. At a fixed rate each
 * response is recorded with HdrHistogram's correction for coordinated omission: a response late by
 * k request intervals also stands for the k requests the connection could not send meanwhile.
 */
import autocannon from 'autocannon';
import * as hdr from 'hdr-histogram-js';
import { generate, type Dataset } from './dataset.ts';
import { mixOf, type Mix, type Recipe } from './requests.ts';
import type { DataShape } from './scenario.ts';
import type { Tally } from './verify.ts';

export interface ClientJob {
  urls: string[];
  /** Connections of this process, spread over the urls. */
  connections: number;
  /** Number of this process's first connection: which request lists it sends. */
  firstConnection: number;
  durationS: number;
  /** Requests per second of this process; absent: as fast as answered. */
  rate?: number;
  /** Expected µs between two requests of one connection at the fixed rate; 0 flat out. */
  intervalUs: number;
  /** Stop after this many requests instead of after durationS (a sample of answers to check). */
  amount?: number;
  /** Numbers the run (fresh write names per run). */
  run: number;
  recipe: Recipe;
}

export interface ClientReport {
  requests: number;
  durationS: number;
  non2xx: number;
  errors: number;
  errorKinds: Record<string, number>;
  /** Latency in µs, hdr-histogram-js compressed base64 (merged over processes by the caller). */
  histogram: string;
  tally: Tally;
}

/** A job to run, or the end of a running job before its duration (a load beside something of unknown length). */
export type ClientRequest = { id: number; job: ClientJob } | { stop: number };
export type ClientReply = { ready: true } | { id: number; report: ClientReport } | { id: number; error: string };

export const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });

const datasets = new Map<string, Dataset>();
/** The autocannon instances of each running job, to stop them on request; jobs asked to stop before they started. */
const running = new Map<number, autocannon.Instance[]>();
const stopped = new Set<number>();

function stopJob(id: number): void {
  stopped.add(id);
  for (const instance of running.get(id) ?? []) instance.stop();
}
const mixes = new Map<string, Mix>();

function dataset(shape: DataShape): Dataset {
  const key = JSON.stringify(shape);
  let ds = datasets.get(key);
  if (ds === undefined) datasets.set(key, (ds = generate(shape)));
  return ds;
}

function mixFor(recipe: Recipe): Mix {
  const key = JSON.stringify(recipe);
  let mix = mixes.get(key);
  if (mix === undefined) mixes.set(key, (mix = mixOf(recipe, dataset)));
  return mix;
}

function one(
  id: number,
  url: string,
  job: ClientJob,
  mix: Mix,
  share: number,
  first: number,
  h: hdr.Histogram,
  errorKinds: Map<string, number>,
): Promise<autocannon.Result> {
  let conn = first;
  const options: autocannon.Options = {
    url,
    connections: share,
    pipelining: 1,
    duration: job.durationS,
    timeout: 10,
    requests: mix.requests(first, job.run),
    setupClient: (client) => client.setRequests(mix.requests(conn++, job.run)),
    ...(job.amount === undefined ? {} : { amount: Math.max(share, Math.round((job.amount * share) / job.connections)) }),
    ...(job.rate === undefined ? {} : { overallRate: Math.max(1, Math.round((job.rate * share) / job.connections)) }),
  };
  return new Promise<autocannon.Result>((resolve, reject) => {
    const limitS = job.durationS + 30;
    const guard = setTimeout(() => {
      instance.stop();
      reject(new Error(`autocannon did not finish within ${limitS} s`));
    }, limitS * 1000);
    const instance = autocannon(options, (err: unknown, r) => {
      clearTimeout(guard);
      if (err !== null && err !== undefined) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(r);
    });
    running.set(id, [...(running.get(id) ?? []), instance]);
    if (stopped.has(id)) instance.stop();
    // A connection's first answer waited for every other connection to be set up: not a latency.
    const started = new WeakSet<object>();
    instance.on('reqError', (err: Error) => errorKinds.set(err.message, (errorKinds.get(err.message) ?? 0) + 1));
    instance.on('response', (client, _status, _bytes, responseTime) => {
      if (!started.has(client)) return void started.add(client);
      const us = Math.max(1, Math.round(responseTime * 1000));
      if (job.intervalUs > 0) h.recordValueWithExpectedInterval(us, job.intervalUs);
      else h.recordValue(us);
    });
  });
}

/** One job: autocannon against each url with its share of this process's connections, at once (until `stopJob(id)` when sooner). */
export async function runJob(id: number, job: ClientJob): Promise<ClientReport> {
  const mix = mixFor(job.recipe);
  const tally = mix.tally;
  [tally.checked, tally.wrong, tally.examples.length] = [0, 0, 0];
  const h = histogram();
  const errorKinds = new Map<string, number>();
  const { urls } = job;
  const share = (i: number): number => Math.floor(job.connections / urls.length) + (i < job.connections % urls.length ? 1 : 0);
  let results: autocannon.Result[];
  try {
    results = await Promise.all(
      urls.flatMap((url, i) => (share(i) === 0 ? [] : [one(id, url, job, mix, share(i), job.firstConnection + i * 1000, h, errorKinds)])),
    );
  } finally {
    running.delete(id);
    stopped.delete(id);
  }
  return {
    requests: results.reduce((n, r) => n + r.requests.total, 0),
    durationS: Math.max(...results.map((r) => r.duration)),
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
    errorKinds: Object.fromEntries(errorKinds),
    histogram: hdr.encodeIntoCompressedBase64(h),
    tally: { checked: tally.checked, wrong: tally.wrong, examples: [...tally.examples] },
  };
}

if (process.send !== undefined) {
  const send = (m: ClientReply): void => void process.send?.(m);
  process.on('message', (m: ClientRequest) => {
    if ('stop' in m) return stopJob(m.stop);
    runJob(m.id, m.job).then(
      (report) => send({ id: m.id, report }),
      (err: unknown) => send({ id: m.id, error: err instanceof Error ? err.message : String(err) }),
    );
  });
  // Never outlive the benchmark.
  process.on('disconnect', () => process.exit(0));
  send({ ready: true });
}
