/**
 * The `hydration` kind: a client's first requests, 100 at once, must load its graph once (single
 * flight). The `flood` kind is in flood.ts.
 */
import { generate, probes } from './dataset.ts';
import { startGateways } from './gateway.ts';
import type { RunFigures } from './load.ts';
import { print, splitOf, summarise, type RunResult } from './measure.ts';
import { delta, scrape } from './metrics.ts';
import { memberships, type Run } from './scenario.ts';
import { median } from './stats.ts';
import { newTally, record, type Tally } from './verify.ts';

const FIRST_REQUESTS = 100;

export function emptyResult(run: Run): RunResult {
  const s = run.settings;
  return {
    scenario: run.scenario,
    label: run.label,
    settings: s,
    memberships: memberships(s.data),
    connections: s.connections,
    figures: summarise([]),
    rounds: [],
    extra: {},
    correctness: newTally(),
    failures: [],
  };
}

/**
 * has_permission of a client already cached, one request after another until `done` settles:
 * their latencies while another client hydrates show whether the hydration blocks the worker.
 */
async function warmChecks(baseUrl: string, key: string, sample: ReturnType<typeof probes>, done: Promise<unknown>, tally: Tally): Promise<number[]> {
  let finished = false;
  void done.finally(() => (finished = true));
  const latencies: number[] = [];
  for (let i = 0; !finished; i++) {
    const p = sample[i % sample.length] as (typeof sample)[number];
    const t0 = performance.now();
    const res = await fetch(`${baseUrl}/api/has_permission/${encodeURIComponent(p.user)}/${encodeURIComponent(p.permission)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { data?: { has_permission?: unknown } };
    latencies.push(performance.now() - t0);
    record(
      tally,
      res.status === 200 && body.data?.has_permission === p.expected
        ? undefined
        : `warm client's check: HTTP ${res.status} ${JSON.stringify(body).slice(0, 120)}`,
    );
  }
  return latencies;
}

/** One round of cold hydration: `FIRST_REQUESTS` has_permission requests of a client nobody asked about yet, all at once. */
async function coldRound(baseUrl: string, key: string, sample: ReturnType<typeof probes>, tally: Tally): Promise<{ ms: number; latencies: number[] }> {
  const t0 = performance.now();
  const latencies = await Promise.all(
    sample.map(async (p) => {
      const res = await fetch(`${baseUrl}/api/has_permission/${encodeURIComponent(p.user)}/${encodeURIComponent(p.permission)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await res.json()) as { data?: { has_permission?: unknown } };
      record(
        tally,
        res.status === 200 && body.data?.has_permission === p.expected
          ? undefined
          : `first request has_permission(${p.user}, ${p.permission}): HTTP ${res.status} ${JSON.stringify(body).slice(0, 120)}`,
      );
      return performance.now() - t0;
    }),
  );
  return { ms: performance.now() - t0, latencies };
}

export async function measureHydration(run: Run): Promise<RunResult> {
  const s = run.settings;
  // One client per round, and one more kept warm beside them.
  const ds = generate({ ...s.data, clients: s.rounds + 1 });
  const target = await startGateways(run.label, { ...s.gateway, metrics: true }, ds, splitOf(s).server);
  const result = emptyResult(run);
  const sample = probes(ds, FIRST_REQUESTS, s.denials, ds.shape.seed + 9);
  const times: number[] = [];
  const cpus: number[] = [];
  const warmKey = target.keys[s.rounds] ?? '';
  const warmLatencies: number[] = [];
  let cacheBytes = NaN;
  let rssBefore = NaN;
  try {
    // The warm client's graph is loaded first.
    await coldRound(target.baseUrls[0] ?? '', warmKey, sample.slice(0, 1), result.correctness);
    rssBefore = target.rssMb() ?? NaN;
    for (const [r, key] of target.keys.slice(0, s.rounds).entries()) {
      const before = await scrape(target.metricsUrls);
      const cpu0 = target.cpuSeconds() ?? NaN;
      const cold = coldRound(target.baseUrls[0] ?? '', key, sample, result.correctness);
      const warm = warmChecks(target.baseUrls[0] ?? '', warmKey, sample, cold, result.correctness);
      const { ms, latencies } = await cold;
      const warmed = await warm;
      warmLatencies.push(...warmed);
      const cpu = (target.cpuSeconds() ?? NaN) - cpu0;
      const after = await scrape(target.metricsUrls);
      const hydrations = before !== undefined && after !== undefined ? delta(before, after).hydrations : NaN;
      cacheBytes = after?.cacheBytes ?? NaN;
      if (hydrations !== 1)
        result.failures.push(
          `${run.label} round ${r + 1}: ${hydrations} hydrations for ${FIRST_REQUESTS} concurrent first requests of one client (expected 1)`,
        );
      latencies.sort((a, b) => a - b);
      const figures: RunFigures = {
        requests: FIRST_REQUESTS,
        durationS: ms / 1000,
        rps: FIRST_REQUESTS / (ms / 1000),
        latency: { p50: latencies[49] ?? NaN, p99: latencies[98] ?? NaN, p999: latencies[99] ?? NaN, max: latencies[99] ?? NaN },
        non2xx: 0,
        errors: 0,
        cpuPerOpUs: (cpu / FIRST_REQUESTS) * 1e6,
        serverCores: cpu / (ms / 1000),
        otherCores: 0,
        rssMb: target.rssMb() ?? null,
        logLines: 0,
      };
      print(run.label, `round ${r + 1}`, figures);
      console.log(
        `    all ${FIRST_REQUESTS} answered after ${ms.toFixed(1)} ms, ${hydrations} hydration(s), ${(cpu * 1000).toFixed(0)} ms server CPU; ` +
          `a cached client's ${warmed.length} checks meanwhile took at most ${Math.max(0, ...warmed).toFixed(1)} ms`,
      );
      result.rounds.push(figures);
      times.push(ms);
      cpus.push(cpu * 1000);
    }
  } finally {
    await target.stop();
  }
  result.figures = summarise(result.rounds);
  // Every round hydrated one more client of the same data, all kept in the cache (the warm one was before).
  const graphs = result.rounds.length * result.memberships;
  warmLatencies.sort((a, b) => a - b);
  const grown = ((result.rounds[result.rounds.length - 1]?.rssMb ?? NaN) - rssBefore) * 1024 * 1024;
  result.extra = {
    allAnsweredMs: median(times),
    serverCpuMsPerHydration: median(cpus),
    rssBytesPerMembership: grown / graphs,
    estimatedBytesPerMembership: cacheBytes / (graphs + result.memberships),
    warmCheckP99Ms: warmLatencies[Math.floor(0.99 * (warmLatencies.length - 1))] ?? NaN,
    warmCheckMaxMs: warmLatencies[warmLatencies.length - 1] ?? NaN,
  };
  if (result.correctness.wrong > 0)
    result.failures.push(`${run.label}: ${result.correctness.wrong} wrong first answers (${result.correctness.examples.join('; ')})`);
  return result;
}
