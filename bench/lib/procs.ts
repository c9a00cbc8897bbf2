/**
 * Child processes of the benchmark: spawned in their own process group (so a server's workers go
 * with it), optionally pinned to a CPU with taskset, always stopped on exit, error or Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const OUTPUT_CAP = 256 * 1024;

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** The last OUTPUT_CAP characters of stdout and stderr. */
  output(): string;
  /** Lines written so far (stdout and stderr). */
  lines(): number;
  exited: Promise<number | null>;
  running(): boolean;
  stop(graceMs?: number): Promise<void>;
}

/** Everything to stop on exit: children spawned here and gateways from the launcher. */
interface Stoppable {
  pid: number;
  stop(graceMs?: number): Promise<unknown>;
}
const children = new Set<Stoppable>();

/** Stops `s` (its whole process group) with the others on exit, error or Ctrl-C; call the returned function once it is stopped. */
export function track(s: Stoppable): () => void {
  children.add(s);
  return () => children.delete(s);
}

export interface SpawnOptions {
  cwd: string;
  env: Record<string, string>;
  /** CPU list for taskset (`1`, `0-2`). */
  cpus?: string | undefined;
  /** An IPC channel (child.proc.send / 'message'), for a Node.js child. */
  ipc?: boolean;
}

export function spawnChild(name: string, cmd: string, args: string[], options: SpawnOptions): Child {
  const [file, argv] = options.cpus === undefined ? [cmd, args] : ['taskset', ['-c', options.cpus, cmd, ...args]];
  const stdio: Array<'ignore' | 'pipe' | 'ipc'> = ['ignore', 'pipe', 'pipe', ...(options.ipc === true ? (['ipc'] as const) : [])];
  const proc = spawn(file, argv, { cwd: options.cwd, env: options.env, stdio, detached: true });
  if (proc.pid === undefined) throw new Error(`${name}: spawn failed`);
  const pid = proc.pid;
  let out = '';
  let lineCount = 0;
  const onData = (c: Buffer): void => {
    const s = c.toString();
    for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) lineCount++;
    out += s;
    if (out.length > 2 * OUTPUT_CAP) out = out.slice(-OUTPUT_CAP);
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const running = (): boolean => proc.exitCode === null && proc.signalCode === null;
  const child: Child = {
    name,
    proc,
    pid,
    output: () => out.slice(-OUTPUT_CAP),
    lines: () => lineCount,
    exited,
    running,
    async stop(graceMs = 5_000) {
      if (running()) {
        signalGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // Workers left behind by a primary that died first.
      signalGroup(pid, 'SIGKILL');
      children.delete(child);
    },
  };
  void exited.then(() => {
    if (!running()) signalGroup(pid, 'SIGKILL');
  });
  children.add(child);
  return child;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** Waits until `re` appears in the child's output; throws on exit or timeout. */
export async function waitForOutput(child: Child, re: RegExp, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!re.test(child.output())) {
    if (!child.running()) throw new Error(`${child.name} exited (code ${child.proc.exitCode}) before ${re}:\n${child.output()}`);
    if (Date.now() - started > timeoutMs) throw new Error(`${child.name}: no ${re} within ${timeoutMs} ms:\n${child.output()}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.stop(3_000)));
}

/** Stops every child on Ctrl-C, SIGTERM, an uncaught error, and (synchronously) on any exit. */
export function installCleanup(): void {
  const onSignal = (signal: NodeJS.Signals, code: number): void => {
    console.error(`\n${signal}: stopping child processes`);
    void stopAll().finally(() => process.exit(code));
  };
  process.once('SIGINT', () => onSignal('SIGINT', 130));
  process.once('SIGTERM', () => onSignal('SIGTERM', 143));
  process.on('uncaughtException', (err) => {
    console.error('uncaught:', err);
    void stopAll().finally(() => process.exit(1));
  });
  process.on('exit', () => {
    for (const c of children) signalGroup(c.pid, 'SIGKILL');
  });
}

const CLK_TCK = 100;

interface ProcEntry {
  ppid: number;
  /** Resident set size, in pages. */
  rssPages: number;
  /** utime + stime + cutime + cstime, in clock ticks. */
  ticks: number;
  threads: number;
}

/** Every process of the machine, from /proc/<pid>/stat (each one's threads summed by the kernel). */
function processTable(): Map<number, ProcEntry> {
  const table = new Map<number, ProcEntry>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after "(comm)": state ppid ... utime(14) stime(15) cutime(16) cstime(17) ...
      // num_threads(20), 1-based over the whole line. cutime/cstime hold the CPU of children
      // already reaped, so a worker that exits during a run still counts in its parent.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
      table.set(Number(entry), { ppid: Number(rest[1]), ticks, threads: Number(rest[17]), rssPages: Number(rest[21]) });
    } catch {
      // exited while reading
    }
  }
  return table;
}

/** The entries of `root` and all its descendants. */
function tree(root: number): ProcEntry[] {
  const table = processTable();
  const out: ProcEntry[] = [];
  for (const [p, e] of table) {
    for (let q: number | undefined = p; q !== undefined && q > 1; q = table.get(q)?.ppid) {
      if (q === root) {
        out.push(e);
        break;
      }
    }
  }
  return out;
}

/**
 * CPU seconds (user + system) used so far by `pid`, all its descendants and all their threads,
 * from /proc: a gateway's primary, its worker processes and their pool threads.
 */
export function treeCpuSeconds(pid: number): number {
  return tree(pid).reduce((n, e) => n + e.ticks, 0) / CLK_TCK;
}

/** Resident memory of `pid` and its descendants, in MiB (4 KiB pages). */
export function treeRssMb(pid: number): number {
  return (tree(pid).reduce((n, e) => n + e.rssPages, 0) * 4096) / (1 << 20);
}

/**
 * CPU seconds of this process's children that exited and were waited for (cutime + cstime of
 * /proc/self/stat): a load generator that ran to its end, such as wrk.
 */
export function reapedChildrenSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[13]) + Number(rest[14])) / CLK_TCK;
}

/** CPU seconds the whole machine spent busy so far (every state but idle and iowait), from /proc/stat. */
export function systemBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user)
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return busy / CLK_TCK;
}

/** Cores the machine keeps busy while the benchmark is idle (other work disturbs the figures). */
export async function backgroundCores(): Promise<number> {
  const b0 = systemBusySeconds();
  const t0 = performance.now();
  await sleep(2_000);
  return (systemBusySeconds() - b0) / ((performance.now() - t0) / 1000);
}

/** Ends the run (exit 1, children stopped) when it takes longer than `limitS` seconds. */
export function timeLimit(label: string, limitS: number): void {
  setTimeout(() => {
    console.error(`${label}: over its time limit of ${limitS} s, stopping`);
    void stopAll().finally(() => process.exit(1));
  }, limitS * 1000).unref();
}

/** Runs a benchmark's main: stops every child, then exits with its code, or with 1 when it threw. */
export function runMain(label: string, main: () => Promise<number>): void {
  main().then(
    async (code) => {
      await stopAll();
      process.exit(code);
    },
    async (err: unknown) => {
      console.error(`${label} failed:`, err instanceof Error ? err.message : err);
      await stopAll();
      process.exit(1);
    },
  );
}
