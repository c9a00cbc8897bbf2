import type { TenantId } from '../../authz/tenant.ts';
import { appError, STATUS_TEXT, type AppError } from '../../errors/index.ts';
import type { AccessLog } from '../../log/access.ts';
import type { Logger } from '../../log/index.ts';
import type { RequestMetrics } from '../../metrics/requests.ts';
import { encodedText, type EncodedText, type EngineRequest, type EngineResponse } from '../engine/port.ts';
import type { AuditedRequest } from '../handle/audited.ts';
import { RequestIds } from '../engine/wire.ts';
import { writeCorsHeaders, type CorsPolicy } from './cors.ts';
import { Drain } from './drain.ts';
import { errorBody, errorHeaders } from './envelope.ts';

/** What every reply needs to know about its request, read before the engine's request object dies. */
export interface ReplyTarget {
  readonly res: EngineResponse;
  readonly requestId: string;
  /** The request's Origin when CORS applies to it, else ''. */
  readonly origin: string;
  /** Told the status of the reply when the request is audited (docs/api.md audit rows). */
  readonly audit?: { replied(status: number): void } | undefined;
  /** The request's metrics series (-1: not counted) and when its handler took it. */
  readonly series?: number;
  readonly startedAt?: number;
}

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

/** What one server's replies depend on, fixed when it starts. */
export interface ReplySettings {
  readonly cors: CorsPolicy;
  readonly log: Logger;
  /** Where answers are counted (a no-op when metrics are off). */
  readonly metrics: RequestMetrics;
  readonly access: AccessLog;
}

/** Status lines and the headers of every answer, encoded once (see EncodedText). */
const STATUS_LINE: Readonly<Record<number, EncodedText>> = Object.fromEntries(
  Object.entries(STATUS_TEXT).map(([code, text]) => [code, encodedText(`${code} ${text}`)]),
);
const CONTENT_TYPE = encodedText('Content-Type');
const JSON_TYPE = encodedText('application/json');
const REQUEST_ID = encodedText('X-Request-Id');
const REVISION = encodedText('X-Authz-Revision');

/**
 * The one writer of a server's responses: every answer goes through {@link send}, which counts it,
 * logs it when sampled, tells its audit row the status, and writes the envelope with its CORS
 * headers, closing the connection once shutdown has begun ({@link drain}).
 */
export class Reply {
  readonly cors: CorsPolicy;
  /** Requests received and in flight, for shutdown; its start makes every answer close its connection. */
  readonly drain: Drain;
  readonly #log: Logger;
  readonly #metrics: RequestMetrics;
  readonly #access: AccessLog;
  readonly #ids = new RequestIds();
  #closing = false;
  /** The last revision written as a header, and its text: most answers repeat it. */
  #revision = -1;
  #revisionText = encodedText('');

  constructor(settings: ReplySettings) {
    this.cors = settings.cors;
    this.#log = settings.log;
    this.#metrics = settings.metrics;
    this.#access = settings.access;
    this.drain = new Drain(() => {
      this.#closing = true;
    });
  }

  /** Reads what the reply needs from `req`; call during the handler's synchronous part. */
  target<T extends TenantId | ''>(res: EngineResponse, req: EngineRequest, tenant: T, series = -1): RequestTarget & { readonly tenant: T } {
    return {
      res,
      requestId: this.#ids.of(req.getHeader('x-request-id')),
      origin: this.cors.enabled ? req.getHeader('origin') : '',
      tenant,
      aborted: false,
      audit: undefined,
      series,
      startedAt: series < 0 ? 0 : performance.now(),
    };
  }

