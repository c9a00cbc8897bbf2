/**
 * What every listed run and every webhook delivery of `npm run bench:workflows` must say, from the
 * model (workflow-model.ts): a schedule's first run lists every holder at its revision as
 * `added`; each later run lists exactly who flipped between the previous run's revision and its
 * own; `users_count` is the holders at its revision; a delivery repeats its run. Anything else is
 * a wrong answer and fails the run.
 */
import type { WorkflowRun } from '../src/client/index.ts';
import type { Delivery } from './workflow-receiver.ts';
import { epochMs } from './workflow-gateway.ts';
import type { WorkflowModel } from './workflow-model.ts';

/** A run may still be `pending` this long after it was made (its delivery is under way). */
const PENDING_GRACE_MS = 5_000;
/** The status the receiver answers. */
const RECEIVER_STATUS = 204;

export interface RunsTally {
  runs: number;
  /** Runs whose delivery took more than one attempt. */
  retried: number;
}

/** The first difference between two sorted name lists, or undefined when equal. */
function listProblem(what: string, got: readonly string[], want: readonly string[]): string | undefined {
  if (got.length !== want.length) return `${what}: ${got.length} users, the model says ${want.length} (first listed: ${got[0] ?? 'none'}, expected: ${want[0] ?? 'none'})`;
  for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) return `${what}[${i}] is ${got[i] ?? ''}, the model says ${want[i] ?? ''}`;
  return undefined;
}

function deliveryProblem(run: WorkflowRun, nowMs: number): string | undefined {
  const d = run.delivery;
  if (d.status === 'delivered' && d.last_status === RECEIVER_STATUS && d.attempts >= 1) return undefined;
  if (d.status === 'pending' && nowMs - epochMs(run.run_at) < PENDING_GRACE_MS) return undefined;
  return `delivery ${JSON.stringify(d)}`;
}

/**
 * Checks the runs of one schedule's life that `fresh` accepts against the model; `runs` is the
 * whole life, oldest first (`runs[0]` is its first run: each run's diff is against the one
 * before). Problems go to `failures`.
 */
export function checkRuns(runs: readonly WorkflowRun[], fresh: (r: WorkflowRun) => boolean, model: WorkflowModel, failures: string[], label: string): RunsTally {
  const nowMs = Date.now();
  let [checked, retried] = [0, 0];
  runs.forEach((run, i) => {
    if (!fresh(run)) return;
    checked++;
    const what = `${label} run at ${run.run_at} (revision ${run.revision})`;
    const prev = runs[i - 1];
    const problems: Array<string | undefined> = [];
    if (run.revision < model.baseRevision || run.revision > model.revision) problems.push(`revision outside ${model.baseRevision}..${model.revision}`);
    if (prev !== undefined && (run.revision < prev.revision || epochMs(run.run_at) <= epochMs(prev.run_at))) problems.push(`not after the run at ${prev.run_at}`);
    if (run.users_count !== model.countAt(run.revision)) problems.push(`users_count ${run.users_count}, the model says ${model.countAt(run.revision)}`);
    const want = prev === undefined ? { added: model.holdersAt(run.revision), removed: [] } : model.diff(prev.revision, run.revision);
    problems.push(listProblem('added', run.added, want.added), listProblem('removed', run.removed, want.removed), deliveryProblem(run, nowMs));
    for (const p of problems) if (p !== undefined) failures.push(`${what}: ${p}`);
    if (run.delivery.attempts > 1) retried++;
  });
  return { runs: checked, retried };
}

/**
 * Compares deliveries with the runs they announce (by `run_at`): same revision, count and lists.
 * Returns how many matched; the others are left for a later listing (their run was made after
 * this one) and checked then, or by {@link checkLeftover}.
 */
export function matchDeliveries(pending: Delivery[], runs: readonly WorkflowRun[], failures: string[]): number {
  const byRunAt = new Map(runs.map((r) => [r.run_at, r]));
  let matched = 0;
  for (let i = pending.length - 1; i >= 0; i--) {
    const d = pending[i] as Delivery;
    const run = byRunAt.get(d.runAt);
    if (run === undefined) continue;
    const what = `delivery ${d.id} of the run at ${d.runAt}`;
    if (d.revision !== run.revision || d.usersCount !== run.users_count) failures.push(`${what}: revision ${d.revision}, users_count ${d.usersCount}; the run lists ${run.revision}, ${run.users_count}`);
    for (const p of [listProblem(`${what} added`, d.added, run.added), listProblem(`${what} removed`, d.removed, run.removed)]) if (p !== undefined) failures.push(p);
    pending.splice(i, 1);
    matched++;
  }
  return matched;
}

/**
 * Deliveries whose run was deleted with its schedule before the bench listed it: their count
 * must still be the model's at their revision, and a steady run lists no change.
 */
export function checkLeftover(leftover: readonly Delivery[], model: WorkflowModel, failures: string[]): void {
  for (const d of leftover) {
    if (d.usersCount !== model.countAt(d.revision)) failures.push(`delivery ${d.id} (unlisted run at ${d.runAt}): users_count ${d.usersCount}, the model says ${model.countAt(d.revision)}`);
  }
}
