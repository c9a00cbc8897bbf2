/**
 * The two kinds that are not a steady request mix. `hydration`: a client's first requests, 100 at
 * once, must load its graph once (single flight). `flood`: has_permission with a fresh random key
 * per request beside a real client, which must not pay for them: unknown keys must cost no
 * hydration, no cache entry and no latency of the real client.
 */
import { randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';
import { generate, probes } from './dataset.ts';
import { startGateways } from './gateway.ts';
import { runLoad, type RunFigures } from './load.ts';
import { print, summarise, type RunResult } from './measure.ts';
import { delta, scrape } from './metrics.ts';
import { buildMix, type Mix } from './requests.ts';
import { memberships, type Run } from './scenario.ts';
import { median } from './stats.ts';
import { newTally, record, type Tally } from './verify.ts';

const FIRST_REQUESTS = 100;

function emptyResult(run: Run): RunResult {
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
  const ds = generate({ ...s.data, clients: s.rounds });
  const target = await startGateways(run.label, { ...s.gateway, metrics: true }, ds);
  const result = emptyResult(run);
  const sample = probes(ds, FIRST_REQUESTS, s.denials, ds.shape.seed + 9);
  const times: number[] = [];
  const cpus: number[] = [];
  try {
    for (const [r, key] of target.keys.entries()) {
      const before = await scrape(target.metricsUrls);
      const cpu0 = target.cpuSeconds() ?? NaN;
      const { ms, latencies } = await coldRound(target.baseUrls[0] ?? '', key, sample, result.correctness);
      const cpu = (target.cpuSeconds() ?? NaN) - cpu0;
      const after = await scrape(target.metricsUrls);
      const hydrations = before !== undefined && after !== undefined ? delta(before, after).hydrations : NaN;
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
      console.log(`    all ${FIRST_REQUESTS} answered after ${ms.toFixed(1)} ms, ${hydrations} hydration(s), ${(cpu * 1000).toFixed(0)} ms server CPU`);
      result.rounds.push(figures);
      times.push(ms);
      cpus.push(cpu * 1000);
    }
  } finally {
    await target.stop();
  }
  result.figures = summarise(result.rounds);
  result.extra = { allAnsweredMs: median(times), serverCpuMsPerHydration: median(cpus) };
  if (result.correctness.wrong > 0)
    result.failures.push(`${run.label}: ${result.correctness.wrong} wrong first answers (${result.correctness.examples.join('; ')})`);
  return result;
}

/** has_permission with a fresh random client key on every request; every answer must be 200, false. */
function floodMix(verifyEvery: number): Mix {
  const tally = newTally();
  const requests = (): autocannon.Request[] =>
    Array.from({ length: 64 }, (_, i) => {
      const req: autocannon.Request = {
        method: 'GET',
        path: `/api/has_permission/user${i}@example.com/svc0.res-000001:read`,
        setupRequest: (r) => ({ ...r, headers: { authorization: `Bearer ${randomUUID()}` } }),
      };
      if (i % verifyEvery === 0) {
        req.onResponse = (status, body) =>
          record(tally, status === 200 && /"has_permission":false/.test(body) ? undefined : `unknown key: HTTP ${status} ${body.slice(0, 120)}`);
      }
      return req;
    });
  return { requests, tally };
}

/** Connections of the real client beside the flood. */
const REAL_CONNECTIONS = 8;

export async function measureFlood(run: Run): Promise<RunResult> {
  const s = run.settings;
  const ds = generate(s.data);
  const target = await startGateways(run.label, { ...s.gateway, metrics: true }, ds);
  const result = emptyResult(run);
  const real = buildMix({ ds, settings: s, keys: target.keys, pages: [], expectation: { strict: true, revision: target.revision, revisionAtLeast: false } });
  const flood = floodMix(s.verifyEvery);
  try {
    const alone = await runLoad({ target, mix: real, connections: REAL_CONNECTIONS, durationS: s.durationS, run: 0 });
    print(`${run.label} real alone`, 'run', alone, result.failures);
    const before = await scrape(target.metricsUrls);
    const cpu0 = target.cpuSeconds() ?? NaN;
    const [f, r] = await Promise.all([
      runLoad({ target, mix: flood, connections: s.connections, durationS: s.durationS, run: 1 }),
      runLoad({ target, mix: real, connections: REAL_CONNECTIONS, durationS: s.durationS, run: 2 }),
    ]);
    const cpu = (target.cpuSeconds() ?? NaN) - cpu0;
    const after = await scrape(target.metricsUrls);
    const d = before !== undefined && after !== undefined ? delta(before, after) : undefined;
    // Both loads ran at once: their CPU is shared out per request of either.
    const perOp = (cpu / (f.requests + r.requests)) * 1e6;
    f.cpuPerOpUs = perOp;
    r.cpuPerOpUs = perOp;
    print(`${run.label} flood`, 'run', f, result.failures);
    print(`${run.label} real+flood`, 'run', r, result.failures);
    result.rounds = [f];
    result.figures = summarise([f]);
    result.extra = {
      floodRps: f.rps,
      realRps: r.rps,
      realP99AloneMs: alone.latency.p99,
      realP99UnderFloodMs: r.latency.p99,
      hydrations: d?.hydrations ?? NaN,
      cacheClients: d?.cacheClients ?? NaN,
    };
    console.log(
      `    flood: ${d?.hydrations} hydrations, ${d?.cacheClients} cached clients; real client p99 ${alone.latency.p99.toFixed(2)} ms alone, ${r.latency.p99.toFixed(2)} ms under the flood`,
    );
  } finally {
    await target.stop();
  }
  for (const t of [real.tally, flood.tally]) {
    result.correctness.checked += t.checked;
    result.correctness.wrong += t.wrong;
    result.correctness.examples.push(...t.examples);
  }
  if (result.correctness.wrong > 0)
    result.failures.push(`${run.label}: ${result.correctness.wrong} wrong answers (${result.correctness.examples.slice(0, 3).join('; ')})`);
  return result;
}