  /**
   * Writes a complete response. The caller corks when it is not inside the uWS handler's own
   * synchronous part (see {@link corked}).
   */
  send(
    t: ReplyTarget,
    status: number,
    body: string | Uint8Array,
    revision: number | undefined,
    extra?: ReadonlyArray<readonly [string, string]>,
    closeConnection = false,
  ): void {
    const res = t.res;
    this.#head(t, status, JSON_TYPE, revision);
    if (extra !== undefined) for (const [k, v] of extra) res.writeHeader(k, v);
    res.end(body, closeConnection || this.#closing);
  }

  /**
   * A complete response of a type other than JSON (the console's files, docs/console.md), with
   * headers of its own; counted and logged as {@link send} does.
   */
  sendTyped(t: ReplyTarget, status: number, contentType: string, body: string | Uint8Array, extra: ReadonlyArray<readonly [string, string]>): void {
    this.#head(t, status, contentType, undefined);
    for (const [k, v] of extra) t.res.writeHeader(k, v);
    t.res.end(body, this.#closing);
  }

  /**
   * Starts a streamed answer (the NDJSON export, docs/api.md §17): counted, logged and audited
   * as {@link send} does, its status and headers written; the caller then writes the body with
   * the engine's `write` and ends it (or closes the connection when it cannot be completed).
   */
  openStream(t: ReplyTarget, status: number, contentType: string, revision: number): void {
    this.#head(t, status, contentType, revision);
    if (this.#closing) t.res.writeHeader('Connection', 'close');
  }

  /** An answer's accounting (audit, metrics, access log) and its status line and common headers. */
  #head(t: ReplyTarget, status: number, contentType: string | EncodedText, revision: number | undefined): void {
    const res = t.res;
    if (t.audit !== undefined) t.audit.replied(status);
    const series = t.series ?? -1;
    if (series >= 0) this.#metrics.answered(series, status, (performance.now() - (t.startedAt as number)) / 1000);
    this.#access.answered(series, status, t.startedAt, t.requestId);
    res.writeStatus(STATUS_LINE[status] ?? String(status));
    res.writeHeader(CONTENT_TYPE, contentType);
    res.writeHeader(REQUEST_ID, t.requestId);
    if (revision !== undefined) res.writeHeader(REVISION, revision === this.#revision ? this.#revisionText : this.#revisionHeader(revision));
    writeCorsHeaders(res, this.cors, t.origin);
  }

  #revisionHeader(revision: number): EncodedText {
    this.#revision = revision;
    this.#revisionText = encodedText(String(revision));
    return this.#revisionText;
  }

  /** A 200 answer to HEAD: the headers of the GET answer, without its body. */
  head(t: ReplyTarget, extra?: ReadonlyArray<readonly [string, string]>): void {
    const res = t.res;
    res.writeStatus(STATUS_LINE[200] as EncodedText);
    res.writeHeader(CONTENT_TYPE, JSON_TYPE);
    res.writeHeader(REQUEST_ID, t.requestId);
    if (extra !== undefined) for (const [k, v] of extra) res.writeHeader(k, v);
    writeCorsHeaders(res, this.cors, t.origin);
    res.endWithoutBody();
  }

  /** Answers `err` (its status, message and extra headers); corks only if the caller does. */
  error(t: ReplyTarget, err: AppError, revision: number | undefined, closeConnection = false): void {
    this.send(t, err.status, errorBody(err.status, err.message), revision, errorHeaders(err), closeConnection);
  }

  /** 401 with `WWW-Authenticate: Bearer`: no valid credential (docs/api.md). */
  unauthenticated(res: EngineResponse, req: EngineRequest, series: number): void {
    this.error(this.target(res, req, '', series), appError('ERR_AUTH_UNAUTHENTICATED'), undefined);
  }

  /** Logs an unexpected failure with its stack and answers 500 naming the request id. */
  internal(t: RequestTarget, err: unknown): void {
    this.#log.error('request failed', { request_id: t.requestId, err });
    const e = appError('ERR_INTERNAL', `internal error (request ${t.requestId})`);
    corked(t, () => this.error(t, e, undefined));
  }

  /** A synchronous handler threw: its request object may be gone, so nothing more is read from it. */
  readonly crashed = (res: EngineResponse, err: unknown): void => {
    this.internal({ res, requestId: this.#ids.of(''), origin: '', tenant: '', aborted: false, audit: undefined, series: -1, startedAt: 0 }, err);
  };
}

/** Runs `fn` corked, unless the client went away meanwhile. */
export function corked(t: ReplyTarget & { aborted: boolean }, fn: () => void): void {
  if (t.aborted) return;
  t.res.cork(fn);
}
