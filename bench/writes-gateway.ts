/**
 * bench/writes.ts's own process handling, independent of the other benches' modules: a gateway
 * started from any checkout (cwd = that directory) on a free 127.0.0.1 port with a fresh SQLite
 * file, the CPU of its whole process tree from /proc, and every child stopped on exit.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const OUTPUT_CAP = 128 * 1024;
const live = new Set<ChildProcess>();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Kills the process group of every child still running (each child leads its own group). */
function killAll(signal: NodeJS.Signals): void {
  for (const c of live) killGroup(c, signal);
}

function killGroup(c: ChildProcess, signal: NodeJS.Signals): void {
  if (c.pid === undefined) return;
  try {
    process.kill(-c.pid, signal);
  } catch {
    // already gone
  }
}

/** Stops every child on Ctrl-C, SIGTERM and (synchronously) on any exit. */
export function installCleanup(): void {
  const onSignal = (signal: NodeJS.Signals, code: number): void => {
    console.error(`\n${signal}: stopping child processes`);
    killAll('SIGKILL');
    process.exit(code);
  };
  process.once('SIGINT', () => onSignal('SIGINT', 130));
  process.once('SIGTERM', () => onSignal('SIGTERM', 143));
  process.on('exit', () => killAll('SIGKILL'));
}

/** Spawns `cmd` in a process group of its own, its output kept (the last OUTPUT_CAP characters). */
export function spawnTracked(cmd: string, args: string[], cwd: string, env: Record<string, string>): { proc: ChildProcess; output(): string; exited: Promise<number | null> } {
  const proc = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (proc.pid === undefined) throw new Error(`${cmd}: spawn failed`);
  live.add(proc);
  let out = '';
  const onData = (c: Buffer): void => {
    out += c.toString();
    if (out.length > 2 * OUTPUT_CAP) out = out.slice(-OUTPUT_CAP);
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => {
    proc.on('exit', (code) => {
      live.delete(proc);
      resolve(code);
    });
  });
  return { proc, output: () => out, exited };
}

const running = (p: ChildProcess): boolean => p.exitCode === null && p.signalCode === null;

/** A port nobody listens on right now (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** pid -> [ppid, utime+stime+cutime+cstime ticks, threads] for every process of the machine. */
function processTable(): Map<number, [number, number, number]> {
  const table = new Map<number, [number, number, number]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After "(comm) ": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... num_threads(20).
      // A process's utime/stime sum all its threads, live and exited; cutime/cstime hold its
      // reaped children (a worker that died mid-phase stays counted).
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), [Number(f[1]), Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]), Number(f[17])]);
    } catch {
      // exited while reading
    }
  }
  return table;
}

export interface TreeCpu {
  seconds: number;
  processes: number;
  threads: number;
}

/** CPU seconds used so far by `root` and all its descendants (every thread of each), from /proc. */
export function treeCpu(root: number): TreeCpu {
  const table = processTable();
  let ticks = 0;
  let processes = 0;
  let threads = 0;
  for (const [pid, [, t, n]] of table) {
    for (let q: number | undefined = pid; q !== undefined && q > 1; q = table.get(q)?.[0]) {
      if (q !== root) continue;
      ticks += t;
      processes++;
      threads += n;
      break;
    }
  }
  return { seconds: ticks / CLK_TCK, processes, threads };
}

/** CPU seconds the whole machine spent busy so far (every state but idle and iowait). */
export function machineBusySeconds(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / CLK_TCK;
}

export interface Gateway {
  name: string;
  dir: string;
  workers: number;
  pid: number;
  port: number;
  baseUrl: string;
  startSeconds: number;
  cpu(): TreeCpu;
  output(): string;
  running(): boolean;
  /** SIGTERM to the primary, SIGKILL to its group after `graceMs`; removes the SQLite folder. */
  stop(graceMs?: number): Promise<number | null>;
}

/** A gateway checkout: a directory with src/main.ts and node_modules. */
export function checkCheckout(dir: string): string | undefined {
  if (!existsSync(join(dir, 'src', 'main.ts'))) return `${dir}: no src/main.ts`;
  if (!existsSync(join(dir, 'node_modules', 'tsx'))) return `${dir}: no node_modules/tsx`;
  return undefined;
}

/** `git describe` of a checkout (commit and whether its tree is modified); undefined outside git. */
export function describeCheckout(dir: string): string | undefined {
  const r = spawnSync('git', ['-C', dir, 'describe', '--always', '--dirty'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Starts `node --import tsx src/main.ts` in `dir` with AUTH_WORKERS=`workers`; resolves once GET /ping answers 200. */
export async function startGateway(name: string, dir: string, workers: number, timeoutMs = 90_000): Promise<Gateway> {
  const t0 = performance.now();
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'rbac-bench-writes-'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_SQLITE_PATH: join(dataDir, 'rbac.sqlite3'),
    AUTH_WORKERS: String(workers),
    AUTH_METRICS_PORT: '0',
    AUTH_LOG_LEVEL: 'warn',
  };
  const child = spawnTracked(process.execPath, ['--import', 'tsx', 'src/main.ts'], dir, env);
  const { proc } = child;
  const pid = proc.pid as number;
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async (graceMs = 15_000): Promise<number | null> => {
    if (running(proc)) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // exited meanwhile
      }
    }
    const timer = setTimeout(() => killGroup(proc, 'SIGKILL'), graceMs);
    const code = await child.exited;
    clearTimeout(timer);
    killGroup(proc, 'SIGKILL'); // workers a dead primary left behind
    rmSync(dataDir, { recursive: true, force: true });
    return code;
  };
  try {
    for (;;) {
      if (!running(proc)) throw new Error(`${name} (AUTH_WORKERS=${workers}) exited with ${proc.exitCode} before answering /ping:\n${child.output().slice(-4000)}`);
      if (performance.now() - t0 > timeoutMs) throw new Error(`${name}: /ping did not answer 200 within ${timeoutMs} ms:\n${child.output().slice(-4000)}`);
      try {
        const res = await fetch(`${baseUrl}/ping`, { signal: AbortSignal.timeout(1_000) });
        await res.arrayBuffer();
        if (res.status === 200) break;
      } catch {
        // not yet
      }
      await sleep(100);
    }
  } catch (err) {
    await stop(3_000);
    throw err;
  }
  return {
    name,
    dir,
    workers,
    pid,
    port,
    baseUrl,
    startSeconds: (performance.now() - t0) / 1000,
    cpu: () => treeCpu(pid),
    output: child.output,
    running: () => running(proc),
    stop,
  };
}
