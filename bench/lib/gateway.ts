/**
 * What the load goes to: gateways started through the one launcher (support/launcher.ts) on
 * a seeded database, the two uWebSockets.js ceilings (bare, minimal), or a running instance (BENCH_TARGET). Each
 * says how much CPU and memory its processes used so far, read from /proc, when it can.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tenantOfKey } from '../../src/http/input/credentials.ts';
import { RbacClient } from '../../src/client/index.ts';
import { freePort, launchGateway, ROOT } from '../../support/launcher.ts';
import type { Dataset } from './dataset.ts';
import { spawnChild, track, treeCpuSeconds, treeRssMb, waitForOutput, type Child } from './procs.ts';
import type { GatewaySettings } from './scenario.ts';
import { postgresCopy, seedHttp, seedSqlite, unseedHttp } from './seed.ts';

export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface Target {
  label: string;
  /** One per instance; the load is spread over them. */
  baseUrls: string[];
  /** GET /metrics of each instance, when they serve it. */
  metricsUrls: string[];
  /** The client keys holding the data set. */
  keys: string[];
  /** The revision every client is at after seeding. */
  revision: number;
  /** Threads that answer requests (workers × instances; 1 for the bare servers): it is saturated at 0.9 core per thread it can run. */
  threads: number;
  /** CPU seconds of all its processes so far; undefined when they are not on this machine. */
  cpuSeconds(): number | undefined;
  rssMb(): number | undefined;
  /** The primary process of each gateway instance started here (none for a BENCH_TARGET or a ceiling). */
  primaries?: number[];
  /** Log lines so far (a log line per request shows here). */
  lines(): number;
  stop(): Promise<void>;
}

const baseEnv = (): Record<string, string> => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' });

export interface Instance {
  pid: number;
  baseUrl: string;
  metricsUrl: string | undefined;
  lines(): number;
  stop(): Promise<void>;
}

export async function launch(settings: GatewaySettings, storeEnv: Record<string, string>, cpus: string | undefined): Promise<Instance> {
  const port = await freePort();
  const metricsPort = settings.metrics ? await freePort() : 0;
  const env = {
    ...baseEnv(),
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_WORKERS: String(settings.workers),
    AUTH_METRICS_PORT: String(metricsPort),
    AUTH_METRICS_HOST: '127.0.0.1',
    AUTH_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    AUTH_HTTP_ENGINE: settings.engine,
    ...(settings.instances > 1 ? { AUTH_REDIS_URL: REDIS_URL } : {}),
    ...storeEnv,
    ...settings.env,
  };
  const g = await launchGateway({ env, entry: process.env.BENCH_GATEWAY_ENTRY, group: true, startTimeoutMs: 120_000, cpus });
  const untrack = track(g);
  return {
    pid: g.pid,
    baseUrl: `http://127.0.0.1:${port}`,
    metricsUrl: settings.metrics ? `http://127.0.0.1:${metricsPort}/metrics` : undefined,
    lines: g.lines,
    async stop() {
      await g.stop();
      untrack();
    },
  };
}

export function fromInstances(label: string, instances: Instance[], keys: string[], revision: number, threads: number, cleanup: () => Promise<void>): Target {
  const sum = (f: (pid: number) => number): number => instances.reduce((n, i) => n + f(i.pid), 0);
  return {
    label,
    baseUrls: instances.map((i) => i.baseUrl),
    metricsUrls: instances.flatMap((i) => (i.metricsUrl === undefined ? [] : [i.metricsUrl])),
    keys,
    revision,
    threads,
    cpuSeconds: () => sum(treeCpuSeconds),
    rssMb: () => sum(treeRssMb),
    primaries: instances.map((i) => i.pid),
    lines: () => instances.reduce((n, i) => n + i.lines(), 0),
    async stop() {
      for (const i of instances) await i.stop();
      await cleanup();
    },
  };
}

/**
 * Gateways as `settings` say, on a fresh database holding the data set under `ds.shape.clients`
 * fresh keys, pinned to `cpus` (a taskset list) when given.
 */
