import type { Logger } from './index.ts';

/**
 * The sampled access log (AUTH_ACCESS_LOG_SAMPLE): one `access` line per sampled `/api` answer,
 * naming the route by its id (`has_permission`), never by its path, which holds role, permission
 * and user names.
 */

/** A request series as the access log names it: the route's id and its method. */
export interface AccessSeries {
  readonly route: string;
  readonly method: string;
}

/** Share of answers logged: 0 (off), up to 1 (every one). */
let sample = 0;
let series: readonly AccessSeries[] = [];
let log: Logger | undefined;

/**
 * Logs a share `share` (0..1) of the `/api` answers from now on, through `logger` at level info
 * (none when the logger does not write info lines). `known` names the series that
 * {@link logAccess} is given by index. Set once, at start-up; 0 turns the access log off.
 */
export function sampleAccessLog(share: number, known: readonly AccessSeries[], logger: Logger): void {
  sample = Number.isFinite(share) && share > 0 && logger.enabled('info') ? Math.min(1, share) : 0;
  series = known;
  log = logger;
}

/**
 * Called with every answer that is sent: `index` is its request series (-1 outside `/api`: not
 * logged), `startedAt` when its handler took it (performance.now()). Off, this costs one
 * comparison.
 */
export function logAccess(index: number, status: number, startedAt: number | undefined, requestId: string): void {
  if (sample === 0) return;
  if (index < 0 || (sample < 1 && Math.random() >= sample)) return;
  const s = series[index];
  log?.info('access', {
    route: s?.route ?? 'unknown',
    method: s?.method ?? 'unknown',
    status,
    duration_ms: startedAt === undefined ? null : Math.round((performance.now() - startedAt) * 1000) / 1000,
    request_id: requestId,
  });
}
