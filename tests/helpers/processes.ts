import { readdirSync, readFileSync } from 'node:fs';
import type { RunningServer } from './server.ts';
import { waitUntil } from './wait.ts';

/** Pids of every descendant of `pid` (a service's workers and their children), from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const child of children.get(p) ?? []) {
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

/** Whether `pid` still runs (a zombie, dead but not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * SIGKILL to a service's workers (and their children) and to its primary, all in one synchronous
 * step: a crash of the whole instance, with nothing left to finish anything. Returns the pids
 * killed besides the primary's.
 */
export function killAll(srv: RunningServer): number[] {
  const workers = srv.proc.pid === undefined ? [] : descendants(srv.proc.pid);
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  srv.proc.kill('SIGKILL');
  return workers;
}

/** {@link killAll}, then the primary's exit; returns the other pids killed. */
export async function crash(srv: RunningServer): Promise<number[]> {
  const killed = killAll(srv);
  await srv.exited;
  return killed;
}

/** After a kill: every one of `pids` is gone and nothing answers on the service's port any more (no orphaned worker). */
export async function assertGone(srv: RunningServer, pids: readonly number[] = []): Promise<void> {
  let state = '';
  await waitUntil(
    () => `the killed service to be gone: ${state}`,
    async () => {
      const alive = pids.filter(running);
      let answers = false;
      try {
        const res = await fetch(`${srv.baseUrl}/ping`, { signal: AbortSignal.timeout(500) });
        await res.text();
        answers = true;
      } catch {
        answers = false;
      }
      state = `processes ${alive.join(', ') || 'none'} alive, port ${answers ? 'answers' : 'closed'}`;
      return alive.length === 0 && !answers ? true : undefined;
    },
    { intervalMs: 100 },
  );
}
