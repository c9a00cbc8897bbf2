import type { RequestSeries } from '../metrics/requests.ts';
import { ROUTES } from './routes/index.ts';

/** Methods of requests that match no route (404) or not its method (405), labelled route `unknown`. */
const UNKNOWN_METHODS = ['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH'] as const;

/**
 * The `/api` request series of the metrics (CONTRACT.md §9): one per route, in ROUTES order (a
 * route's index is its series), then `unknown` per method. Labels are route ids, never paths.
 */
export const API_SERIES: readonly RequestSeries[] = [
  ...ROUTES.map((r) => ({ route: r.id, method: r.method, successStatus: r.status })),
  ...UNKNOWN_METHODS.map((method) => ({ route: 'unknown', method, successStatus: 404 })),
];

/** The series of a request to no route or to the wrong method: `unknown`, by method (else not counted: -1). */
export function unknownSeries(method: string): number {
  const i = UNKNOWN_METHODS.indexOf(method.toUpperCase() as (typeof UNKNOWN_METHODS)[number]);
  return i < 0 ? -1 : ROUTES.length + i;
}

/** The series of route `route`. */
export function seriesOf(route: (typeof ROUTES)[number]): number {
  return ROUTES.indexOf(route);
}
