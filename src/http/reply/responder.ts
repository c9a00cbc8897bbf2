import type { TenantId } from '../../authz/tenant.ts';
import { appError, type AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { AuditedRequest } from '../handle/audited.ts';
import type { EngineRequest, EngineResponse } from '../engine/port.ts';
import { corked, errorBody, errorHeaders, requestIdOf, send, type CorsPolicy, type ReplyTarget } from './reply.ts';

/**
 * A request as its reply needs it, read before the engine's request object dies. One per request,
 * of one shape whatever the route: the hot read answers from it, and a slow request keeps it
 * (so `aborted` is already there for `onAborted`).
 */
export interface RequestTarget extends ReplyTarget {
  /** The tenant of an authenticated /api request, else ''. */
  readonly tenant: TenantId | '';
  /** Set when the caller went away before the answer; corked replies then write nothing. */
  aborted: boolean;
  /** Set when the request is audited (its row is recorded with the reply's status). */
  audit: AuditedRequest | undefined;
  /** Its metrics series (http/api/series.ts), or -1 when it is not counted (outside /api). */
  readonly series: number;
  /** When the handler took it (performance.now()), for its duration. */
  readonly startedAt: number;
}

/** The target of an authenticated /api request: everything past the credential check takes one. */
export interface TenantTarget extends RequestTarget {
  readonly tenant: TenantId;
}

/** Targets of requests, and the error answers every route shares. */
export class Responder {
  readonly cors: CorsPolicy;
  readonly #log: Logger;

  constructor(cors: CorsPolicy, log: Logger) {
    this.cors = cors;
    this.#log = log;
  }

  /** Reads what the reply needs from `req`; call during the handler's synchronous part. */
  target<T extends TenantId | ''>(res: EngineResponse, req: EngineRequest, tenant: T, series = -1): RequestTarget & { readonly tenant: T } {
    return {
      res,
      requestId: requestIdOf(req.getHeader('x-request-id')),
      origin: this.cors.enabled ? req.getHeader('origin') : '',
      tenant,
      aborted: false,
      audit: undefined,
      series,
      startedAt: series < 0 ? 0 : performance.now(),
    };
  }

  /** Answers `err` (its status, message and extra headers); corks only if the caller does. */
  error(t: ReplyTarget, err: AppError, revision: number | undefined, closeConnection = false): void {
    send(t, this.cors, err.status, errorBody(err.status, err.message), revision, errorHeaders(err), closeConnection);
  }

  /** 401 with `WWW-Authenticate: Bearer`: no valid credential (CONTRACT.md §3). */
  unauthenticated(res: EngineResponse, req: EngineRequest, series: number): void {
    this.error(this.target(res, req, '', series), appError('ERR_AUTH_UNAUTHENTICATED'), undefined);
  }

  /** Logs an unexpected failure with its stack and answers 500 naming the request id. */
  internal(t: RequestTarget, err: unknown): void {
    this.#log.error('request failed', { request_id: t.requestId, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    const e = appError('ERR_INTERNAL', `internal error (request ${t.requestId})`);
    corked(t, () => this.error(t, e, undefined));
  }

  /** A synchronous handler threw: its request object may be gone, so nothing more is read from it. */
  readonly crashed = (res: EngineResponse, err: unknown): void => {
    this.internal({ res, requestId: requestIdOf(''), origin: '', tenant: '', aborted: false, audit: undefined, series: -1, startedAt: 0 }, err);
  };
}
