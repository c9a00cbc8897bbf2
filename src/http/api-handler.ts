import type { NameField } from '../authz/names.ts';
import type { TenantCache } from '../cache/index.ts';
import { AppError, appError } from '../errors/index.ts';
import type { Answers } from './answers.ts';
import { readBody } from './body.ts';
import type { Credentials } from './credentials.ts';
import type { Handler } from './engine/port.ts';
import { decodeName } from './path-names.ts';
import { NO_QUERY, parseQuery } from './query.ts';
import type { Responder } from './responder.ts';
import type { Route } from './routes/index.ts';
import type { SlowPath } from './slow-path.ts';

export interface ApiParts {
  readonly credentials: Credentials;
  readonly cache: TenantCache;
  readonly maxBodyBytes: number;
  readonly answers: Answers;
  readonly responder: Responder;
  readonly slow: SlowPath;
}

/** The engine handlers of the /api routes. */
export class ApiHandler {
  readonly #credentials: Credentials;
  readonly #cache: TenantCache;
  readonly #maxBodyBytes: number;
  readonly #answers: Answers;
  readonly #responder: Responder;
  readonly #slow: SlowPath;

  constructor(parts: ApiParts) {
    this.#credentials = parts.credentials;
    this.#cache = parts.cache;
    this.#maxBodyBytes = parts.maxBodyBytes;
    this.#answers = parts.answers;
    this.#responder = parts.responder;
    this.#slow = parts.slow;
  }

  /**
   * The handler of one route. Everything is read from the request here, in the engine's
   * synchronous callback (its request object dies after). The hot path, a read of a cached graph,
   * is answered in this call: no await, one object (the target) and the parameters' array per
   * request; the rest goes to the slow path. What depends on the route alone is decided here once.
   */
  forRoute(route: Route): Handler {
    const fromMemory = route.kind === 'read' || route.kind === 'list';
    const paged = route.kind === 'list' || route.kind === 'log';
    const log = route.kind === 'log';
    const params = route.params;
    return (res, req) => {
      const tenant = this.#credentials.tenantOf(req.getHeader('authorization'));
      if (tenant === undefined) {
        this.#responder.error(this.#responder.target(res, req, ''), appError('ERR_AUTH_UNAUTHENTICATED'), undefined);
        return;
      }
      const t = this.#responder.target(res, req, tenant);
      const p: string[] = [];
      let query = NO_QUERY;
      let failure: AppError | undefined;
      try {
        for (let i = 0; i < params.length; i++) p.push(decodeName(params[i] as NameField, req.getParameter(i) ?? ''));
        query = parseQuery(req, paged, log);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failure = err;
      }
      const body = failure === undefined && route.body !== undefined ? readBody(res, req, this.#maxBodyBytes, route.body) : undefined;
      const g = this.#cache.get(tenant);
      if (fromMemory && g !== undefined && failure === undefined && body === undefined && query.minRevision <= g.revision) {
        try {
          this.#answers.read(t, route, g, p, query, undefined);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          this.#responder.error(t, err, g.revision);
        }
        return;
      }
      this.#slow.start(t, route, p, query, failure, body);
    };
  }
}
