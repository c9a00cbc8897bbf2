import fastJson from 'fast-json-stringify';
import type { Change, ChangeRecord, WriteOutcome } from '../authz/changes.ts';
import type { TenantGraph } from '../authz/graph.ts';
import { decodeName } from '../authz/names.ts';
import { pageAfter } from '../authz/page.ts';
import type { TenantCache } from '../cache/index.ts';
import { BUILD } from '../config/build.ts';
import type { Config } from '../config/index.ts';
import { AppError, appError, fromWire } from '../errors/index.ts';
import type { Logger } from '../log/index.ts';
import { timestamp } from '../time/index.ts';
import { readBody, type BodyResult } from './body.ts';
import type { Engine, EngineRequest as HttpRequest, EngineResponse as HttpResponse, Method } from './engine/port.ts';
import { Credentials } from './credentials.ts';
import { Cursors } from './cursor.ts';
import { buildOpenApi } from './openapi.ts';
import {
  CORS_ALLOW_HEADERS, closeConnectionsAfterReply, corsPolicy, corked, errorBody, errorHeaders, requestIdOf, send, successPrefix, successTail,
  type ReplyTarget,
} from './reply.ts';
import { ROUTES, type ListRoute, type LogRoute, type Route } from './routes/index.ts';
import { data as dataSchemas, type DataSchemaName } from './schemas/index.ts';

/** What the HTTP layer needs from the rest of the worker; it never touches a store directly. */
export interface Backend {
  /**
   * Commits one change and reports the outcome, once the change is applied to every cached graph
   * of this instance (so any later request, on any connection, sees it).
   */
  write(tenant: string, change: Change): Promise<WriteOutcome>;
  /** The tenant's changelog after `since`, ascending, at most `limit` entries. */
  changes(tenant: string, since: number, limit: number): Promise<ChangeRecord[]>;
  /** The tenant's committed revision, read from the database. */
  revision(tenant: string): Promise<number>;
  /** Names of the dependencies that are not ready (empty when ready). */
  notReady(): Promise<string[]>;
}

export interface HttpDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly cache: TenantCache;
  readonly backend: Backend;
  readonly cursorSecret: Buffer;
  /** The HTTP engine, chosen once at start-up (AUTH_HTTP_ENGINE). */
  readonly engine: Engine;
}

export interface HttpServer {
  readonly port: number;
  /** Stops accepting, waits for requests in flight (at most `graceMs`), then closes connections. */
  close(graceMs: number): Promise<void>;
}

interface Pending extends ReplyTarget {
  aborted: boolean;
  readonly tenant: string;
}

const MIN_REVISION_WAIT_MS = 1000;
/** On shutdown, connections close after this long without a new request (and none in flight). */
const DRAIN_QUIET_MS = 100;
const MAX_LIMIT = 10_000;
/** Without `limit`, /api/changes answers in pages of this size (with next_cursor). */
const MAX_CHANGES = 10_000;

