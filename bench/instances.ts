/**
 * `npm run bench:instances`: what PostgreSQL and Redis change.
 *   1. has_permission (wrk) on SQLite and on PostgreSQL, the same data set, ABBA rounds: both are
 *      answered from memory, so the ratio should be ~1.
 *   2. Write latency on each store (sequential, then 16 in flight).
 *   3. Invalidation delay between two instances on one PostgreSQL: from the acknowledgement of a
 *      write on A to the first answer of B that reflects it, through Redis (revalidation set to
 *      60 s so it cannot help), and without Redis (revalidation every 2 s) as the contrast.
 * Any wrong answer fails the run (exit 1). See bench/README.md.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { RbacClient } from '../src/client/index.ts';
import { Churn, writeBatch, type WriteStats } from './churn.ts';
import { loadConfig, type BenchConfig } from './config.ts';
import { generate, probes, writeCount, type Probe } from './dataset.ts';
import { runWrk } from './load-wrk.ts';
import { checkAnswers, datasetInfo, seedDataset } from './prepare.ts';
import { installCleanup, runMain, sleep, timeLimit } from './procs.ts';
import { machineInfo, writeReport } from './report.ts';
import { ROOT, startGateway, type Server } from './servers.ts';
import { fmtMs, median, Samples, table } from './stats.ts';
import { freshDatabase } from './databases.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const DELAY_WRITES = 300;
const DELAY_WRITES_NO_REDIS = 20;


function gateway(cfg: BenchConfig, env: Record<string, string>): Promise<Server> {
  return startGateway({ entry: cfg.gatewayEntry, logLevel: cfg.gatewayLogLevel, cpus: cfg.pin === undefined ? undefined : String(cfg.pin.server), startTimeoutMs: 90_000, env });
}

interface CheckRun {
  store: string;
  rps: number;
  p50: number;
  p99: number;
}

async function checksPhase(cfg: BenchConfig, servers: Record<string, Server>, key: string, load: Probe[]): Promise<CheckRun[]> {
  const runs: CheckRun[] = [];
  const once = async (store: string, durationS: number): Promise<CheckRun> => {
    const s = servers[store] as Server;
    const out = await runWrk({ url: s.baseUrl, authorization: `Bearer ${key}`, probes: load, connections: cfg.connections, durationS, cpus: cfg.pin?.load, cwd: ROOT });
    if (out.non2xx + out.errors + out.timeouts > 0) throw new Error(`${store}: ${out.non2xx} non-2xx, ${out.errors + out.timeouts} socket errors or timeouts`);
    console.log(`  wrk ${store.padEnd(10)} ${Math.round(out.rps).toString().padStart(7)} req/s  p50 ${fmtMs(out.latency.p50)}  p99 ${fmtMs(out.latency.p99)} ms`);
    return { store, rps: out.rps, p50: out.latency.p50, p99: out.latency.p99 };
  };
  if (cfg.warmupS > 0) for (const store of ['sqlite', 'postgresql']) await once(store, cfg.warmupS);
  for (let round = 0; round < cfg.rounds; round++) {
    for (const store of round % 2 === 0 ? ['sqlite', 'postgresql'] : ['postgresql', 'sqlite']) runs.push(await once(store, cfg.durationS));
  }
  return runs;
}

/** ms from A's acknowledgement of each write until B answers with it (keep-alive polling, ~1 ms apart). */
async function delays(a: Server, b: Server, writes: number, limitMs: number, pauseMs = 0): Promise<Samples> {
  const key = randomUUID();
  const ca = new RbacClient({ baseUrl: a.baseUrl, key });
  const cb = new RbacClient({ baseUrl: b.baseUrl, key });
  if ((await ca.createRole('R')).status !== 201 || (await ca.addMember('u', 'R')).status !== 201) throw new Error('setting up the delay tenant failed');
  if ((await cb.hasPermission('u', 'p')).data?.has_permission !== false) throw new Error('B: unexpected answer before the first write');
  const samples = new Samples();
  for (let i = 0; i < writes; i++) {
    const on = i % 2 === 0;
    // A random pause, so that writes do not line up with a periodic refresh of B.
    if (pauseMs > 0) await sleep(Math.random() * pauseMs);
    const res = on ? await ca.grant('R', 'p') : await ca.revoke('R', 'p');
    if (res.status !== (on ? 201 : 200)) throw new Error(`write on A: HTTP ${res.status}`);
    const acked = performance.now();
    for (;;) {
      const seen = await cb.hasPermission('u', 'p');
      if (seen.data?.has_permission === on) break;
      if (performance.now() - acked > limitMs) throw new Error(`B did not reflect write ${i} within ${limitMs} ms`);
      await sleep(1);
    }
    samples.add(performance.now() - acked);
  }
  return samples;
}

