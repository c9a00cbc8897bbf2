/**
 * A `load` run: the data set seeded, the gateway (or BENCH_TARGET) started, answers checked, then
 * rounds of the request mix (beside the minimal and the bare ceilings, in mirrored order, when the
 * scenario asks), then one run at 80% of the measured maximum for latency without coordinated
 * omission. The servers run on the server's CPUs, the load generator on the others (lib/cpus.ts).
 */
import { RbacClient } from '../../src/client/index.ts';
import { cpuSplit, describeSplit, type CpuSplit } from './cpus.ts';
import { generate, probes, type Dataset } from './dataset.ts';
import { attachTarget, startBare, startGateways, startMinimal, type Target } from './gateway.ts';
import { runLoad, type Latency, type RunFigures } from './load.ts';
import { delta, scrape, scrapeBuckets, serverLatency, type Buckets } from './metrics.ts';
import { buildMix, type Mix } from './requests.ts';
import { memberships, type Run, type RunSettings } from './scenario.ts';
import { median } from './stats.ts';
import { merge, newTally, pageUrls, record, type Expectation, type Tally } from './verify.ts';

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  cpuPerOpUs: number | null;
  serverCores: number | null;
  otherCores: number;
  rssMb: number | null;
  /** Median cores of the load generator. */
  clientCores?: number | null;
  /** Flat out, and the server's median cores below 0.9 per thread it could run: the figures are the load generator's. Null at a fixed rate or without the server's CPU. */
  clientBound?: boolean | null;
}

/**
 * One ceiling beside the gateway in the same rounds. `cpuRatios` are the gateway's CPU per request
 * over this server's, round by round; `saturated` says of each round whether both servers kept
 * their cores busy (a client-bound round measures the load generator, so its ratio is no result);
 * `cpuRatio` is the median of the saturated rounds' ratios (of all rounds at a fixed rate), null
 * when none was: "client-bound, no result".
 */
export interface Ceiling {
  label: 'minimal' | 'bare';
  figures: Figures;
  rounds: RunFigures[];
  rpsRatio: number;
  cpuRatio: number | null;
  cpuRatios: number[];
  saturated: boolean[];
  fixedRate?: FixedRate;
}

export interface RunResult {
  scenario: string;
  label: string;
  settings: RunSettings;
  memberships: number;
  connections: number;
  /** Medians over the measured rounds. */
  figures: Figures;
  rounds: RunFigures[];
  /**
   * The ceilings in the same rounds, the minimal server first (the headline ratio), then the bare
   * one with the contract's headers; per-round ratios, so a drift of the machine between rounds cancels.
   */
  ceilings?: Ceiling[];
  /** Where the servers and the load generator ran. */
  split?: CpuSplit;
  fixedRate?: FixedRate;
  /** Figures of the gateway's /metrics and of the special kinds (hydration, flood). */
  extra: Record<string, number>;
  /** A goal of the contract's set beside its figure (the transfer kind): reported met or not met, never a failure. */
  goals?: Goal[];
  correctness: Tally;
  failures: string[];
}

export interface Goal {
  what: string;
  value: number;
  unit: string;
  /** Met when `value` is below it. */
  limit: number;
  met: boolean;
}

/** `export of 1,000,000 memberships 6.2 s (goal < 10 s): met`. */
export function goalText(g: Goal): string {
  const digits = (x: number): string => (Number.isFinite(x) ? String(Number(x.toPrecision(3))) : '-');
  return `${g.what} ${digits(g.value)} ${g.unit} (goal < ${digits(g.limit)} ${g.unit}): ${g.met ? 'met' : 'NOT MET'}`;
}

export interface FixedRate {
  rate: number;
  achievedRps: number;
  latency: Latency;
  cpuPerOpUs: number | null;
}

export const FIGURES: ReadonlyArray<keyof Figures> = ['rps', 'p50', 'p99', 'p999', 'cpuPerOpUs', 'serverCores', 'otherCores', 'rssMb', 'clientCores'];

