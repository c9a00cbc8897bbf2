import { randomBytes } from 'node:crypto';
import type { EngineResponse as HttpResponse } from '../engine/port.ts';
import { STATUS_TEXT, type AppError } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';
import { NO_REQUEST_METRICS, type RequestMetrics } from '../../metrics/requests.ts';
import { logAccess } from '../../log/access.ts';

export { errorBody } from '../engine/wire.ts';

/** What every reply needs to know about its request, read before the engine's request object dies. */
export interface ReplyTarget {
  readonly res: HttpResponse;
  readonly requestId: string;
  /** The request's Origin when CORS applies to it, else ''. */
  readonly origin: string;
  /** Told the status of the reply when the request is audited (CONTRACT.md §5 audit rows). */
  readonly audit?: { replied(status: number): void } | undefined;
  /** The request's metrics series (-1: not counted) and when its handler took it. */
  readonly series?: number;
  readonly startedAt?: number;
}

/** Where answers are counted: the worker's request metrics, or nothing when metrics are off. */
let requestMetrics: RequestMetrics = NO_REQUEST_METRICS;

/** Counts every answer from now on in `metrics` (set once, at start-up). */
export function countAnswersIn(metrics: RequestMetrics): void {
  requestMetrics = metrics;
}

const STATUS_LINE: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(STATUS_TEXT).map(([code, text]) => [code, `${code} ${text}`]),
);

// ---- request ids ------------------------------------------------------------------------------

const VISIBLE_ASCII = /^[\x21-\x7e]{1,128}$/;
const ID_PREFIX = randomBytes(6).toString('hex');
let idCounter = 0;

/** The request's own `X-Request-Id` when acceptable, else a new one unique to this process. */
export function requestIdOf(sent: string): string {
  if (sent !== '' && VISIBLE_ASCII.test(sent)) return sent;
  idCounter = (idCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${ID_PREFIX}-${idCounter.toString(36)}`;
}

// ---- CORS -------------------------------------------------------------------------------------

export interface CorsPolicy {
  readonly enabled: boolean;
  /**
   * True with an origin list: answers then depend on the request's Origin, so every response
   * says `Vary: Origin` (whatever the origin, or none), lest a shared cache hand one origin's
   * answer to another.
   */
  readonly varyOnOrigin: boolean;
  /** The `Access-Control-Allow-Origin` value for an origin, or undefined when not allowed. */
  allowOrigin(origin: string): string | undefined;
}

export function corsPolicy(enabled: boolean, origins: string): CorsPolicy {
  const any = origins.trim() === '*';
  const allowed = new Set(origins.split(',').map((o) => o.trim().toLowerCase()));
  return {
    enabled,
    varyOnOrigin: enabled && !any,
    allowOrigin: (origin) => (!enabled || origin === '' ? undefined : any ? '*' : allowed.has(origin.toLowerCase()) ? origin : undefined),
  };
}

export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, X-Request-Id, X-Authz-Min-Revision';
const CORS_EXPOSE_HEADERS = 'X-Request-Id, X-Authz-Revision, Retry-After, Allow';

// ---- writing ----------------------------------------------------------------------------------

/** Set on shutdown: every response from then on closes its connection (Connection: close). */
let draining = false;

/** From now on, answers close their connections, so clients reconnect elsewhere. */
export function closeConnectionsAfterReply(): void {
  draining = true;
}

/**
 * Writes a complete response. The caller corks when it is not inside the uWS handler's own
 * synchronous part (see {@link corked}).
 */
export function send(
  t: ReplyTarget,
  cors: CorsPolicy,
  status: number,
  body: string,
  revision: number | undefined,
  extra?: ReadonlyArray<readonly [string, string]>,
  closeConnection = false,
): void {
  const res = t.res;
  if (t.audit !== undefined) t.audit.replied(status);
  const series = t.series ?? -1;
  if (series >= 0) requestMetrics.answered(series, status, (performance.now() - (t.startedAt as number)) / 1000);
  logAccess(series, status, t.startedAt, t.requestId);
  res.writeStatus(STATUS_LINE[status] ?? String(status));
  res.writeHeader('Content-Type', 'application/json');
  res.writeHeader('X-Request-Id', t.requestId);
  if (revision !== undefined) res.writeHeader('X-Authz-Revision', String(revision));
  writeCorsHeaders(res, cors, t.origin);
  if (extra !== undefined) for (const [k, v] of extra) res.writeHeader(k, v);
  res.end(body, closeConnection || draining);
}

/** `Vary: Origin` with an origin list, and the `Access-Control-*` headers of an allowed origin. */
export function writeCorsHeaders(res: HttpResponse, cors: CorsPolicy, origin: string): void {
  if (cors.varyOnOrigin) res.writeHeader('Vary', 'Origin');
  const allow = origin === '' ? undefined : cors.allowOrigin(origin);
  if (allow !== undefined) {
    res.writeHeader('Access-Control-Allow-Origin', allow);
    res.writeHeader('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
  }
}

/** Runs `fn` corked, unless the client went away meanwhile. */
export function corked(t: ReplyTarget & { aborted: boolean }, fn: () => void): void {
  if (t.aborted) return;
  t.res.cork(fn);
}

/** `{"success":true,"code":…,"message":"…","data":` — the fixed start of a success envelope. */
export function successPrefix(status: number, message: string): string {
  return `{"success":true,"code":${status},"message":${JSON.stringify(message)},"data":`;
}

/** Completes a success envelope after its prefix and serialised data. */
export function successTail(nextCursor: string | undefined): string {
  return nextCursor === undefined
    ? `,"timestamp":"${timestamp()}"}`
    : `,"next_cursor":${JSON.stringify(nextCursor)},"timestamp":"${timestamp()}"}`;
}


/** Extra headers some errors carry. */
export function errorHeaders(err: AppError): ReadonlyArray<readonly [string, string]> | undefined {
  if (err.status === 401) return [['WWW-Authenticate', 'Bearer']];
  if (err.status === 503) return [['Retry-After', '1']];
  return undefined;
}