async function ready(s: Server, limitMs: number): Promise<void> {
  const t0 = Date.now();
  while ((await fetch(`${s.baseUrl}/ready`).then((r) => r.status, () => 0)) !== 200) {
    if (Date.now() - t0 > limitMs) throw new Error(`${s.baseUrl}/ready not 200 within ${limitMs} ms`);
    await sleep(100);
  }
}

async function main(): Promise<number> {
  installCleanup();
  const cfg = loadConfig();
  timeLimit('bench:instances', 300 + 2 * cfg.seedTimeoutS + 4 * cfg.rounds * (cfg.durationS + 10) + 600);
  if (!cfg.wrk) {
    console.log('bench:instances needs wrk (apt-get install wrk)');
    return 1;
  }
  const ds = generate(cfg);
  const info = datasetInfo(cfg, ds);
  console.log(`data set: ${JSON.stringify(info)}; CPU pinning ${cfg.pin === undefined ? 'off' : `servers on CPU ${cfg.pin.server}, wrk on ${cfg.pin.load}`}`);
  const db = await freshDatabase();
  const servers: Record<string, Server> = {};
  const extra: Server[] = [];
  const failures: string[] = [];
  const report: Record<string, unknown> & { date: string } = { date: new Date().toISOString(), machine: machineInfo(), dataset: info };
  try {
    servers.sqlite = await gateway(cfg, {});
    servers.postgresql = await gateway(cfg, { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url });
    const key = randomUUID();
    const sample = probes(ds, cfg.correctnessSample, cfg.seed + 1);
    const seeding: Record<string, number> = {};
    for (const store of ['sqlite', 'postgresql']) {
      const client = new RbacClient({ baseUrl: (servers[store] as Server).baseUrl, key });
      const seeded = await seedDataset(cfg, ds, client);
      seeding[store] = seeded.writes / seeded.seconds;
      if (seeded.maxRevision !== writeCount(ds)) failures.push(`${store}: revision ${seeded.maxRevision} after ${writeCount(ds)} writes`);
      const t = await checkAnswers(client, sample, { strict: true, revision: writeCount(ds) }, `${store} correctness`);
      if (t.wrong > 0) failures.push(`${store}: ${t.wrong} wrong answers (${t.examples[0] ?? ''})`);
    }
    if (failures.length > 0) return finish(report, failures);

    console.log(`\nphase 1: has_permission, wrk -t1 -c${cfg.connections}, AUTH_WORKERS=1 on each store`);
    const runs = await checksPhase(cfg, servers, key, probes(ds, cfg.loadUrls, cfg.seed + 2));
    const med = (store: string, f: (r: CheckRun) => number): number => median(runs.filter((r) => r.store === store).map(f));
    const checks = ['sqlite', 'postgresql'].map((store) => ({ store, rps: med(store, (r) => r.rps), p50: med(store, (r) => r.p50), p99: med(store, (r) => r.p99) }));
    for (const store of ['sqlite', 'postgresql']) {
      const client = new RbacClient({ baseUrl: (servers[store] as Server).baseUrl, key });
      const t = await checkAnswers(client, sample.slice(0, 500), { strict: true, revision: writeCount(ds) }, `${store} after load`);
      if (t.wrong > 0) failures.push(`${store}: ${t.wrong} wrong answers after the load`);
    }

    console.log('\nphase 2: write latency (1,000 grant/revoke writes; 1 in flight, then 16)');
    const latency: Array<WriteStats & { store: string; inFlight: number }> = [];
    for (const store of ['sqlite', 'postgresql']) {
      const churn = new Churn(new RbacClient({ baseUrl: (servers[store] as Server).baseUrl, key: randomUUID() }));
      await churn.setup();
      for (const inFlight of [1, 16]) {
        const s = await writeBatch(churn, 1000, inFlight, performance.now() + 120_000);
        if (s.errors > 0) failures.push(`${store}: ${s.errors} failed writes (${s.examples[0] ?? ''})`);
        latency.push({ store, inFlight, ...s });
      }
    }

    console.log(`\nphase 3: invalidation delay, two instances on one PostgreSQL (${DELAY_WRITES} writes through Redis, ${DELAY_WRITES_NO_REDIS} without)`);
    const pair = async (env: Record<string, string>): Promise<[Server, Server]> => {
      const both = await Promise.all([gateway(cfg, env), gateway(cfg, env)]);
      extra.push(...both);
      await Promise.all(both.map((s) => ready(s, 15_000)));
      return both;
    };
    const pgEnv = { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url };
    const [a, b] = await pair({ ...pgEnv, AUTH_REDIS_URL: REDIS_URL, AUTH_REVALIDATE_MS: '60000' });
    const viaRedis = (await delays(a, b, DELAY_WRITES, 5_000)).latency();
    const [c, d] = await pair({ ...pgEnv, AUTH_REVALIDATE_MS: '2000' });
    const noRedis = (await delays(c, d, DELAY_WRITES_NO_REDIS, 10_000, 2000)).latency();

    const ratio = (checks[1]?.rps ?? 0) / (checks[0]?.rps ?? 1);
    console.log(`\n${table([
      ['has_permission (median)', 'req/s', 'p50 ms', 'p99 ms'],
      ...checks.map((r) => [r.store, Math.round(r.rps).toLocaleString('en-US'), fmtMs(r.p50), fmtMs(r.p99)]),
    ])}\npostgresql/sqlite throughput: ${ratio.toFixed(2)}\n`);
    console.log(table([
      ['writes', 'in flight', 'writes/s', 'p50 ms', 'p99 ms', 'max ms'],
      ...latency.map((l) => [l.store, String(l.inFlight), l.writesPerSecond.toFixed(0), fmtMs(l.latency.p50), fmtMs(l.latency.p99), fmtMs(l.latency.max)]),
    ]));
    console.log(`\ninvalidation delay, acknowledged on A → answered by B:\n${table([
      ['path', 'writes', 'p50 ms', 'p99 ms', 'max ms'],
      ['Redis', String(DELAY_WRITES), fmtMs(viaRedis.p50), fmtMs(viaRedis.p99), fmtMs(viaRedis.max)],
      ['no Redis (revalidation 2 s)', String(DELAY_WRITES_NO_REDIS), fmtMs(noRedis.p50), fmtMs(noRedis.p99), fmtMs(noRedis.max)],
    ])}`);
    Object.assign(report, { seedingWritesPerSecond: seeding, checks, ratio, runs, writeLatency: latency, invalidation: { redis: viaRedis, noRedis } });
    return finish(report, failures);
  } finally {
    for (const s of [...extra, ...Object.values(servers)]) await s.stop();
    await db.drop();
  }
}

function finish(report: Record<string, unknown> & { date: string }, failures: string[]): number {
  report.failures = failures;
  report.ok = failures.length === 0;
  const file = writeReport(report, join(ROOT, 'bench', 'results'), 'instances-');
  console.log(`results: ${file}`);
  for (const f of failures) console.log(`FAILED: ${f}`);
  return failures.length === 0 ? 0 : 1;
}

runMain('bench:instances', main);
