/**
 * The `clients` kind: many small clients on one worker (a SaaS with many tenants). Every client
 * key holds the same small data set, seeded once per scenario run and copied for each variant.
 *
 * 1. Hydration: one client asked (and the worker warmed up), then every other client once, a true
 *    and a false answer each, `connections` clients in flight: hydrated clients per second. Every
 *    answer is checked; /metrics must count exactly one hydration per client.
 * 2. Memory: the worker process's resident set after one client and after all of them, per
 *    client, beside the cache's own estimate (rbac_cache_bytes / rbac_cache_clients); the growth
 *    against AUTH_CACHE_MAX_MB.
 * 3. Idle (`idleS` > 0): after `settleS` seconds of quiet, the CPU of the worker and of the
 *    primary over `idleS` seconds, as % of a core.
 * 4. Random client (`randomClient`): has_permission naming a random cached client (uniform) on
 *    each request against the same requests naming one client, rounds interleaved in mirrored
 *    order on the same connections: server CPU per request, the median of the per-round ratios.
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tenantOfKey } from '../../src/http/input/credentials.ts';
import { generate, probes, type Dataset, type Probe } from './dataset.ts';
import { fromInstances, launch, type Instance, type Target } from './gateway.ts';
import type { RunFigures } from './load.ts';
import { print, splitOf, summarise, type RunResult } from './measure.ts';
import { delta, scrape, type Scraped } from './metrics.ts';
import { ownCpuSeconds, rssBytes, workerOf } from './one-process.ts';
import { sleep, systemBusySeconds } from './procs.ts';
import type { CpuSplit } from './cpus.ts';
import { answerProblem, checkPath } from './keyed-mix.ts';
import { randomClientRounds } from './random-client.ts';
import type { Run } from './scenario.ts';
import { seedSqlite } from './seed.ts';
import { emptyResult } from './special.ts';
import { judgeBody, record, type Expectation, type Tally } from './verify.ts';

/** Requests of the first client before the baseline: the worker's code warmed up, its first graph loaded. */
const WARM_REQUESTS = 1_000;
/** Quiet before each resident-set reading. */
const MEMORY_SETTLE_MS = 3_000;
const MiB = 1024 * 1024;

interface Seeded {
  path: string;
  keys: string[];
}

const seeds = new Map<string, Promise<Seeded>>();

/** The data set under `clients` fresh keys in a SQLite file: once per data shape and run of the runner. */
function seedOnce(ds: Dataset): Promise<Seeded> {
  const id = JSON.stringify(ds.shape);
  let seeded = seeds.get(id);
  if (seeded === undefined) {
    seeded = seed(ds);
    seeds.set(id, seeded);
    seeded.catch(() => seeds.delete(id));
  }
  return seeded;
}

async function seed(ds: Dataset): Promise<Seeded> {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-clients-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const keys = Array.from({ length: ds.shape.clients }, () => randomUUID());
  const path = join(dir, 'seed.sqlite3');
  const started = performance.now();
  await seedSqlite(path, keys.map(tenantOfKey), ds.changes);
  console.log(
    `  seeded ${ds.changes.length} writes × ${keys.length.toLocaleString('en-US')} clients in ${((performance.now() - started) / 1000).toFixed(1)} s (once for every variant)`,
  );
  return { path, keys };
}

interface Started {
  target: Target;
  primary: number;
  worker: number;
}

/** One gateway of one worker on a copy of the seeded file. */
async function start(run: Run, ds: Dataset, split: CpuSplit): Promise<Started> {
  const g = run.settings.gateway;
  if (g.workers !== 1 || g.instances !== 1 || g.store !== 'sqlite')
    throw new Error(`${run.label}: the clients kind measures one worker of one instance on SQLite (workers 1, instances 1, store sqlite)`);
  const seeded = await seedOnce(ds);
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-'));
  const path = join(dir, 'rbac.sqlite3');
  for (const suffix of ['', '-wal', '-shm']) if (existsSync(seeded.path + suffix)) copyFileSync(seeded.path + suffix, path + suffix);
  const cleanup = async (): Promise<void> => rmSync(dir, { recursive: true, force: true });
  let instance: Instance;
  try {
    instance = await launch({ ...g, metrics: true }, { AUTH_SQLITE_PATH: path }, split.server);
  } catch (err) {
    await cleanup();
    throw err;
  }
  const target = fromInstances(run.label, [instance], seeded.keys, ds.changes.length, 1, cleanup);
  try {
    return { target, primary: instance.pid, worker: workerOf(instance.pid) };
  } catch (err) {
    await target.stop();
    throw err;
  }
}

