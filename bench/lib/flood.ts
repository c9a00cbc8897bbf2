/**
 * The `flood` kind: has_permission with a fresh random key on every request. Unknown keys must cost
 * no hydration, no cache entry, no more CPU than a known key's check, and no latency of a real
 * client beyond what the same load of known keys would cost it.
 *
 * 1. Rounds, interleaved in mirrored order at the same connections: the real client alone, then
 *    the unknown keys alone. CPU per request of each; their ratio per round, then the median.
 * 2. The real client alone on a few connections (its quiet p99), then beside the flood at full
 *    speed (hydrations, cache entries and evictions from /metrics), then beside the same load of
 *    its own known keys: the p99 any full-speed neighbour would cost it on these two cores.
 */
import { generate } from './dataset.ts';
import { startGateways, type Target } from './gateway.ts';
import { runLoad, type RunFigures } from './load.ts';
import type { CpuSplit } from './cpus.ts';
import { print, splitOf, summarise, type RunResult } from './measure.ts';
import { delta, scrape } from './metrics.ts';
import { buildMix, floodMix, type Mix } from './requests.ts';
import type { Run } from './scenario.ts';
import { emptyResult } from './special.ts';
import { median } from './stats.ts';
import { merge, type Expectation } from './verify.ts';

/** Connections of the real client beside the flood. */
const REAL_CONNECTIONS = 8;

/** Known against unknown keys, alone, round by round: the median of the per-round CPU ratios. */
async function cpuRounds(
  run: Run,
  split: CpuSplit,
  target: Target,
  known: Mix,
  unknown: Mix,
  failures: string[],
): Promise<{ known: RunFigures[]; unknown: RunFigures[]; ratio: number }> {
  const s = run.settings;
  const rows: Array<[string, Mix, RunFigures[]]> = [
    ['known key', known, []],
    ['unknown keys', unknown, []],
  ];
  let n = 10;
  for (let round = 0; round < s.rounds; round++) {
    for (const [label, mix, out] of round % 2 === 0 ? rows : [...rows].reverse()) {
      const r = await runLoad({ target, mix, connections: s.connections, durationS: s.durationS, run: n++, split, generator: s.client });
      print(`${run.label} ${label}`, `round ${round + 1}`, r, failures);
      out.push(r);
    }
  }
  const [k, u] = [rows[0]?.[2] ?? [], rows[1]?.[2] ?? []];
  const ratios = u.flatMap((x, i) => {
    const base = k[i]?.cpuPerOpUs;
    return x.cpuPerOpUs !== null && base !== undefined && base !== null && base > 0 ? [x.cpuPerOpUs / base] : [];
  });
  return { known: k, unknown: u, ratio: ratios.length === 0 ? NaN : median(ratios) };
}

/** The real client on REAL_CONNECTIONS beside `load` on the scenario's connections, at once. */
async function beside(run: Run, split: CpuSplit, target: Target, real: Mix, load: Mix, what: string, failures: string[]): Promise<RunFigures> {
  const s = run.settings;
  const [, r] = await Promise.all([
    runLoad({ target, mix: load, connections: s.connections, durationS: s.durationS, run: 20, split, generator: s.client }),
    runLoad({ target, mix: real, connections: REAL_CONNECTIONS, durationS: s.durationS, run: 21, split }),
  ]);
  // The server's CPU went to both loads: no per-request figure of the real client's own.
  print(`${run.label} real`, what, { ...r, cpuPerOpUs: null }, failures);
  return r;
}

export async function measureFlood(run: Run): Promise<RunResult> {
  const s = run.settings;
  const ds = generate(s.data);
  const split = splitOf(s);
  const target = await startGateways(run.label, { ...s.gateway, metrics: true }, ds, split.server);
  const result = emptyResult(run);
  const exp: Expectation = { strict: true, revision: target.revision, revisionAtLeast: false };
  const mixes = [0, 1].map(() => buildMix({ ds, settings: s, keys: target.keys, pages: [], expectation: exp }));
  const [real, knownLoad] = [mixes[0] as Mix, mixes[1] as Mix];
  const flood = floodMix(s.verifyEvery);
  try {
    const cpu = await cpuRounds(run, split, target, knownLoad, flood, result.failures);
    const alone = await runLoad({ target, mix: real, connections: REAL_CONNECTIONS, durationS: s.durationS, run: 0, split });
    print(`${run.label} real`, 'alone', alone, result.failures);
    const before = await scrape(target.metricsUrls);
    const underFlood = await beside(run, split, target, real, flood, 'flood', result.failures);
    const after = await scrape(target.metricsUrls);
    const underKnown = await beside(run, split, target, real, knownLoad, 'known', result.failures);
    const d = before !== undefined && after !== undefined ? delta(before, after) : undefined;
    result.rounds = cpu.unknown;
    result.figures = summarise(cpu.unknown);
    result.extra = {
      unknownCpuUs: result.figures.cpuPerOpUs ?? NaN,
      knownCpuUs: summarise(cpu.known).cpuPerOpUs ?? NaN,
      unknownOverKnownCpuRatio: cpu.ratio,
      realP99AloneMs: alone.latency.p99,
      realP99UnderFloodMs: underFlood.latency.p99,
      realP99UnderKnownLoadMs: underKnown.latency.p99,
      hydrations: d?.hydrations ?? NaN,
      cacheClients: d?.cacheClients ?? NaN,
      cacheEvictions: d?.cacheEvictions ?? NaN,
    };
    console.log(
      `    unknown keys: ${cpu.ratio.toFixed(2)}× a known key's CPU per request (median of rounds); ${d?.hydrations} hydrations, ${d?.cacheClients} cached clients, ` +
        `${d?.cacheEvictions} evictions; real client p99 ${alone.latency.p99.toFixed(2)} ms alone, ${underFlood.latency.p99.toFixed(2)} ms beside the flood, ` +
        `${underKnown.latency.p99.toFixed(2)} ms beside the same load of known keys`,
    );
  } finally {
    await target.stop();
  }
  for (const t of [real.tally, knownLoad.tally, flood.tally]) merge(result.correctness, t);
  if (result.correctness.wrong > 0)
    result.failures.push(`${run.label}: ${result.correctness.wrong} wrong answers (${result.correctness.examples.slice(0, 3).join('; ')})`);
  return result;
}
