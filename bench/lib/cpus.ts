/**
 * Which CPUs the server and the load generator run on. A load generator sharing the server's
 * cores measures itself as much as the server, so by default the server gets the first cores
 * (one per worker thread it runs, at most all but one) and the client processes the rest, each
 * pinned with taskset. The environment overrides any part (see bench/README.md, "Settings").
 */
import { availableParallelism } from 'node:os';

export interface CpuSplit {
  /** taskset CPU list of the servers (gateway, bare and minimal servers); undefined: not pinned. */
  server: string | undefined;
  /** taskset CPU list of the load generator's processes; undefined: not pinned. */
  client: string | undefined;
  /** CPUs the servers may use: a server of n busy threads is saturated at 0.9 × min(n, serverCores) cores. */
  serverCores: number;
  /** Load generator processes (autocannon) of a flat-out run; wrk threads. */
  clientProcs: number;
}

/** The CPUs a taskset list (`0`, `2-7`, `0,2-3`) names; undefined when it is not one. */
function cpuSet(list: string): Set<number> | undefined {
  const set = new Set<number>();
  for (const part of list.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (m === null) return undefined;
    const [a, b] = [Number(m[1]), Number(m[2] ?? m[1])];
    if (b < a) return undefined;
    for (let c = a; c <= b; c++) set.add(c);
  }
  return set;
}

/** The number of CPUs a taskset list names; NaN when it is not one. */
export const cpuCount = (list: string): number => cpuSet(list)?.size ?? NaN;

/** The machine's CPUs outside `list`, as a taskset list (undefined when none is left). */
function complement(list: string, cpus: number): string | undefined {
  const taken = cpuSet(list) ?? new Set<number>();
  const rest = Array.from({ length: cpus }, (_, c) => c).filter((c) => !taken.has(c));
  return rest.length === 0 ? undefined : rest.join(',');
}

const range = (from: number, to: number): string => (from === to ? String(from) : `${from}-${to}`);

function envList(name: string): string | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  if (!Number.isFinite(cpuCount(v))) throw new Error(`${name}=${v}: not a CPU list such as 0, 2-7 or 0,2-3`);
  return v;
}

/**
 * The split for a server running `threads` busy threads (gateway workers × instances; 1 for the
 * bare servers). BENCH_SERVER_CPUS, BENCH_CLIENT_CPUS and BENCH_CLIENT_PROCS override the
 * defaults; BENCH_PIN=off pins nothing (the server's cores are then all of the machine's).
 */
export function cpuSplit(threads: number, cpus = availableParallelism()): CpuSplit {
  const procsEnv = process.env.BENCH_CLIENT_PROCS;
  const procs = procsEnv === undefined || procsEnv === '' ? undefined : Number(procsEnv);
  if (procs !== undefined && !(Number.isInteger(procs) && procs > 0)) throw new Error(`BENCH_CLIENT_PROCS=${procsEnv}: not a positive integer`);
  if (process.env.BENCH_PIN === 'off' || cpus < 2) return { server: undefined, client: undefined, serverCores: cpus, clientProcs: procs ?? 1 };
  const own = Math.max(1, Math.min(threads, cpus - 1));
  const server = envList('BENCH_SERVER_CPUS') ?? range(0, own - 1);
  const client = envList('BENCH_CLIENT_CPUS') ?? complement(server, cpus);
  const clientCpus = client === undefined ? cpus : cpuCount(client);
  return { server, client, serverCores: cpuCount(server), clientProcs: procs ?? clientCpus };
}

/** One line for the log: where each side runs. */
export const describeSplit = (s: CpuSplit): string =>
  `server on CPU ${s.server ?? 'any'}, load generator on CPU ${s.client ?? 'any'} (${s.clientProcs} process(es) or wrk threads)`;