export function summarise(rounds: RunFigures[]): Figures {
  const m = (f: (r: RunFigures) => number | null | undefined): number | null => {
    const xs = rounds.map(f).filter((x): x is number => x !== null && x !== undefined);
    return xs.length === 0 ? null : median(xs);
  };
  const flagged = rounds.filter((r) => r.clientBound !== null && r.clientBound !== undefined);
  const cores = m((r) => (r.clientBound === null || r.clientBound === undefined ? null : r.serverCores));
  const needed = m((r) => r.saturatedAt);
  return {
    clientCores: m((r) => r.clientCores),
    clientBound: flagged.length === 0 || cores === null || needed === null ? null : cores < needed,
    rps: m((r) => r.rps) ?? NaN,
    p50: m((r) => r.latency.p50) ?? NaN,
    p99: m((r) => r.latency.p99) ?? NaN,
    p999: m((r) => r.latency.p999) ?? NaN,
    cpuPerOpUs: m((r) => r.cpuPerOpUs),
    serverCores: m((r) => r.serverCores),
    otherCores: m((r) => r.otherCores) ?? NaN,
    rssMb: m((r) => r.rssMb),
  };
}

export function print(label: string, what: string, r: RunFigures, failures?: string[]): void {
  const cpu = r.cpuPerOpUs === null ? '   - ' : r.cpuPerOpUs.toFixed(1);
  const bound = r.clientBound === true ? `  CLIENT-BOUND (server < ${r.saturatedAt?.toFixed(2)} cores)` : '';
  console.log(
    `  ${label.padEnd(22)} ${what.padEnd(9)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.latency.p50.toFixed(2)}  p99 ${r.latency.p99.toFixed(2)} ms` +
      `  ${cpu} µs cpu/op  server ${r.serverCores?.toFixed(2) ?? '-'} client ${r.clientCores?.toFixed(2) ?? '-'} other ${r.otherCores.toFixed(2)} cores` +
      `  non2xx ${r.non2xx} errors ${r.errors}${r.generator === 'wrk' ? '  (wrk)' : ''}${bound}`,
  );
  if (failures !== undefined && (r.non2xx > 0 || r.errors > 0))
    failures.push(
      `${label} ${what}: ${r.non2xx} non-2xx answers, ${r.errors} errors${r.errorKinds === undefined ? '' : ` (${JSON.stringify(r.errorKinds).slice(0, 200)})`}`,
    );
}

/**
 * The rounds' latency as the gateway's own request histogram saw it: p99 and the share answered
 * within 2 and 5 ms, without the load generator's delays (it shares this machine's cores).
 */
function serverFigures(before: Buckets, after: Buckets): Record<string, number> {
  const { count, quantileMs, within } = serverLatency(before, after, 0.99);
  if (count === 0) return {};
  console.log(
    `  server-side p99 ${quantileMs.toFixed(2)} ms over ${count} requests; within 2 ms ${pct(within.get(0.002))}, within 5 ms ${pct(within.get(0.005))}`,
  );
  return { serverP99Ms: quantileMs, serverWithin2msPct: 100 * (within.get(0.002) ?? NaN), serverWithin5msPct: 100 * (within.get(0.005) ?? NaN) };
}

const pct = (x: number | undefined): string => (x === undefined ? '-' : `${(100 * x).toFixed(2)}%`);

/** A ceiling's figures and the gateway's CPU ratios to it, round by round, the median over the saturated rounds. */
function ceilingFigures(label: Ceiling['label'], gateway: RunFigures[], rounds: RunFigures[]): Ceiling {
  const figures = summarise(rounds);
  const cpuRatios: number[] = [];
  const saturated: boolean[] = [];
  gateway.forEach((g, i) => {
    const c = rounds[i];
    if (g.cpuPerOpUs === null || c === undefined || c.cpuPerOpUs === null || !(c.cpuPerOpUs > 0)) return;
    cpuRatios.push(g.cpuPerOpUs / c.cpuPerOpUs);
    saturated.push(g.clientBound !== true && c.clientBound !== true);
  });
  const counted = cpuRatios.filter((_, i) => saturated[i] === true);
  const rps = summarise(gateway).rps;
  return { label, figures, rounds, rpsRatio: rps / figures.rps, cpuRatio: counted.length === 0 ? null : median(counted), cpuRatios, saturated };
}

/** The gateway's CPU ratio to a ceiling as the report says it: the median of saturated rounds, or why there is none. */
export function ratioText(c: Ceiling | undefined, x = '×'): string {
  if (c === undefined || c.cpuRatios.length === 0) return '';
  if (c.cpuRatio === null) return 'client-bound, no result';
  const left = c.saturated.filter((s) => !s).length;
  return `${c.cpuRatio.toFixed(2)}${x}${left > 0 ? ` (${c.saturated.length - left} of ${c.saturated.length} rounds)` : ''}`;
}

interface CeilingServer {
  label: Ceiling['label'];
  target: Target;
  mix: Mix;
}

/**
 * The ceilings: the minimal server (a fixed body, nothing else) and the bare one (the gateway's
 * bodies and the contract's headers), both answering has_permission, on the server's CPUs.
 */
