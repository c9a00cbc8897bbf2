/**
 * The gateway of `npm run bench:workflows` and what the bench reads off it: its HTTP worker
 * processes (apart from the primary, whose event loop and store thread run the scheduler), each
 * one's CPU from /proc, the scheduler's metrics from the primary's GET /metrics, and the workflow
 * routes (schedule, unschedule, every run) through the typed client.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { RbacClient, WorkflowRun } from '../src/client/index.ts';
import type { BenchConfig } from './config.ts';
import { startEngine } from './gateways.ts';
import { freePort } from './procs.ts';
import type { Server } from './servers.ts';
import { WORKFLOW } from './workflow-model.ts';

export type StoreKind = 'sqlite' | 'postgresql';

/** Started with one HTTP worker, intervals down to 1 s, metrics on, and webhooks allowed to `hookHost` only. */
export async function startWorkflowGateway(cfg: BenchConfig, store: StoreKind, sqlitePath: string, pgUrl: string | undefined, hookHost: string): Promise<Server> {
  const port = await freePort();
  const env: Record<string, string> = {
    AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1',
    AUTH_METRICS_HOST: '127.0.0.1',
    AUTH_METRICS_PORT: String(port),
    AUTH_WEBHOOK_ALLOWED_HOSTS: hookHost,
    ...(pgUrl === undefined ? {} : { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: pgUrl }),
  };
  const gateway = await startEngine(cfg, cfg.engines[0] ?? 'uws', sqlitePath, env, `${store}`);
  gateway.metricsUrl = `http://127.0.0.1:${port}/metrics`;
  return gateway;
}

/**
 * The HTTP workers of `primary`: its children that node:cluster forked (they carry NODE_UNIQUE_ID
 * in their environment), not the esbuild helpers tsx starts beside them.
 */
export function workerPids(primary: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== primary) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').some((v) => v.startsWith('NODE_UNIQUE_ID='))) out.push(Number(entry));
    } catch {
      // exited while reading
    }
  }
  return out.sort((a, b) => a - b);
}

/**
 * CPU ticks (user + system) of every process named `comm`, by pid (`postgres`: the PostgreSQL
 * server's processes, whose work for the runs is outside the gateway; other users of that server
 * count too).
 */
export function ticksOfName(comm: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(entry), Number(rest[11]) + Number(rest[12]));
    } catch {
      // exited while reading
    }
  }
  return out;
}

/** CPU seconds between two {@link ticksOfName} snapshots: of the processes alive at the end (one that exited meanwhile is lost, not subtracted). */
export function secondsBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return ticks / 100;
}

/** CPU seconds (user + system, all its threads) of `pid` alone: not its children's. */
export function ownCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100;
}

/** Where a process's CPU went: user and system seconds (all its threads), and its threads' context switches. */
export interface CpuSplit {
  userSeconds: number;
  systemSeconds: number;
  /** Switches away from a thread that could have run on (preempted): the cost of sharing a core. */
  involuntarySwitches: number;
  voluntarySwitches: number;
}

export function cpuSplit(pid: number): CpuSplit {
  const rest = (() => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  })();
  const split: CpuSplit = { userSeconds: Number(rest[11]) / 100, systemSeconds: Number(rest[12]) / 100, involuntarySwitches: 0, voluntarySwitches: 0 };
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
      split.voluntarySwitches += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      split.involuntarySwitches += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // the thread ended while reading
    }
  }
  return split;
}

/** b - a, field by field. */
export const splitDelta = (a: CpuSplit, b: CpuSplit): CpuSplit => ({
  userSeconds: b.userSeconds - a.userSeconds,
  systemSeconds: b.systemSeconds - a.systemSeconds,
  involuntarySwitches: b.involuntarySwitches - a.involuntarySwitches,
  voluntarySwitches: b.voluntarySwitches - a.voluntarySwitches,
});

