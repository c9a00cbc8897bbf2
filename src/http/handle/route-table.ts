import { appError } from '../../errors/index.ts';
import type { Drain } from '../reply/drain.ts';
import type { EngineApp, EngineRequest, EngineResponse, Handler, Method } from '../engine/port.ts';
import { CORS_ALLOW_HEADERS } from '../reply/cors.ts';
import { errorBody } from '../reply/envelope.ts';
import type { Reply } from '../reply/reply.ts';
import { unknownSeries } from '../api/series.ts';

/** The metrics series of a request no route takes: `unknown` under /api, else not counted. */
const apiSeries = (req: EngineRequest): number => {
  const url = req.getUrl();
  return url === '/api' || url.startsWith('/api/') ? unknownSeries(req.getMethod()) : -1;
};

/**
 * Registers handlers on an engine app, each guarded (counted for the drain, a throw answers 500),
 * and remembers the methods of each pattern, so that {@link finish} can answer every other method
 * (405 with `Allow`, or a CORS preflight) and every unknown path (404).
 */
export class RouteTable {
  readonly #app: EngineApp;
  readonly #drain: Drain;
  readonly #reply: Reply;
  readonly #allowed = new Map<string, Set<string>>();
  /** Headers a pattern's 405 carries besides `Allow` (the console's CSP). */
  readonly #headersOf = new Map<string, ReadonlyArray<readonly [string, string]>>();

  constructor(app: EngineApp, drain: Drain, reply: Reply) {
    this.#app = app;
    this.#drain = drain;
    this.#reply = reply;
  }

  /** `headers`: what this pattern's 405 answers carry besides `Allow`. */
  on(method: Method, pattern: string, handler: Handler, headers?: ReadonlyArray<readonly [string, string]>): void {
    this.#app.on(method, pattern, this.#guard(handler));
    this.#allowed.set(pattern, (this.#allowed.get(pattern) ?? new Set()).add(method));
    if (headers !== undefined) this.#headersOf.set(pattern, headers);
  }

  /** Answers other methods and unknown paths; call once, after the last {@link on}. */
  finish(): void {
    for (const [pattern, methods] of this.#allowed) {
      const allow = [...methods, 'OPTIONS'].join(', ');
      const headers: ReadonlyArray<readonly [string, string]> = [['Allow', allow], ...(this.#headersOf.get(pattern) ?? [])];
      this.#app.otherMethods(
        pattern,
        this.#guard((res, req) => {
          if (req.getMethod() === 'options') return this.#preflight(res, req, allow);
          const e = appError('ERR_HTTP_METHOD_NOT_ALLOWED', { method: req.getMethod().toUpperCase(), url: req.getUrl(), allow });
          this.#reply.send(this.#reply.target(res, req, '', apiSeries(req)), 405, errorBody(405, e.message), undefined, headers);
        }),
      );
    }
    this.#app.fallback(
      this.#guard((res, req) => {
        if (req.getMethod() === 'options') return this.#preflight(res, req, 'GET, POST, PUT, DELETE, OPTIONS');
        const e = appError('ERR_HTTP_NOT_FOUND', { method: req.getMethod().toUpperCase(), url: req.getUrl() });
        this.#reply.error(this.#reply.target(res, req, '', apiSeries(req)), e, undefined);
      }),
    );
  }

  #guard(handler: Handler): Handler {
    return this.#drain.guard(handler, this.#reply.crashed);
  }

  /**
   * 204, always. The Access-Control-* headers only for an allowed origin (CORS on, origin listed
   * or `*`): an unlisted origin or CORS off gets none, so the browser blocks the request.
   */
  #preflight(res: EngineResponse, req: EngineRequest, methods: string): void {
    const t = this.#reply.target(res, req, '');
    const cors = this.#reply.cors;
    const allowed = t.origin !== '' && cors.allowOrigin(t.origin) !== undefined;
    this.#reply.send(
      t,
      204,
      '',
      undefined,
      allowed
        ? [
            ['Access-Control-Allow-Methods', methods],
            ['Access-Control-Allow-Headers', CORS_ALLOW_HEADERS],
            ['Access-Control-Max-Age', '600'],
          ]
        : undefined,
    );
  }
}
