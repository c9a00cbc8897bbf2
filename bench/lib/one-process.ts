/**
 * Figures of one process of a gateway, from /proc: its worker process (a child of the primary
 * running the same executable), and the CPU and resident memory of a process of its own, without
 * its children (procs.ts sums a whole tree).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const CLK_TCK = 100;
const PAGE = 4096;

/** The children of `pid`, from /proc/<pid>/task/<tid>/children (every thread may have forked). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text !== '') out.push(...text.split(/\s+/).map(Number));
    } catch {
      // the thread ended while reading
    }
  }
  return out;
}

const exeOf = (pid: number): string | undefined => {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
};

/** The worker processes of the gateway whose primary is `primary`: its children running the same executable (cluster forks). */
export function workersOf(primary: number): number[] {
  const exe = exeOf(primary);
  return exe === undefined ? [] : childPids(primary).filter((p) => exeOf(p) === exe);
}

/**
 * The one worker process of the gateway whose primary is `primary`: its child running the same
 * executable (a cluster fork). Throws unless there is exactly one, naming what it found.
 */
export function workerOf(primary: number): number {
  const workers = workersOf(primary);
  if (workers.length !== 1 || workers[0] === undefined)
    throw new Error(
      `expected one worker process under the primary ${primary} (${exeOf(primary) ?? '?'}), found ${workers.length} among its children ${childPids(primary).join(', ')}`,
    );
  return workers[0];
}

/** CPU seconds (user + system, all its threads) of `pid` itself, its reaped children not counted. */
export function ownCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after "(comm)": state(3) ppid(4) ... utime(14) stime(15), 1-based over the whole line.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
}

/** Resident bytes of `pid` itself (/proc/<pid>/statm, 4 KiB pages). */
export function rssBytes(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE;
}
