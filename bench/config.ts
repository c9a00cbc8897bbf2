/** Benchmark settings, from environment variables (all optional). See bench/README.md. */
import { availableParallelism } from 'node:os';
import { spawnSync } from 'node:child_process';

export interface BenchConfig {
  /** Seconds of each measured load run. */
  durationS: number;
  /** Seconds of the unmeasured warm-up run per target and tool. */
  warmupS: number;
  /** Measured runs per target and tool; the order alternates (ABBA) and the median is reported. */
  rounds: number;
  /** bench:cluster's mixed phase: pairs of runs (checks alone, then with writes, or the reverse). */
  mixedPairs: number;
  connections: number;
  /** PRNG seed of the data set. */
  seed: number;
  users: number;
  roles: number;
  permissions: number;
  rolesPerUser: number;
  minGrants: number;
  maxGrants: number;
  /** Writes in flight while seeding. */
  seedConcurrency: number;
  seedTimeoutS: number;
  /** has_permission answers compared with the model before timing. */
  correctnessSample: number;
  /** Distinct (user, permission) URLs rotated during load. */
  loadUrls: number;
  /** Check one autocannon response in this many. */
  verifyEvery: number;
  /** Requests per second of the parallel checker that runs beside wrk. */
  checkerRate: number;
  /** CPU the servers are pinned to, CPU list of the load generators; undefined: no pinning. */
  pin: { server: number; load: string } | undefined;
  /** Entry of the gateway, relative to the project root (a stand-in can be swapped in for a dry run). */
  gatewayEntry: string;
  gatewayLogLevel: string;
  /** Run wrk when it is on PATH (BENCH_WRK=0 turns it off). */
  wrk: boolean;
  /**
   * `npm run bench`: AUTH_HTTP_ENGINE of each gateway measured beside the bare server, in order
   * (the first one is seeded over HTTP and is the `gateway` of the summary).
   */
  engines: string[];
  /**
   * `npm run bench`: also load the uws gateway with a signed token instead of the key (BENCH_TOKEN=0
   * turns it off); the gateways then run with a random AUTH_JWT_SECRET_KEY.
   */
  token: boolean;
  /**
   * `npm run bench`: also load a second uws gateway with metrics on (AUTH_METRICS_PORT set), on its
   * own snapshot of the seeded file (BENCH_METRICS=0 turns it off).
   */
  metrics: boolean;
}

const ENGINES = ['uws', 'node', 'auto'];

function engineList(): string[] {
  const raw = process.env.BENCH_ENGINES ?? 'uws,node';
  const list = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const bad = list.filter((e) => !ENGINES.includes(e));
  if (list.length === 0 || bad.length > 0 || new Set(list).size !== list.length) {
    throw new Error(`BENCH_ENGINES=${raw}: expected distinct engines among ${ENGINES.join(', ')}, comma-separated`);
  }
  return list;
}

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name}=${raw}: expected an integer in ${min}..${max}`);
  }
  return n;
}

function flag(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '0' || raw === '1') return raw === '1';
  throw new Error(`${name}=${raw}: expected 0 or 1`);
}

function hasCommand(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function pinning(): BenchConfig['pin'] {
  const mode = process.env.BENCH_PIN ?? 'auto';
  if (mode === '0' || mode === 'false' || mode === 'off') return undefined;
  const cpus = availableParallelism();
  if (cpus < 2 || !hasCommand('taskset')) {
    if (mode !== 'auto') console.log(`note: BENCH_PIN=${mode} ignored (needs taskset and 2+ CPUs)`);
    return undefined;
  }
  const server = cpus - 1;
  return { server, load: cpus === 2 ? '0' : `0-${cpus - 2}` };
}

/** Defaults that one benchmark sets apart from the others. */
export interface Defaults {
  /** BENCH_ROUNDS when unset (2). */
  rounds?: number;
}

export function loadConfig(defaults: Defaults = {}): BenchConfig {
  const minGrants = int('BENCH_MIN_GRANTS', 10, 1, 1_000);
  return {
    durationS: int('BENCH_DURATION', 10, 1, 600),
    warmupS: int('BENCH_WARMUP', 3, 0, 60),
    rounds: int('BENCH_ROUNDS', defaults.rounds ?? 2, 1, 20),
    mixedPairs: int('BENCH_MIXED_PAIRS', 6, 1, 50),
    connections: int('BENCH_CONNECTIONS', 100, 1, 10_000),
    seed: int('BENCH_SEED', 42, 0, 2 ** 31 - 1),
    users: int('BENCH_USERS', 10_000, 1, 1_000_000),
    roles: int('BENCH_ROLES', 100, 1, 100_000),
    permissions: int('BENCH_PERMISSIONS', 1_000, 1, 1_000_000),
    rolesPerUser: int('BENCH_ROLES_PER_USER', 3, 1, 100),
    minGrants,
    maxGrants: int('BENCH_MAX_GRANTS', 50, minGrants, 1_000),
    seedConcurrency: int('BENCH_SEED_CONCURRENCY', 32, 1, 1_000),
    seedTimeoutS: int('BENCH_SEED_TIMEOUT', 300, 10, 3_600),
    correctnessSample: int('BENCH_CHECK_SAMPLE', 2_000, 1, 1_000_000),
    loadUrls: int('BENCH_URLS', 8_192, 16, 1_000_000),
    verifyEvery: int('BENCH_VERIFY_EVERY', 8, 1, 1_000_000),
    checkerRate: int('BENCH_CHECKER_RATE', 200, 1, 10_000),
    pin: pinning(),
    gatewayEntry: process.env.BENCH_GATEWAY_ENTRY ?? 'src/main.ts',
    gatewayLogLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
    wrk: process.env.BENCH_WRK !== '0' && hasCommand('wrk'),
    engines: engineList(),
    token: flag('BENCH_TOKEN', true),
    metrics: flag('BENCH_METRICS', true),
  };
}
