/**
 * A `load` run: the data set seeded, the gateway (or BENCH_TARGET) started, answers checked, then
 * rounds of the request mix (beside the bare ceiling, in mirrored order, when the scenario asks),
 * then one run at 80% of the measured maximum for latency without coordinated omission.
 */
import { RbacClient } from '../../src/client/index.ts';
import { generate, probes, type Dataset } from './dataset.ts';
import { attachTarget, startBare, startGateways, type Target } from './gateway.ts';
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
   * The bare server in the same rounds. `cpuRatio` is the median of the per-round ratios (each
   * round's gateway over the bare server beside it), so a drift of the machine between rounds cancels.
   */
  ceiling?: { figures: Figures; rounds: RunFigures[]; rpsRatio: number; cpuRatio: number | null; cpuRatios: number[]; fixedRate?: FixedRate };
  fixedRate?: FixedRate;
  /** Figures of the gateway's /metrics and of the special kinds (hydration, flood). */
  extra: Record<string, number>;
  correctness: Tally;
  failures: string[];
}

export interface FixedRate {
  rate: number;
  achievedRps: number;
  latency: Latency;
  cpuPerOpUs: number | null;
}

export const FIGURES: ReadonlyArray<keyof Figures> = ['rps', 'p50', 'p99', 'p999', 'cpuPerOpUs', 'serverCores', 'otherCores', 'rssMb'];

