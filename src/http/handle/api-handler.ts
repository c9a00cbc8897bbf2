import type { TenantGraph } from '../../authz/graph.ts';
import type { NameField } from '../../authz/names.ts';
import { UNKNOWN_CLIENT, type TenantCache } from '../../cache/index.ts';
import { AppError, appError } from '../../errors/index.ts';
import type { Answers } from './answers.ts';
import { AuditedRequest, type AuditSink } from './audited.ts';
import type { BodyReader, BodyResult } from '../input/body.ts';
import { CapturedRequest } from '../input/captured-request.ts';
import type { Credentials, Principal } from '../input/credentials.ts';
import type { Drain } from '../reply/drain.ts';
import { peerAddress } from '../engine/peer-address.ts';
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
import type { SlowPath } from './slow-path.ts';
import { seriesOf } from '../api/series.ts';
import type { RequestMetrics } from '../../metrics/requests.ts';

export interface ApiParts {
  readonly credentials: Credentials;
  readonly cache: TenantCache;
  readonly body: BodyReader;
  readonly answers: Answers;
  readonly reply: Reply;
  readonly slow: SlowPath;
  readonly drain: Drain;
  readonly audit: AuditSink;
  /** AUTH_AUDIT_CHECKS: reads are audited too (writes always are). */
  readonly auditReads: boolean;
  readonly metrics: RequestMetrics;
}

/** What depends on the route alone, decided once. */
interface RoutePlan {
  readonly route: Route;
  /** The route when it is answered from the tenant graph, in memory. */
  readonly fromGraph: GraphRoute | undefined;
  readonly paged: boolean;
  readonly log: boolean;
  /** has_permission: its two names are decoded into buffers and looked up from there (`#serveSpelled`). */
  readonly spelled: HasPermissionRoute | undefined;
  readonly access: 'read' | 'write' | 'key';
  /** The audit row's action, or undefined when requests of this route are not audited. */
  readonly action: string | undefined;
  /** Its metrics series. */
  readonly series: number;
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
    const access = accessOf(route);
    const action = access !== 'read' || this.#p.auditReads ? auditActionOf(route) : undefined;
    const plan: RoutePlan = {
      route,
      fromGraph: isGraphRoute(route) ? route : undefined,
      paged: isPaged(route),
      log: route.kind === 'log',
      spelled: route.kind === 'has_permission' ? route : undefined,
      access,
      action,
      series: seriesOf(route),
    };
    return (res, req) => {
      const principal = this.#p.credentials.known(req.getHeader('authorization'));
      if (principal !== undefined) this.#serve(plan, res, req, principal, undefined);
      else this.#unknownCredential(plan, res, req);
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
    const t = this.#p.reply.target(res, req, principal.tenant, plan.series);
    if (plan.action !== undefined) t.audit = this.#audited(plan, t, req, principal);
    if (plan.spelled !== undefined && body === undefined && this.#serveSpelled(plan.spelled, t, req, principal)) return;
    const { route } = plan;
    const p: string[] = [];
    let query = NO_QUERY;
    let failure = scopeRefusal(plan.access, principal);
    if (failure === undefined) {
      try {
        for (let i = 0; i < route.params.length; i++) p.push(decodeName(route.params[i] as NameField, req.getParameter(i) ?? ''));
        query = parseQuery(req, plan.paged, plan.log);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failure = err;
      }
    }
    if (failure === undefined && route.body !== undefined) body ??= this.#p.body.read(res, req, route.body);
    else body = undefined;
    const g = this.#graphOf(principal);
    if (plan.fromGraph !== undefined && g !== undefined && failure === undefined && body === undefined && query.minRevision <= g.revision) {
      try {
        this.#p.answers.read(t, plan.fromGraph, g, p, query, undefined);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        this.#p.reply.error(t, err, g.revision);
      }
      return;
    }
    this.#p.slow.start(t, route, p, query, failure, body, principal);
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
    const g = this.#graphOf(principal);
    if (g !== undefined) this.#p.answers.hasPermission(t, route, g, g.checkSpelled(user, permission));
    else this.#p.slow.start(t, route, [user.text(), permission.text()], NO_QUERY, undefined, undefined, principal);
    return true;
  }

  /** The principal's graph when cached (or the empty client's), counted as a hit, a miss or an unknown client. */
  #graphOf(principal: Principal): TenantGraph | undefined {
    const g = principal.neverWrote === true ? UNKNOWN_CLIENT : this.#p.cache.get(principal.tenant);
    if (g === UNKNOWN_CLIENT) this.#p.metrics.unknownClient();
    else this.#p.metrics.cache(g !== undefined);
    return g;
  }

  /**
   * No key and no token verified before: 401, unless the credential may be a token. Then the
   * request is copied (and its body read) now, the token verified, and the request served.
   */
  #unknownCredential(plan: RoutePlan, res: EngineResponse, req: EngineRequest): void {
    const header = req.getHeader('authorization');
    if (!this.#p.credentials.mayBeToken(header)) return this.#unauthenticated(res, req, plan);
    const captured = new CapturedRequest(req, plan.route.params.length);
    const body = plan.route.body === undefined ? undefined : this.#p.body.read(res, req, plan.route.body);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const verified = this.#p.credentials.verify(header).then((principal) => {
      if (aborted) return;
      res.cork(() => (principal === undefined ? this.#unauthenticated(res, captured, plan) : this.#serve(plan, res, captured, principal, body)));
    });
    this.#p.drain.track(verified.catch((err: unknown) => this.#p.reply.crashed(res, err)));
  }

  #unauthenticated(res: EngineResponse, req: EngineRequest, plan: RoutePlan): void {
    this.#p.reply.unauthenticated(res, req, plan.series);
  }

  #audited(plan: RoutePlan, t: TenantTarget, req: EngineRequest, principal: Principal): AuditedRequest {
    const draft = { action: plan.action as string, resource: req.getUrl(), credential: principal.credential, requestId: t.requestId, ip: peerAddress(t.res) };
    return new AuditedRequest(principal.tenant, draft, this.#p.audit, auditCommitsWithChange(plan.route));
  }
}

/** The 403 of a credential whose scope does not allow the route (docs/api.md §3), else undefined. */
function scopeRefusal(access: RoutePlan['access'], principal: Principal): AppError | undefined {
  if (access === 'key' && principal.scope !== 'key') return appError('ERR_AUTH_TOKEN_CANNOT_MINT');
  if (access === 'write' && principal.scope === 'read') return appError('ERR_AUTH_READ_SCOPE');
  return undefined;
}
