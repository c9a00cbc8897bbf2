import type { WriteOutcome } from '../authz/changes.ts';
import { AppError } from '../errors/index.ts';
import type { Logger } from '../log/index.ts';
import type { WorkerMetrics } from '../metrics/worker.ts';
import { tell } from './ipc.ts';

/** A write's outcome counted by op and result (ok, or the error code). */
export function counted(write: Promise<WriteOutcome>, op: string, metrics: WorkerMetrics | undefined): Promise<WriteOutcome> {
  if (metrics === undefined) return write;
  return write.then(
    (outcome) => {
      metrics.write(op, outcome.ok ? 'ok' : outcome.error.code);
      return outcome;
    },
    (err: unknown) => {
      metrics.write(op, err instanceof AppError ? err.code : 'ERR_INTERNAL');
      throw err;
    },
  );
}

/**
 * A workflow schedule's change counted like a write: `workflow.schedule` always `ok` once
 * committed, `workflow.unschedule` `ok` or ERR_WORKFLOW_SCHEDULE_NOT_FOUND; a failure by its code.
 */
export function countedSchedule<T>(change: Promise<T>, op: 'workflow.schedule' | 'workflow.unschedule', metrics: WorkerMetrics | undefined): Promise<T> {
  if (metrics === undefined) return change;
  return change.then(
    (value) => {
      metrics.write(op, value === false ? 'ERR_WORKFLOW_SCHEDULE_NOT_FOUND' : 'ok');
      return value;
    },
    (err: unknown) => {
      metrics.write(op, err instanceof AppError ? err.code : 'ERR_INTERNAL');
      throw err;
    },
  );
}

/** Answers the primary's scrape `id` with this worker's metrics (none when metrics are off). */
export function reportMetrics(id: number, metrics: WorkerMetrics | undefined, log: Logger): void {
  if (metrics === undefined) return;
  metrics.snapshot().then(
    (snapshot) => tell({ t: 'metrics', id, snapshot }),
    (err: unknown) => log.warn('metrics snapshot failed', { err }),
  );
}