interface Asker {
  baseUrl: string;
  exp: Expectation;
  tally: Tally;
  latencies: number[];
}

/** One has_permission of client `key`, its answer checked (data and headers); its latency kept. */
async function ask(a: Asker, key: string, p: Probe): Promise<void> {
  const t0 = performance.now();
  const res = await fetch(`${a.baseUrl}${checkPath(p)}`, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.text();
  a.latencies.push(performance.now() - t0);
  record(a.tally, judgeBody(answerProblem(p, res.status, body), res.status, Object.fromEntries(res.headers), a.exp));
}

/** `count` jobs, `inFlight` at a time. */
async function lanes(count: number, inFlight: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      for (let i = next++; i < count; i = next++) await job(i);
    }),
  );
}

interface Pass {
  figures: RunFigures;
  clientsPerS: number;
  workerCpuS: number;
  clientCores: number;
}

/** Every client of `keys` asked once: its true probe (which hydrates it), then its false one. */
async function hydrateAll(a: Asker, t: Started, keys: string[], pairs: { yes: Probe[]; no: Probe[] }, inFlight: number): Promise<Pass> {
  a.latencies = [];
  const cpu0 = t.target.cpuSeconds() ?? NaN;
  const worker0 = ownCpuSeconds(t.worker);
  const self0 = process.cpuUsage();
  const busy0 = systemBusySeconds();
  const t0 = performance.now();
  await lanes(keys.length, inFlight, async (i) => {
    const key = keys[i] ?? '';
    await ask(a, key, pairs.yes[i % pairs.yes.length] as Probe);
    await ask(a, key, pairs.no[i % pairs.no.length] as Probe);
  });
  const s = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const cpu = (t.target.cpuSeconds() ?? NaN) - cpu0;
  const clientCpu = (self.user + self.system) / 1e6;
  const other = Math.max(0, systemBusySeconds() - busy0 - cpu - clientCpu) / s;
  const sorted = a.latencies.sort((x, y) => x - y);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  const requests = sorted.length;
  const figures: RunFigures = {
    requests,
    durationS: s,
    rps: requests / s,
    latency: { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: sorted[sorted.length - 1] ?? NaN },
    non2xx: 0,
    errors: 0,
    cpuPerOpUs: (cpu / requests) * 1e6,
    serverCores: cpu / s,
    otherCores: other,
    rssMb: t.target.rssMb() ?? null,
    logLines: 0,
  };
  return { figures, clientsPerS: keys.length / s, workerCpuS: ownCpuSeconds(t.worker) - worker0, clientCores: clientCpu / s };
}

/** The worker's and the primary's CPU over `idleS` seconds after `settleS` of quiet, % of a core. */
async function idleCpu(t: Started, settleS: number, idleS: number): Promise<{ worker: number; primary: number }> {
  await sleep(settleS * 1000);
  const [w0, p0, t0] = [ownCpuSeconds(t.worker), ownCpuSeconds(t.primary), performance.now()];
  await sleep(idleS * 1000);
  const s = (performance.now() - t0) / 1000;
  return { worker: (100 * (ownCpuSeconds(t.worker) - w0)) / s, primary: (100 * (ownCpuSeconds(t.primary) - p0)) / s };
}

/** Probes of this data set split by their answer: each client gets one of each. */
function answerPairs(ds: Dataset): { yes: Probe[]; no: Probe[]; mixed: Probe[] } {
  const mixed = probes(ds, 256, 0.5, ds.shape.seed + 11);
  const yes = mixed.filter((p) => p.expected);
  const no = mixed.filter((p) => !p.expected);
  if (yes.length === 0 || no.length === 0) throw new Error('the data set gives no true or no false answer to check each client with');
  return { yes, no, mixed };
}

