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

/** One server's access log; off (share 0), it costs one comparison per answer. */
export class AccessLog {
  /** Share of answers logged: 0 (off), up to 1 (every one). */
  readonly #sample: number;
  readonly #series: readonly AccessSeries[];
  readonly #log: Logger;

  /**
   * Logs a share `share` (0..1) of the `/api` answers, through `logger` at level info (none when
   * the logger does not write info lines). `known` names the series that {@link answered} is
   * given by index.
   */
  constructor(share: number, known: readonly AccessSeries[], logger: Logger) {
    this.#sample = Number.isFinite(share) && share > 0 && logger.enabled('info') ? Math.min(1, share) : 0;
    this.#series = known;
    this.#log = logger;
  }

  /**
   * Called with every answer that is sent: `index` is its request series (-1 outside `/api`: not
   * logged), `startedAt` when its handler took it (performance.now()).
   */
  answered(index: number, status: number, startedAt: number | undefined, requestId: string): void {
    const sample = this.#sample;
    if (sample === 0) return;
    if (index < 0 || (sample < 1 && Math.random() >= sample)) return;
    const s = this.#series[index];
    this.#log.info('access', {
      route: s?.route ?? 'unknown',
      method: s?.method ?? 'unknown',
      status,
      duration_ms: startedAt === undefined ? null : Math.round((performance.now() - startedAt) * 1000) / 1000,
      request_id: requestId,
    });
  }
}
