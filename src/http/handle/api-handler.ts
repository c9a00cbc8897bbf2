import type { NameField } from '../../authz/names.ts';
import { AppError } from '../../errors/index.ts';
import type { Answers } from './answers.ts';
import type { BodyReader, BodyResult } from '../input/body.ts';
import { readImport } from '../input/import-body.ts';
import type { Credentials, Principal } from '../input/credentials.ts';
import type { EngineRequest, EngineResponse, Handler } from '../engine/port.ts';
import { decodeName, SpelledName } from '../input/path-names.ts';
import { NO_QUERY, parseQuery } from '../input/query.ts';
import type { Reply, TenantTarget } from '../reply/reply.ts';
import {
  accessOf,
  auditActionOf,
  auditCommitsWithChange,
  isGraphRoute,
  isPaged,
  type GraphRoute,
  type HasPermissionRoute,
  type Route,
} from '../api/route-types.ts';
import { scopeRefusal, type Gate, type Prelude, type Serve } from './prelude.ts';
import type { SlowPath } from './slow-path.ts';
import { seriesOf } from '../api/series.ts';

export interface ApiParts {
  /** Who is asking, what they may do, the target and its audit draft, the graph: shared with AuthZEN. */
  readonly prelude: Prelude;
  readonly credentials: Credentials;
  readonly body: BodyReader;
  /** POST /api/import's bodies: NDJSON up to AUTH_IMPORT_MAX_BYTES (docs/api.md §17). */
  readonly importBody: BodyReader;
  readonly answers: Answers;
  readonly reply: Reply;
  readonly slow: SlowPath;
  /** Traces on: a request that goes to the slow path hands it its `traceparent` header. */
  readonly traced: boolean;
}

/** What depends on the route alone, decided once. */
interface RoutePlan {
  readonly route: Route;
  readonly gate: Gate;
  /** The route when it is answered from the tenant graph, in memory. */
  readonly fromGraph: GraphRoute | undefined;
  readonly paged: boolean;
  readonly log: boolean;
  /** A write: reads `If-Match`. */
  readonly write: boolean;
  /** has_permission: its two names are decoded into buffers and looked up from there (`#serveSpelled`). */
  readonly spelled: HasPermissionRoute | undefined;
}

/** The engine handlers of the /api routes. */
export class ApiHandler {
  readonly #p: ApiParts;
  /** has_permission's user and permission, decoded in place: reused by every request. */
  readonly #user = new SpelledName();
  readonly #permission = new SpelledName();

  constructor(parts: ApiParts) {
    this.#p = parts;
  }

  forRoute(route: Route): Handler {
    const plan: RoutePlan = {
      route,
      gate: this.#p.prelude.gate(seriesOf(route), accessOf(route), auditActionOf(route), auditCommitsWithChange(route), route.params.length),
      fromGraph: isGraphRoute(route) ? route : undefined,
      paged: isPaged(route),
      log: route.kind === 'log',
      write: route.kind === 'write' || route.id === 'client.import',
      spelled: route.kind === 'has_permission' ? route : undefined,
    };
    // A token seen for the first time: the body is read while it is verified, then served.
    const early = (res: EngineResponse, req: EngineRequest): Promise<BodyResult> | undefined => this.#readBody(route, res, req);
    const serve: Serve<Promise<BodyResult> | undefined> = (res, req, principal, body) => this.#serve(plan, res, req, principal, body);
    return (res, req) => {
      const principal = this.#p.credentials.known(req.getHeader('authorization'));
      if (principal !== undefined) this.#serve(plan, res, req, principal, undefined);
      else this.#p.prelude.unknownCredential(plan.gate, res, req, early, serve);
    };
  }

  /**
   * An authenticated request. Everything is read from `req` here, synchronously (the engine's
   * request object dies after). The hot path, a read of a cached graph, is answered in this call:
   * no await, one object (the target) and the parameters' array per request; the rest goes to
   * the slow path. `body` is the body already being read (a request answered after verifying its
   * token), else it is read here.
   */
  #serve(plan: RoutePlan, res: EngineResponse, req: EngineRequest, principal: Principal, body: Promise<BodyResult> | undefined): void {
    const t = this.#p.prelude.target(plan.gate, res, req, principal);
    if (plan.spelled !== undefined && body === undefined && this.#serveSpelled(plan.spelled, t, req, principal)) return;
    const { route } = plan;
    const p: string[] = [];
    let query = NO_QUERY;
    let failure = scopeRefusal(plan.gate.access, principal);
    if (failure === undefined) {
      try {
        for (let i = 0; i < route.params.length; i++) p.push(decodeName(route.params[i] as NameField, req.getParameter(i) ?? ''));
        query = parseQuery(req, plan.paged, plan.log, plan.write);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failure = err;
      }
    }
    if (failure === undefined) body ??= this.#readBody(route, res, req);
    else body = undefined;
    const g = this.#p.prelude.graphOf(principal);
    if (plan.fromGraph !== undefined && g !== undefined && failure === undefined && body === undefined && query.minRevision <= g.revision) {
      try {
        this.#p.answers.read(t, plan.fromGraph, g, p, query, undefined);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        this.#p.reply.error(t, err, g.revision);
      }
      return;
    }
    this.#p.slow.start(t, route, p, query, failure, body, principal, this.#p.traced ? req.getHeader('traceparent') : undefined);
  }

  /** Starts reading the route's body, if it takes one: JSON checked against its schema, or an import's NDJSON. */
  #readBody(route: Route, res: EngineResponse, req: EngineRequest): Promise<BodyResult> | undefined {
    if (route.id === 'client.import') return readImport(this.#p.importBody, res, req);
    return route.body === undefined ? undefined : this.#p.body.read(res, req, route.body);
  }

  /**
   * has_permission with two valid names and no revision to wait for, the hot path's hot path: the
   * names are decoded into the handler's buffers and looked up from there, so that an answer from
   * a cached graph builds no string. False (nothing done but reading) when the request needs the
   * general way, which then reads it again and says what is wrong with it.
   */
  #serveSpelled(route: HasPermissionRoute, t: TenantTarget, req: EngineRequest, principal: Principal): boolean {
    const user = this.#user;
    const permission = this.#permission;
    if (!user.read(req.getParameter(0) ?? '') || !permission.read(req.getParameter(1) ?? '') || req.getHeader('x-authz-min-revision') !== '') return false;
    const g = this.#p.prelude.graphOf(principal);
    if (g !== undefined) this.#p.answers.hasPermission(t, route, g, g.checkSpelled(user, permission));
    else this.#p.slow.start(t, route, [user.text(), permission.text()], NO_QUERY, undefined, undefined, principal);
    return true;
  }
}