const scraped = async (t: Target): Promise<Scraped> => {
  const m = await scrape(t.metricsUrls);
  if (m === undefined) throw new Error('no /metrics to read');
  return m;
};

/** The budget the scenario set (AUTH_CACHE_MAX_MB), in MiB; NaN when it left the default. */
const budgetMiB = (run: Run): number => Number(run.settings.gateway.env.AUTH_CACHE_MAX_MB ?? NaN);

export async function measureClients(run: Run): Promise<RunResult> {
  const s = run.settings;
  const ds = generate(s.data);
  if (ds.shape.clients < 2) throw new Error(`${run.label}: the clients kind needs at least 2 clients`);
  const pairs = answerPairs(ds);
  const split = splitOf(s);
  const t = await start(run, ds, split);
  const result = emptyResult(run);
  const a: Asker = {
    baseUrl: t.target.baseUrls[0] ?? '',
    exp: { strict: true, revision: t.target.revision, revisionAtLeast: false },
    tally: result.correctness,
    latencies: [],
  };
  const [first, ...others] = t.target.keys as [string, ...string[]];
  try {
    await lanes(WARM_REQUESTS, s.connections, (i) => ask(a, first, pairs.mixed[i % pairs.mixed.length] as Probe));
    await sleep(MEMORY_SETTLE_MS);
    const rss0 = rssBytes(t.worker);
    const m0 = await scraped(t.target);
    const pass = await hydrateAll(a, t, others, pairs, s.connections);
    print(run.label, 'hydration', pass.figures);
    await sleep(MEMORY_SETTLE_MS);
    const rss1 = rssBytes(t.worker);
    const d = delta(m0, await scraped(t.target));
    if (d.hydrations !== others.length)
      result.failures.push(`${run.label}: ${d.hydrations} hydrations for ${others.length} clients asked for the first time (expected one each)`);
    const growth = (rss1 - rss0) / MiB;
    result.extra = {
      clientsPerS: pass.clientsPerS,
      workerCpuUsPerClient: (pass.workerCpuS / others.length) * 1e6,
      loadGeneratorCores: pass.clientCores,
      hydrations: d.hydrations,
      rssBytesPerClient: (rss1 - rss0) / others.length,
      estimatedBytesPerClient: d.cacheBytes / d.cacheClients,
      workerRssMiB: rss1 / MiB,
      rssGrowthMiB: growth,
      ...(Number.isFinite(budgetMiB(run)) ? { rssGrowthOverBudgetRatio: growth / budgetMiB(run) } : {}),
      cacheClients: d.cacheClients,
      cacheEvictions: d.cacheEvictions,
    };
    console.log(
      `    ${others.length} clients hydrated at ${pass.clientsPerS.toFixed(0)}/s (load generator ${pass.clientCores.toFixed(2)} cores); worker resident ` +
        `${(rss0 / MiB).toFixed(1)} → ${(rss1 / MiB).toFixed(1)} MiB, ${((rss1 - rss0) / others.length).toFixed(0)} B per client ` +
        `(cache estimate ${(d.cacheBytes / d.cacheClients).toFixed(0)} B); ${d.cacheClients} cached, ${d.cacheEvictions} evicted`,
    );
    result.rounds = [pass.figures];
    if (s.idleS > 0) {
      const idle = await idleCpu(t, s.settleS, s.idleS);
      Object.assign(result.extra, { idleWorkerCpuPct: idle.worker, idlePrimaryCpuPct: idle.primary });
      console.log(`    idle over ${s.idleS} s after ${s.settleS} s: worker ${idle.worker.toFixed(2)}%, primary ${idle.primary.toFixed(2)}% of a core`);
    }
    if (s.randomClient) {
      const r = await randomClientRounds(run, t.target, pairs.mixed, split, result);
      result.rounds = r.random;
    }
  } finally {
    await t.target.stop();
  }
  result.figures = summarise(result.rounds);
  if (result.correctness.wrong > 0)
    result.failures.push(
      `${run.label}: ${result.correctness.wrong} wrong answers of ${result.correctness.checked} checked (${result.correctness.examples.slice(0, 3).join('; ')})`,
    );
  if (result.correctness.checked === 0) result.failures.push(`${run.label}: no answer was checked`);
  return result;
}