/** Builds the app with every route of the contract on the chosen engine and starts listening. */
export async function startHttpServer(deps: HttpDeps): Promise<HttpServer> {
  const { config, log, cache, backend } = deps;
  const cors = corsPolicy(config.AUTH_ALLOW_CORS, config.AUTH_CORS_ORIGINS);
  const credentials = new Credentials();
  const cursors = new Cursors(deps.cursorSecret);
  const serialize = Object.fromEntries(
    Object.entries(dataSchemas).map(([k, schema]) => [k, fastJson(schema as object)]),
  ) as Record<DataSchemaName, (v: unknown) => string>;
  const openapi = JSON.stringify(buildOpenApi(ROUTES));
  let inFlight = 0;
  /** /api requests received so far (shutdown waits until it stops moving). */
  let served = 0;

  const target = (res: HttpResponse, req: HttpRequest): ReplyTarget => ({
    res,
    requestId: requestIdOf(req.getHeader('x-request-id')),
    origin: cors.enabled ? req.getHeader('origin') : '',
  });

  const sendError = (t: ReplyTarget, err: AppError, revision: number | undefined, close = false): void =>
    send(t, cors, err.status, errorBody(err.status, err.message), revision, errorHeaders(err), close);

  const internal = (t: Pending, err: unknown): void => {
    log.error('request failed', { request_id: t.requestId, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    const e = appError('ERR_INTERNAL', `internal error (request ${t.requestId})`);
    corked(t, () => sendError(t, e, undefined));
  };

  // ---- reads, answered synchronously from a graph ------------------------------------------

  /** Prebuilt has_permission answers: only the timestamp varies. */
  const HAS_TRUE = `${successPrefix(200, 'OK')}{"has_permission":true},"timestamp":"`;
  const HAS_FALSE = `${successPrefix(200, 'OK')}{"has_permission":false},"timestamp":"`;

  const listPage = (t: ReplyTarget & { tenant: string }, route: ListRoute, g: TenantGraph, p: string[], limit: number | undefined, cursor: string | undefined): string => {
    const after = cursor === undefined ? undefined : cursors.open(t.tenant, route.id, p, cursor);
    const page = pageAfter(route.names(g, p), after, limit);
    const next = page.after === undefined ? undefined : cursors.sign(t.tenant, route.id, p, page.after);
    return successPrefix(200, route.message) + serialize[route.data](route.items(g, page.items)) + successTail(next);
  };

  /** A page of the tenant's changelog (read from the database, not the graph). */
  const changesPage = async (t: ReplyTarget & { tenant: string }, route: LogRoute, query: Query): Promise<string> => {
    let since = query.since;
    if (query.cursor !== undefined) since = Math.max(since, Number(cursors.open(t.tenant, route.id, [String(query.since)], query.cursor)));
    const want = query.limit ?? MAX_CHANGES;
    const records = await backend.changes(t.tenant, since, want + 1);
    const cut = records.length > want;
    const page = cut ? records.slice(0, want) : records;
    const last = page[page.length - 1];
    const next = cut && last !== undefined ? cursors.sign(t.tenant, route.id, [String(query.since)], String(last.revision)) : undefined;
    return successPrefix(200, route.message) + serialize[route.data](route.items(page)) + successTail(next);
  };

  /** Answers a read route from `g`; throws AppError for 4xx. */
  const answerRead = (t: ReplyTarget & { tenant: string }, route: Route, g: TenantGraph, p: string[], query: Query, body: unknown): void => {
    let text: string;
    if (route.id === 'has_permission') {
      text = (g.check(p[0] as string, p[1] as string) ? HAS_TRUE : HAS_FALSE) + timestamp() + '"}';
    } else if (route.kind === 'list') {
      text = listPage(t, route, g, p, query.limit, query.cursor);
    } else if (route.kind === 'read') {
      text = successPrefix(route.status, route.message) + serialize[route.data](route.run(g, p, body)) + successTail(undefined);
    } else {
      throw new Error(`answerRead called for ${route.id}`);
    }
    send(t, cors, route.status, text, g.revision);
  };

  // ---- the asynchronous path: hydration, bodies, writes, revision waits --------------------

  const slowPath = async (
    t: Pending, route: Route, p: string[], query: Query, failure: AppError | undefined, body: Promise<BodyResult> | undefined,
  ): Promise<void> => {
    let g = cache.get(t.tenant) ?? (await cache.load(t.tenant));
    if (failure !== undefined) return corked(t, () => sendError(t, failure, g.revision));
    let value: unknown;
    if (body !== undefined) {
      const b = await body;
      if (b.error !== undefined) return corked(t, () => sendError(t, b.error, (cache.get(t.tenant) ?? g).revision, b.close));
      value = b.value;
    }
    if (route.kind === 'write') {
      const outcome = await backend.write(t.tenant, route.change(p, value));
      if (!outcome.ok) return corked(t, () => sendError(t, fromWire(outcome.error), outcome.revision));
      const text = successPrefix(route.status, route.message) + serialize[route.data](route.result(outcome, p)) + successTail(undefined);
      return corked(t, () => send(t, cors, route.status, text, outcome.revision));
    }
    if (route.kind === 'log') {
      const text = await changesPage(t, route, query);
      return corked(t, () => send(t, cors, 200, text, (cache.get(t.tenant) ?? g).revision));
    }
    if (query.minRevision > g.revision) {
      const reached = await cache.waitFor(t.tenant, query.minRevision, MIN_REVISION_WAIT_MS, () => refresh(t.tenant));
      if (!reached) {
        const e = appError('ERR_CONSISTENCY_REVISION_TIMEOUT', { revision: query.minRevision, waitMs: MIN_REVISION_WAIT_MS });
        return corked(t, () => sendError(t, e, (cache.get(t.tenant) ?? g).revision));
      }
    }
    g = cache.get(t.tenant) ?? (await cache.load(t.tenant));
    const graph = g;
    corked(t, () => {
      try {
        answerRead(t, route, graph, p, query, value);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        sendError(t, err, graph.revision);
      }
    });
  };

  /** Picks up a change committed by another process: rehydrates when the database is ahead. */
  const refresh = async (tenant: string): Promise<void> => {
    const stored = await backend.revision(tenant);
    const g = cache.get(tenant);
    if (g === undefined || stored > g.revision) await cache.reload(tenant);
  };

  // ---- the /api handler ---------------------------------------------------------------------

  const apiHandler = (route: Route) => (res: HttpResponse, req: HttpRequest): void => {
    const t = target(res, req);
    const tenant = credentials.tenantOf(req.getHeader('authorization'));
    if (tenant === undefined) {
      sendError(t, appError('ERR_AUTH_UNAUTHENTICATED'), undefined);
      return;
    }
    const p: string[] = [];
    let query = NO_QUERY;
    let failure: AppError | undefined;
    try {
      for (let i = 0; i < route.params.length; i++) p.push(decodeName(route.params[i] as 'role', req.getParameter(i) ?? ''));
      query = parseQuery(req, route.kind === 'list' || route.kind === 'log', route.kind === 'log');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      failure = err;
    }
    const body = failure === undefined && route.body !== undefined ? readBody(res, req, config.AUTH_MAX_BODY_BYTES, route.body) : undefined;
    const g = cache.get(tenant);
    const fromMemory = route.kind === 'read' || route.kind === 'list';
    if (fromMemory && g !== undefined && failure === undefined && body === undefined && query.minRevision <= g.revision) {
      const ctx = { res, requestId: t.requestId, origin: t.origin, tenant };
      try {
        answerRead(ctx, route, g, p, query, undefined);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        sendError(t, err, g.revision);
      }
      return;
    }
    const pending: Pending = { res, requestId: t.requestId, origin: t.origin, tenant, aborted: false };
    res.onAborted(() => {
      pending.aborted = true;
    });
    inFlight++;
    slowPath(pending, route, p, query, failure, body)
      .catch((err: unknown) => {
        if (err instanceof AppError && err.status !== 500) return corked(pending, () => sendError(pending, err, cache.get(tenant)?.revision));
        internal(pending, err);
      })
      .finally(() => {
        inFlight--;
      });
  };

  // ---- registration -------------------------------------------------------------------------

  const app = deps.engine.createApp();
  const allowed = new Map<string, Set<string>>();
  /** A bug in a synchronous handler answers 500 instead of taking the process down. */
  const guard = (handler: (res: HttpResponse, req: HttpRequest) => void) => (res: HttpResponse, req: HttpRequest): void => {
    served++;
    try {
      handler(res, req);
    } catch (err) {
      internal({ res, requestId: requestIdOf(''), origin: '', tenant: '', aborted: false }, err);
    }
  };

  const on = (method: Method, pattern: string, handler: (res: HttpResponse, req: HttpRequest) => void): void => {
    app.on(method, pattern, guard(handler));
    allowed.set(pattern, (allowed.get(pattern) ?? new Set()).add(method));
  };

  for (const route of ROUTES) on(route.method, route.path, apiHandler(route));

  const plain = (status: number, body: string) => (res: HttpResponse, req: HttpRequest): void =>
    send(target(res, req), cors, status, body, undefined);
  on('GET', '/ping', (res, req) => plain(200, `{"message":"pong","status":"ok","timestamp":"${timestamp()}"}`)(res, req));
  on('HEAD', '/ping', (res, req) => {
    const t = target(res, req);
    res.writeStatus('200 OK');
    res.writeHeader('Content-Type', 'application/json');
    res.writeHeader('X-Request-Id', t.requestId);
    res.endWithoutBody();
  });
  on('GET', '/health', plain(200, '{"status":"ok"}'));
  on('GET', '/openapi.json', plain(200, openapi));
  const version = JSON.stringify({ name: BUILD.name, version: BUILD.version, node: process.version, engine: deps.engine.name });
  on('GET', '/version', plain(200, version));
  on('GET', '/ready', (res, req) => {
    const t: Pending = { ...target(res, req), tenant: '', aborted: false };
    res.onAborted(() => (t.aborted = true));
    void backend
      .notReady()
      .catch(() => ['database'])
      .then((missing) => {
        const status = missing.length === 0 ? 200 : 503;
        const body = missing.length === 0 ? '{"status":"ready"}' : JSON.stringify({ status: 'not ready', missing });
        corked(t, () => send(t, cors, status, body, undefined, status === 503 ? [['Retry-After', '1']] : undefined));
      });
  });

  const preflight = (res: HttpResponse, req: HttpRequest, methods: string): void => {
    const t = target(res, req);
    const extra: Array<[string, string]> = [];
    if (t.origin !== '' && cors.allowOrigin(t.origin) !== undefined) {
      extra.push(['Access-Control-Allow-Methods', methods], ['Access-Control-Allow-Headers', CORS_ALLOW_HEADERS], ['Access-Control-Max-Age', '600']);
    }
    send(t, cors, 204, '', undefined, extra);
  };

  for (const [pattern, methods] of allowed) {
    const allow = [...methods, 'OPTIONS'].join(', ');
    app.otherMethods(pattern, guard((res, req) => {
      if (req.getMethod() === 'options') return preflight(res, req, allow);
      const e = appError('ERR_HTTP_METHOD_NOT_ALLOWED', { method: req.getMethod().toUpperCase(), url: req.getUrl(), allow });
      send(target(res, req), cors, 405, errorBody(405, e.message), undefined, [['Allow', allow]]);
    }));
  }
  app.fallback(guard((res, req) => {
    if (req.getMethod() === 'options') return preflight(res, req, 'GET, POST, DELETE, OPTIONS');
    sendError(target(res, req), appError('ERR_HTTP_NOT_FOUND', { method: req.getMethod().toUpperCase(), url: req.getUrl() }), undefined);
  }));


  const listener = await app.listen(config.AUTH_SERVER_HOST, config.AUTH_SERVER_PORT);
  return {
    port: listener.port,
    close: (graceMs) =>
      new Promise<void>((done) => {
        listener.stopAccepting();
        closeConnectionsAfterReply();
        const deadline = Date.now() + graceMs;
        let seen = -1;
        // Requests already sent on open connections are still read and answered: connections
        // close once nothing is in flight and no request arrived for a quiet period.
        const check = (): void => {
          if ((inFlight === 0 && served === seen) || Date.now() >= deadline) {
            listener.closeConnections();
            done();
            return;
          }
          seen = served;
          setTimeout(check, DRAIN_QUIET_MS);
        };
        check();
      }),
  };
}

interface Query {
  readonly limit: number | undefined;
  readonly cursor: string | undefined;
  readonly minRevision: number;
  /** `?since=` of /api/changes. */
  readonly since: number;
}
const NO_QUERY: Query = { limit: undefined, cursor: undefined, minRevision: 0, since: 0 };

/** `?limit` and `?cursor` of list routes, and the `X-Authz-Min-Revision` header. */
function parseQuery(req: HttpRequest, list: boolean, log: boolean): Query {
  const minHeader = req.getHeader('x-authz-min-revision');
  let minRevision = 0;
  if (minHeader !== '') {
    if (!/^\d{1,15}$/.test(minHeader)) {
      throw appError('ERR_VALIDATION_HEADER', 'X-Authz-Min-Revision must be a non-negative integer');
    }
    minRevision = Number(minHeader);
  }
  if (!list || req.getQuery() === undefined) return minRevision === 0 ? NO_QUERY : { ...NO_QUERY, minRevision };
  const rawLimit = req.getQuery('limit') as string | undefined;
  const cursor = req.getQuery('cursor') as string | undefined;
  let limit: number | undefined;
  if (rawLimit !== undefined) {
    limit = /^\d{1,5}$/.test(rawLimit) ? Number(rawLimit) : 0;
    if (limit < 1 || limit > MAX_LIMIT) throw appError('ERR_VALIDATION_QUERY', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  let since = 0;
  const rawSince = log ? (req.getQuery('since') as string | undefined) : undefined;
  if (rawSince !== undefined) {
    if (!/^\d{1,15}$/.test(rawSince)) throw appError('ERR_VALIDATION_QUERY', 'since must be a non-negative integer');
    since = Number(rawSince);
  }
  return { limit, cursor, minRevision, since };
}
