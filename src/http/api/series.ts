import type { RequestSeries } from '../../metrics/requests.ts';
import { AUTHZEN_CONFIGURATION_ID, AUTHZEN_ROUTES, type AuthzenRoute } from './authzen-routes.ts';
import { ROUTES } from './routes.ts';

/** Methods of requests that match no route (404) or not its method (405), labelled route `unknown`. */
const UNKNOWN_METHODS = ['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH'] as const;

/**
 * The `/api` request series of the metrics (docs/operations.md §2): one per route, in ROUTES order (a
 * route's index is its series), then `unknown` per method. Labels are route ids, never paths.
 */
export const API_SERIES: readonly RequestSeries[] = [
  ...ROUTES.map((r) => ({ route: r.id, method: r.method, successStatus: r.status })),
  // The AuthZEN routes (docs/authzen.md), labelled by their operationIds too.
  ...AUTHZEN_ROUTES.map((r) => ({ route: r.id, method: 'POST', successStatus: 200 })),
  { route: AUTHZEN_CONFIGURATION_ID, method: 'GET', successStatus: 200 },
  ...UNKNOWN_METHODS.map((method) => ({ route: 'unknown', method, successStatus: 404 })),
];

/** The series of a request to no route or to the wrong method: `unknown`, by method (else not counted: -1). */
export function unknownSeries(method: string): number {
  const i = UNKNOWN_METHODS.indexOf(method.toUpperCase() as (typeof UNKNOWN_METHODS)[number]);
  return i < 0 ? -1 : ROUTES.length + AUTHZEN_ROUTES.length + 1 + i;
}

/** The series of an AuthZEN decision route. */
export function authzenSeriesOf(route: AuthzenRoute): number {
  return ROUTES.length + AUTHZEN_ROUTES.indexOf(route);
}

/** The series of the AuthZEN metadata route. */
export const AUTHZEN_CONFIGURATION_SERIES = ROUTES.length + AUTHZEN_ROUTES.length;

/** The series of route `route`. */
export function seriesOf(route: (typeof ROUTES)[number]): number {
  return ROUTES.indexOf(route);
}
