/**
 * The one way a gateway process is started, by the tests and by the benchmarks: `src/main.ts`
 * (or a compiled entry) as a child process with the environment given, its output captured, ready
 * once it logs that it listens. Ports, databases and leak records are the callers' business.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The primary's line once every worker listens: its event (docs/operations.md §8), or, from a
 * build older than the event field that the benchmark kit compares against
 * (BENCH_GATEWAY_ENTRY), the primary's `listening` message.
 */
const LISTENING = /"event":"primary\.listening"|"msg":"listening","pid":\d+,"role":"primary"/;
/** Output kept in memory: enough for every start-up and failure message, bounded for long benchmark runs. */
const OUTPUT_CAP = 4 * 1024 * 1024;

/** A port nobody listens on right now (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface LaunchOptions {
  /** The whole environment of the process (nothing is inherited). */
  env: Record<string, string>;
  /** Relative to the project root; `.js` runs on plain node, anything else through tsx. Default {@link TEST_ENTRY}. */
  entry?: string | undefined;
  /** CPU list for taskset (`1`, `0-2`): pins the process and every thread it starts. */
  cpus?: string | undefined;
  /**
   * Its own process group, signalled as a whole on stop (workers left by a primary that died go
   * too). The benchmarks want that; the tests signal the primary only, as an operator would.
   */
  group?: boolean;
  /** Every chunk of stdout and stderr, as it comes. */
  onOutput?: (chunk: Buffer) => void;
  /** How long to wait for "listening" (ms); default 20 s. */
  startTimeoutMs?: number | undefined;
}

export interface Launched {
  proc: ChildProcess;
  pid: number;
  /** Output so far (stdout and stderr; the last few MiB of it). */
  output(): string;
  /** Lines written so far. */
  lines(): number;
  running(): boolean;
  /** Resolves with the exit code once the process is gone. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 12 s); resolves once it exited. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * The service the tests start: AUTH_TEST_ENTRY, which tests/run.mjs sets to the compiled
 * `dist/main.js` it builds first (a server then starts in a fraction of the time tsx takes to
 * compile src/ in each of its processes), else `src/main.ts` through tsx.
 */
export const TEST_ENTRY = process.env.AUTH_TEST_ENTRY || 'src/main.ts';

/** Node's arguments to run `entry`: `.js` on plain node, anything else through tsx. */
export const entryArgs = (entry: string = TEST_ENTRY): string[] => (/\.[cm]?js$/.test(entry) ? [entry] : ['--import', 'tsx', entry]);

/** Starts the gateway and resolves once it listens; throws (with its output) when it exits or times out first. */
export async function launchGateway(options: LaunchOptions): Promise<Launched> {
  const args = entryArgs(options.entry ?? TEST_ENTRY);
  const [file, argv] = options.cpus === undefined ? [process.execPath, args] : ['taskset', ['-c', options.cpus, process.execPath, ...args]];
  const group = options.group === true;
  const proc = spawn(file, argv, { cwd: ROOT, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: group });
  if (proc.pid === undefined) throw new Error('gateway: spawn failed');
  const pid = proc.pid;
  let out = '';
  let lineCount = 0;
  const take = (c: Buffer): void => {
    const s = c.toString();
    for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) lineCount++;
    out += s;
    if (out.length > 2 * OUTPUT_CAP) out = out.slice(-OUTPUT_CAP);
    options.onOutput?.(c);
  };
  proc.stdout?.on('data', take);
  proc.stderr?.on('data', take);
  const running = (): boolean => proc.exitCode === null && proc.signalCode === null;
  const signal = (sig: NodeJS.Signals): void => {
    try {
      if (group) process.kill(-pid, sig);
      else proc.kill(sig);
    } catch {
      // gone already
    }
  };
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  if (group) void exited.then(() => signal('SIGKILL'));
  const launched: Launched = {
    proc,
    pid,
    output: () => out,
    lines: () => lineCount,
    running,
    exited,
    async stop(graceMs = 12_000) {
      if (running()) signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  await waitListening(launched, options.startTimeoutMs ?? 20_000, signal);
  return launched;
}

async function waitListening(g: Launched, timeoutMs: number, signal: (sig: NodeJS.Signals) => void): Promise<void> {
  const started = Date.now();
  while (!LISTENING.test(g.output())) {
    if (!g.running()) throw new Error(`server exited before listening (code ${g.proc.exitCode}):\n${g.output()}`);
    if (Date.now() - started > timeoutMs) {
      signal('SIGKILL');
      throw new Error(`server did not listen within ${timeoutMs} ms:\n${g.output()}`);
    }
    await sleep(25);
  }
}