async function ceilingsOf(target: Target, ds: Dataset, settings: RunSettings, cpus: string | undefined): Promise<CeilingServer[]> {
  const [yes, no] = [probes(ds, 1, 0, 5)[0], probes(ds, 1, 0.9, 6)[0]];
  const body = async (p: typeof yes): Promise<string> => {
    const res = await fetch(`${target.baseUrls[0]}/api/has_permission/${encodeURIComponent(p?.user ?? '')}/${encodeURIComponent(p?.permission ?? '')}`, {
      headers: { authorization: `Bearer ${target.keys[0]}` },
    });
    return res.text();
  };
  const [bodyTrue, bodyFalse] = [await body(yes), await body(no)];
  const exp: Expectation = { strict: false, revision: target.revision, revisionAtLeast: false };
  const out: CeilingServer[] = [];
  try {
    for (const label of ['minimal', 'bare'] as const) {
      const t = label === 'minimal' ? await startMinimal(bodyTrue, cpus) : await startBare(bodyTrue, bodyFalse, target.revision, cpus);
      out.push({
        label,
        target: t,
        mix: buildMix({ ds, settings: { ...settings, routes: { has_permission: 1 } }, keys: t.keys, pages: [], expectation: exp }),
      });
    }
  } catch (err) {
    for (const c of out) await c.target.stop();
    throw err;
  }
  return out;
}

/**
 * Waits for the client's first answer: its graph is loaded then (a million memberships take tens
 * of seconds), so the rounds measure the steady state; the cold start is `cold-hydration`'s.
 */
async function firstAnswer(client: RbacClient, ds: Dataset): Promise<void> {
  const started = performance.now();
  const res = await client.hasPermission(ds.users[0] ?? '', ds.permissions[0] ?? '');
  if (res.status !== 200) throw new Error(`first has_permission: HTTP ${res.status} ${res.error ?? ''}`);
  const ms = performance.now() - started;
  if (ms > 1000) console.log(`  first answer (graph loaded) after ${(ms / 1000).toFixed(1)} s`);
}

async function prepare(run: Run, ds: Dataset, split: CpuSplit): Promise<{ target: Target; mix: Mix; setup: Tally }> {
  const { settings } = run;
  const url = process.env.BENCH_TARGET;
  const target = url === undefined ? await startGateways(run.label, settings.gateway, ds, split.server) : await attachTarget(url, ds);
  const setup = newTally();
  try {
    const client = new RbacClient({ baseUrl: target.baseUrls[0] ?? '', key: target.keys[0] ?? '' });
    const pages = (settings.routes.which_users_can ?? 0) > 0 ? await pageUrls(client, ds, settings.pageSize, setup) : [];
    await firstAnswer(client, ds);
    await schedule(client, ds, settings.schedules, setup);
    const exp: Expectation = { strict: true, revision: target.revision, revisionAtLeast: (settings.routes.write ?? 0) > 0 };
    return { target, mix: buildMix({ ds, settings, keys: target.keys, pages, expectation: exp }), setup };
  } catch (err) {
    await target.stop();
    throw err;
  }
}

/** `count` workflow schedules every second, on the data set's first permissions (see RunSettings.schedules). */
async function schedule(client: RbacClient, ds: Dataset, count: number, setup: Tally): Promise<void> {
  for (const workflow of ds.permissions.slice(0, count)) {
    const res = await client.scheduleWorkflow(workflow, { interval_seconds: 1 });
    record(setup, res.status === 201 ? undefined : `schedule ${workflow}: status ${res.status} ${res.error ?? ''}`);
  }
}

/** The gateway's split: its threads on the first cores, the load generator on the rest (lib/cpus.ts). */
export function splitOf(settings: RunSettings): CpuSplit {
  const split = cpuSplit(settings.gateway.workers * settings.gateway.instances);
  console.log(`  ${describeSplit(split)}; flat-out rounds by ${settings.client}`);
  return split;
}

type Server = [label: string, target: Target, mix: Mix];

/** Rounds of every server, in mirrored order (A B C, C B A): a drift of the machine weighs on all alike. */
async function rounds(
  servers: Server[],
  settings: RunSettings,
  go: (s: Server, what: string, durationS: number) => Promise<RunFigures>,
): Promise<Map<string, RunFigures[]>> {
  const records = new Map<string, RunFigures[]>(servers.map(([l]) => [l, []]));
  if (settings.warmupS > 0) for (const s of servers) await go(s, 'warm-up', settings.warmupS);
  for (let round = 0; round < settings.rounds; round++) {
    for (const s of round % 2 === 0 ? servers : [...servers].reverse()) records.get(s[0])?.push(await go(s, `round ${round + 1}`, settings.durationS));
  }
  return records;
}

