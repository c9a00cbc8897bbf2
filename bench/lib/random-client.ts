/**
 * The `clients` kind's last part: has_permission where each request names one of the cached
 * clients at random (uniform), against the same requests naming one client. Both loads are
 * request lists of the same length, the same paths in the same order, differing only in the key;
 * rounds interleaved in mirrored order on the same connections, flat out; server CPU per request
 * of each, and the median of the per-round ratios. No request may hydrate: every client is cached.
 */
import type { CpuSplit } from './cpus.ts';
import type { Probe } from './dataset.ts';
import type { Target } from './gateway.ts';
import { runLoad, type RunFigures } from './load.ts';
import { print, summarise, type RunResult } from './measure.ts';
import { scrape } from './metrics.ts';
import type { Mix } from './requests.ts';
import type { Run } from './scenario.ts';
import { median } from './stats.ts';
import { keyedMix } from './keyed-mix.ts';
import { merge, type Expectation } from './verify.ts';

export async function randomClientRounds(
  run: Run,
  target: Target,
  sample: Probe[],
  split: CpuSplit,
  result: RunResult,
): Promise<{ random: RunFigures[]; one: RunFigures[] }> {
  const s = run.settings;
  const keys = target.keys;
  const exp: Expectation = { strict: true, revision: target.revision, revisionAtLeast: false };
  const rows: Array<[string, Mix, RunFigures[]]> = [
    ['one client', keyedMix({ kind: 'keyed', sample, keys, random: false, verifyEvery: s.verifyEvery, expectation: exp }), []],
    ['random client', keyedMix({ kind: 'keyed', sample, keys, random: true, verifyEvery: s.verifyEvery, expectation: exp }), []],
  ];
  const before = await scrape(target.metricsUrls);
  let n = 0;
  const go = (mix: Mix, durationS: number): Promise<RunFigures> => runLoad({ target, mix, connections: s.connections, durationS, run: n++, split });
  if (s.warmupS > 0) for (const [label, mix] of rows) print(`${run.label} ${label}`, 'warm-up', await go(mix, s.warmupS), result.failures);
  for (let round = 0; round < s.rounds; round++) {
    for (const [label, mix, out] of round % 2 === 0 ? rows : [...rows].reverse()) {
      const r = await go(mix, s.durationS);
      print(`${run.label} ${label}`, `round ${round + 1}`, r, result.failures);
      out.push(r);
    }
  }
  const after = await scrape(target.metricsUrls);
  const [one, random] = [rows[0]?.[2] ?? [], rows[1]?.[2] ?? []];
  const ratios = random.flatMap((x, i) => {
    const base = one[i]?.cpuPerOpUs;
    return x.cpuPerOpUs !== null && base !== undefined && base !== null && base > 0 ? [x.cpuPerOpUs / base] : [];
  });
  const hydrations = before !== undefined && after !== undefined ? after.hydrations - before.hydrations : NaN;
  if (hydrations !== 0) result.failures.push(`${run.label}: ${hydrations} hydrations during the random-client rounds (every client should be cached)`);
  const ratio = ratios.length === 0 ? NaN : median(ratios);
  Object.assign(result.extra, {
    randomClientCpuUs: summarise(random).cpuPerOpUs ?? NaN,
    oneClientCpuUs: summarise(one).cpuPerOpUs ?? NaN,
    randomOverOneCpuRatio: ratio,
    hydrationsInRounds: hydrations,
  });
  console.log(
    `    a random client's check: ${ratio.toFixed(2)}× one client's CPU per request (median of ${ratios.map((x) => x.toFixed(2)).join(', ')}); ${hydrations} hydrations meanwhile`,
  );
  for (const [, mix] of rows) merge(result.correctness, mix.tally);
  return { random, one };
}