export async function startGateways(label: string, settings: GatewaySettings, ds: Dataset, cpus?: string): Promise<Target> {
  if (settings.store === 'sqlite' && settings.instances > 1) throw new Error("several instances need the postgresql store (SQLite is one instance's file)");
  const keys = Array.from({ length: ds.shape.clients }, () => randomUUID());
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-'));
  const sqlitePath = join(dir, 'rbac.sqlite3');
  const instances: Instance[] = [];
  let drop = async (): Promise<void> => undefined;
  const cleanup = async (): Promise<void> => {
    await drop().catch((err: unknown) => console.log(`note: could not drop the benchmark database: ${String(err)}`));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const started = performance.now();
    const encrypted = settings.env.AUTH_ENABLE_ENCRYPTION === 'true' ? settings.env.AUTH_ENCRYPTION_KEY : undefined;
    await seedSqlite(sqlitePath, keys.map(tenantOfKey), ds.changes, encrypted);
    let storeEnv: Record<string, string> = { AUTH_SQLITE_PATH: sqlitePath };
    if (settings.store === 'postgresql') {
      const db = await postgresCopy(sqlitePath, keys.map(tenantOfKey));
      drop = db.drop;
      storeEnv = { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url };
    }
    console.log(
      `  seeded ${ds.changes.length.toLocaleString('en-US')} writes × ${keys.length} client(s) into ${settings.store} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    for (let i = 0; i < settings.instances; i++) instances.push(await launch(settings, storeEnv, cpus));
  } catch (err) {
    for (const i of instances) await i.stop();
    await cleanup();
    throw err;
  }
  return fromInstances(label, instances, keys, ds.changes.length, settings.workers * settings.instances, cleanup);
}

/** A server of bench/lib/ started in its own process (pinned to `cpus` when given), once it says it listens. */
async function startServerFile(label: string, file: string, env: Record<string, string>, revision: number, cpus: string | undefined): Promise<Target> {
  const port = await freePort();
  const child: Child = spawnChild(label, process.execPath, ['--import', 'tsx', join('bench', 'lib', file)], {
    cwd: ROOT,
    env: { ...baseEnv(), BARE_PORT: String(port), ...env },
    cpus,
  });
  await waitForOutput(child, /"event":"primary\.listening"/, 20_000);
  return {
    label,
    baseUrls: [`http://127.0.0.1:${port}`],
    metricsUrls: [],
    keys: [randomUUID()],
    revision,
    threads: 1,
    cpuSeconds: () => treeCpuSeconds(child.pid),
    rssMb: () => treeRssMb(child.pid),
    lines: child.lines,
    stop: () => child.stop(),
  };
}

/** The bare uWebSockets.js server answering has_permission with the gateway's own bodies (same size, same headers). */
export function startBare(bodyTrue: string, bodyFalse: string, revision: number, cpus?: string): Promise<Target> {
  const env = { BARE_BODY_TRUE: bodyTrue, BARE_BODY_FALSE: bodyFalse, BARE_REVISION: String(revision), BARE_REQUEST_ID_LEN: '16' };
  return startServerFile('bare', 'bare-server.ts', env, revision, cpus);
}

/** The minimal uWebSockets.js server: the header and both parameters read, one fixed body, no other header. */
export function startMinimal(body: string, cpus?: string): Promise<Target> {
  return startServerFile('minimal', 'minimal-server.ts', { MINIMAL_BODY: body }, 0, cpus);
}

/**
 * A running instance (BENCH_TARGET=http://host:port): the data set is written under a fresh
 * client key over HTTP and deleted on stop. Its CPU is known only when BENCH_TARGET_PID names
 * its primary on this machine.
 */
export async function attachTarget(url: string, ds: Dataset): Promise<Target> {
  const key = randomUUID();
  const client = new RbacClient({ baseUrl: url, key });
  const started = performance.now();
  try {
    await seedHttp(client, ds.changes);
  } catch (err) {
    await unseedHttp(client, ds.changes).catch(() => undefined);
    throw err;
  }
  const revision = (await client.listRoles()).revision ?? 0;
  console.log(
    `  seeded ${ds.changes.length} writes over HTTP under a fresh key in ${((performance.now() - started) / 1000).toFixed(1)} s (revision ${revision})`,
  );
  const pid = Number(process.env.BENCH_TARGET_PID ?? NaN);
  const local = Number.isInteger(pid) && pid > 0;
  return {
    label: 'target',
    baseUrls: [url.replace(/\/$/, '')],
    metricsUrls: process.env.BENCH_TARGET_METRICS === undefined ? [] : [process.env.BENCH_TARGET_METRICS],
    keys: [key],
    revision,
    threads: Number(process.env.BENCH_TARGET_WORKERS ?? 1),
    cpuSeconds: () => (local ? treeCpuSeconds(pid) : undefined),
    rssMb: () => (local ? treeRssMb(pid) : undefined),
    lines: () => 0,
    stop: () => unseedHttp(client, ds.changes),
  };
}