export async function measureLoad(run: Run): Promise<RunResult> {
  const { settings } = run;
  const ds = generate(settings.data);
  const split = splitOf(settings);
  const { target, mix, setup } = await prepare(run, ds, split);
  const failures: string[] = [];
  const windows = ds.windows.active + ds.windows.pending;
  if (windows > 0)
    console.log(`  windows on ${windows} grants and memberships: ${ds.windows.active} active now, ${ds.windows.pending} pending (their edges answer false)`);
  const result: RunResult = {
    scenario: run.scenario,
    label: run.label,
    settings,
    memberships: memberships(settings.data),
    connections: settings.connections,
    figures: summarise([]),
    rounds: [],
    extra: { ...(windows > 0 ? { windowsActive: ds.windows.active, windowsPending: ds.windows.pending } : {}), ...mix.figures?.() },
    correctness: newTally(),
    failures,
    split,
  };
  let ceilings: CeilingServer[] = [];
  try {
    if (settings.ceiling && process.env.BENCH_TARGET === undefined) ceilings = await ceilingsOf(target, ds, settings, split.server);
    const servers: Server[] = [...ceilings.map((c): Server => [c.label, c.target, c.mix]), [run.label, target, mix]];
    const before = await scrape(target.metricsUrls);
    let n = 0;
    const go = async ([label, t, m]: Server, what: string, durationS: number): Promise<RunFigures> => {
      const spec = { target: t, mix: m, connections: settings.connections, durationS, run: n++, split, generator: settings.client };
      const r = await runLoad(settings.rate > 0 ? { ...spec, rate: settings.rate } : spec);
      print(label, what, r, failures);
      return r;
    };
    const bucketsBefore = target.metricsUrls.length > 0 ? await scrapeBuckets(target.metricsUrls) : undefined;
    const records = await rounds(servers, settings, go);
    if (bucketsBefore !== undefined) Object.assign(result.extra, serverFigures(bucketsBefore, await scrapeBuckets(target.metricsUrls)));
    result.rounds = records.get(run.label) ?? [];
    result.figures = summarise(result.rounds);
    if (ceilings.length > 0) result.ceilings = ceilings.map((c) => ceilingFigures(c.label, result.rounds, records.get(c.label) ?? []));
    for (const c of result.ceilings ?? []) console.log(`  gateway CPU per request over the ${c.label} server's: ${ratioText(c)}`);
    if (result.figures.clientBound === true)
      console.log(`  CLIENT-BOUND: the gateway kept below ${result.rounds[0]?.saturatedAt?.toFixed(2)} cores busy; these figures are the load generator's`);
    for (const r of result.rounds) if (r.requests === 0) failures.push(`${run.label}: a round completed no request in ${settings.durationS} s`);
    if (settings.fixedRate) {
      // The same rate for the ceilings, so the p99s are at the same load.
      const rate = Math.max(1, Math.round(0.8 * result.figures.rps));
      const atRate = async (label: string, t: Target, m: Mix): Promise<FixedRate> => {
        const r = await runLoad({ target: t, mix: m, connections: settings.connections, durationS: settings.durationS, rate, run: n++, split });
        print(label, `@${rate}/s`, r, failures);
        return { rate, achievedRps: r.rps, latency: r.latency, cpuPerOpUs: r.cpuPerOpUs };
      };
      result.fixedRate = await atRate(run.label, target, mix);
      for (const [i, c] of ceilings.entries()) {
        const figures = result.ceilings?.[i];
        if (figures !== undefined) figures.fixedRate = await atRate(c.label, c.target, c.mix);
      }
    }
    const after = await scrape(target.metricsUrls);
    if (before !== undefined && after !== undefined) Object.assign(result.extra, delta(before, after));
    if (settings.schedules > 0 && !((result.extra.workflowRuns ?? 0) > 0)) failures.push(`${run.label}: no workflow run was counted beside the load`);
  } finally {
    for (const c of ceilings) await c.target.stop();
    await target.stop();
  }
  merge(result.correctness, setup);
  merge(result.correctness, mix.tally);
  if (result.correctness.wrong > 0)
    failures.push(
      `${run.label}: ${result.correctness.wrong} wrong answers of ${result.correctness.checked} checked (${result.correctness.examples.join('; ')})`,
    );
  if (result.correctness.checked === 0) failures.push(`${run.label}: no answer was checked`);
  return result;
}