export function summarise(rounds: RunFigures[]): Figures {
  const m = (f: (r: RunFigures) => number | null): number | null => {
    const xs = rounds.map(f).filter((x): x is number => x !== null);
    return xs.length === 0 ? null : median(xs);
  };
  return {
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
  console.log(
    `  ${label.padEnd(22)} ${what.padEnd(9)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.latency.p50.toFixed(2)}  p99 ${r.latency.p99.toFixed(2)} ms` +
      `  ${cpu} µs cpu/op  server ${r.serverCores?.toFixed(2) ?? '-'} other ${r.otherCores.toFixed(2)} cores  non2xx ${r.non2xx} errors ${r.errors}`,
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

/** The bare server's figures and the gateway's CPU ratios to it, round by round. */
function ceilingFigures(gateway: RunFigures[], bare: RunFigures[]): NonNullable<RunResult['ceiling']> {
  const figures = summarise(bare);
  const cpuRatios: number[] = [];
  gateway.forEach((g, i) => {
    const b = bare[i]?.cpuPerOpUs;
    if (g.cpuPerOpUs !== null && b !== undefined && b !== null && b > 0) cpuRatios.push(g.cpuPerOpUs / b);
  });
  const rps = summarise(gateway).rps;
  return { figures, rounds: bare, rpsRatio: rps / figures.rps, cpuRatio: cpuRatios.length === 0 ? null : median(cpuRatios), cpuRatios };
}

/** The ceiling: the bare server, answering has_permission with bodies captured from the gateway. */
async function ceilingOf(target: Target, ds: Dataset, settings: RunSettings): Promise<{ bare: Target; mix: Mix }> {
  const [yes, no] = [probes(ds, 1, 0, 5)[0], probes(ds, 1, 0.9, 6)[0]];
  const body = async (p: typeof yes): Promise<string> => {
    const res = await fetch(`${target.baseUrls[0]}/api/has_permission/${encodeURIComponent(p?.user ?? '')}/${encodeURIComponent(p?.permission ?? '')}`, {
      headers: { authorization: `Bearer ${target.keys[0]}` },
    });
    return res.text();
  };
  const bare = await startBare(await body(yes), await body(no), target.revision);
  const exp: Expectation = { strict: false, revision: target.revision, revisionAtLeast: false };
  const mix = buildMix({ ds, settings: { ...settings, routes: { has_permission: 1 } }, keys: bare.keys, pages: [], expectation: exp });
  return { bare, mix };
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

async function prepare(run: Run, ds: Dataset): Promise<{ target: Target; mix: Mix; setup: Tally }> {
  const { settings } = run;
  const url = process.env.BENCH_TARGET;
  const target = url === undefined ? await startGateways(run.label, settings.gateway, ds) : await attachTarget(url, ds);
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

export async function measureLoad(run: Run): Promise<RunResult> {
  const { settings } = run;
  const ds = generate(settings.data);
  const { target, mix, setup } = await prepare(run, ds);
  const failures: string[] = [];
  const result: RunResult = {
    scenario: run.scenario,
    label: run.label,
    settings,
    memberships: memberships(settings.data),
    connections: settings.connections,
    figures: summarise([]),
    rounds: [],
    extra: {},
    correctness: newTally(),
    failures,
  };
  let ceiling: { bare: Target; mix: Mix } | undefined;
  try {
    if (settings.ceiling && process.env.BENCH_TARGET === undefined) ceiling = await ceilingOf(target, ds, settings);
    const servers: Array<[string, Target, Mix]> = [[run.label, target, mix]];
    if (ceiling !== undefined) servers.unshift(['bare', ceiling.bare, ceiling.mix]);
    const before = await scrape(target.metricsUrls);
    const records = new Map<string, RunFigures[]>(servers.map(([l]) => [l, []]));
    let n = 0;
    const go = async ([label, t, m]: [string, Target, Mix], what: string, durationS: number): Promise<RunFigures> => {
      const r = await runLoad({
        target: t,
        mix: m,
        connections: settings.connections,
        durationS,
        run: n++,
        ...(settings.rate > 0 ? { rate: settings.rate } : {}),
      });
      print(label, what, r, failures);
      return r;
    };
    if (settings.warmupS > 0) for (const s of servers) await go(s, 'warm-up', settings.warmupS);
    const bucketsBefore = target.metricsUrls.length > 0 ? await scrapeBuckets(target.metricsUrls) : undefined;
    for (let round = 0; round < settings.rounds; round++) {
      // Mirrored order (A B, B A): a drift of the machine weighs on both servers alike.
      for (const s of round % 2 === 0 ? servers : [...servers].reverse()) records.get(s[0])?.push(await go(s, `round ${round + 1}`, settings.durationS));
    }
    if (bucketsBefore !== undefined) Object.assign(result.extra, serverFigures(bucketsBefore, await scrapeBuckets(target.metricsUrls)));
    result.rounds = records.get(run.label) ?? [];
    result.figures = summarise(result.rounds);
    if (ceiling !== undefined) result.ceiling = ceilingFigures(result.rounds, records.get('bare') ?? []);
    for (const r of result.rounds) if (r.requests === 0) failures.push(`${run.label}: a round completed no request in ${settings.durationS} s`);
    if (settings.fixedRate) {
      // The same rate for the bare server, so the two p99s are at the same load.
      const rate = Math.max(1, Math.round(0.8 * result.figures.rps));
      const atRate = async (label: string, t: Target, m: Mix): Promise<FixedRate> => {
        const r = await runLoad({ target: t, mix: m, connections: settings.connections, durationS: settings.durationS, rate, run: n++ });
        print(label, `@${rate}/s`, r, failures);
        return { rate, achievedRps: r.rps, latency: r.latency, cpuPerOpUs: r.cpuPerOpUs };
      };
      result.fixedRate = await atRate(run.label, target, mix);
      if (ceiling !== undefined && result.ceiling !== undefined) result.ceiling.fixedRate = await atRate('bare', ceiling.bare, ceiling.mix);
    }
    const after = await scrape(target.metricsUrls);
    if (before !== undefined && after !== undefined) Object.assign(result.extra, delta(before, after));
    if (settings.schedules > 0 && !((result.extra.workflowRuns ?? 0) > 0)) failures.push(`${run.label}: no workflow run was counted beside the load`);
  } finally {
    await ceiling?.bare.stop();
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