/**
 * A view of the gateway whose process is `pid`, for bench/phases.ts's runOne: it measures the CPU
 * of `server.child.pid` and its descendants, which is then one worker's (its pool threads included).
 */
export function workerView(gateway: Server, pid: number, label: string): Server {
  return { ...gateway, label, child: { ...gateway.child, pid } };
}

/** The scheduler's series of the primary's GET /metrics. */
export interface SchedulerMetrics {
  runsOk: number;
  runsError: number;
  /** rbac_workflow_run_duration_seconds: sum and count of the runs' durations. */
  durationSum: number;
  durationCount: number;
  delivered: number;
  pending: number;
  failed: number;
}

/** One series' value in a text exposition (labels as written, `{result="ok"}`); NaN when absent. */
function series(text: string, name: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `)) return Number(line.slice(name.length + 1));
  }
  return NaN;
}

export async function scrapeScheduler(url: string): Promise<SchedulerMetrics> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  const m: SchedulerMetrics = {
    runsOk: series(text, 'rbac_workflow_runs_total{result="ok"}'),
    runsError: series(text, 'rbac_workflow_runs_total{result="error"}'),
    durationSum: series(text, 'rbac_workflow_run_duration_seconds_sum'),
    durationCount: series(text, 'rbac_workflow_run_duration_seconds_count'),
    delivered: series(text, 'rbac_webhook_deliveries_total{result="delivered"}'),
    pending: series(text, 'rbac_webhook_deliveries_total{result="pending"}'),
    failed: series(text, 'rbac_webhook_deliveries_total{result="failed"}'),
  };
  const missing = Object.entries(m).filter(([, v]) => !Number.isFinite(v)).map(([k]) => k);
  if (missing.length > 0) throw new Error(`GET ${url}: no scheduler series for ${missing.join(', ')}`);
  return m;
}

/** Creates (or replaces) the schedule, every `intervalS` seconds, with the receiver's URL; its secret, or throws on anything but the contract's 201. */
export async function schedule(client: RbacClient, intervalS: number, hookUrl: string): Promise<string> {
  const res = await client.scheduleWorkflow(WORKFLOW, { interval_seconds: intervalS, webhook_url: hookUrl });
  const d = res.data;
  if (res.status !== 201 || d === undefined) throw new Error(`POST /api/workflow/schedule/${WORKFLOW}: ${res.status} ${res.error ?? ''}`);
  if (d.workflow !== WORKFLOW || d.interval_seconds !== intervalS || d.webhook_url !== hookUrl || !/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/.test(d.webhook_secret)) {
    throw new Error(`POST /api/workflow/schedule/${WORKFLOW}: unexpected answer (workflow ${d.workflow}, interval ${d.interval_seconds}, url ${String(d.webhook_url)})`);
  }
  return d.webhook_secret;
}

export async function unschedule(client: RbacClient): Promise<void> {
  const res = await client.unscheduleWorkflow(WORKFLOW);
  if (res.status !== 200 || res.data?.workflow !== WORKFLOW) throw new Error(`DELETE /api/workflow/schedule/${WORKFLOW}: ${res.status} ${res.error ?? ''}`);
}

/** Every run of the schedule, oldest first (the route lists newest first, in pages). */
export async function allRuns(client: RbacClient): Promise<WorkflowRun[]> {
  const runs = await client.all((o) => client.workflowRuns(WORKFLOW, o), 100);
  return runs.reverse();
}

/** The newest run, or undefined before the first; throws on an error status. */
export async function latestRun(client: RbacClient): Promise<WorkflowRun | undefined> {
  const res = await client.workflowRuns(WORKFLOW, { limit: 1 });
  if (res.status !== 200 || res.data === undefined) throw new Error(`GET /api/workflow/runs/${WORKFLOW}?limit=1: ${res.status} ${res.error ?? ''}`);
  return res.data[0];
}

/** Epoch ms of a wire timestamp (UTC without a zone, 6 fractional digits). */
export const epochMs = (wire: string): number => Date.parse(`${wire.slice(0, 23)}Z`);
