import type { TenantGraph } from '../../authz/graph.ts';
import { jsonObjectOf } from '../../authzen/requests.ts';
import { AppError } from '../../errors/index.ts';
import { AuditedRequest } from './audited.ts';
import type { ApiParts } from './api-handler.ts';
import type { AuthzenAnswers } from './authzen-answers.ts';
import type { Collected } from '../input/body.ts';
import { CapturedRequest } from '../input/captured-request.ts';
import type { Principal } from '../input/credentials.ts';
import { peerAddress } from '../engine/peer-address.ts';
import type { EngineRequest, EngineResponse, Handler } from '../engine/port.ts';
import { parseQuery } from '../input/query.ts';
import { corked, type TenantTarget } from '../reply/reply.ts';
import type { AuthzenRoute } from '../api/authzen-routes.ts';

/** What the AuthZEN routes share with /api (the same credentials, cache, reply, audit), with their own answers. */
export interface AuthzenParts extends Omit<ApiParts, 'answers'> {
  readonly answers: AuthzenAnswers;
}

/** A request read and checked up to its graph: the JSON object to answer, or the error to answer with. */
type Prepared =
  | { readonly value: object; readonly minRevision: number; readonly error?: undefined }
  | { readonly error: AppError; readonly close: boolean; readonly minRevision: number };

/**
 * The engine handlers of the AuthZEN routes (docs/authzen.md): authenticated as /api, then 413,
 * then 400. Once the body is in and the client's graph is cached, the answer is written in the
 * engine's data callback itself: no promise and no await between the body and the decision.
 */
export class AuthzenHandler {
  readonly #p: AuthzenParts;

  constructor(parts: AuthzenParts) {
    this.#p = parts;
  }

  forRoute(route: AuthzenRoute, series: number): Handler {
    return (res, req) => {
      const header = req.getHeader('authorization');
      const principal = this.#p.credentials.known(header);
      if (principal !== undefined) return this.#serve(route, series, res, req, principal, undefined);
      if (!this.#p.credentials.mayBeToken(header)) return this.#p.reply.unauthenticated(res, req, series);
      this.#verifyThenServe(route, series, res, req, header);
    };
  }

  /** A token seen for the first time: the body is read while its signature is checked. */
  #verifyThenServe(route: AuthzenRoute, series: number, res: EngineResponse, req: EngineRequest, header: string): void {
    const captured = new CapturedRequest(req, 0);
    // Kept past the data callback: the bytes are copied out of the engine's memory.
    const body = new Promise<Collected>((resolve) =>
      this.#p.body.collect(res, req, (b) => resolve(b.error === undefined ? { bytes: Buffer.from(b.bytes) } : b)),
    );
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const verified = this.#p.credentials.verify(header).then((principal) => {
      if (aborted) return;
      res.cork(() =>
        principal === undefined ? this.#p.reply.unauthenticated(res, captured, series) : this.#serve(route, series, res, captured, principal, body),
      );
    });
    this.#p.drain.track(verified.catch((err: unknown) => this.#p.reply.crashed(res, err)));
  }

  #serve(route: AuthzenRoute, series: number, res: EngineResponse, req: EngineRequest, principal: Principal, pending: Promise<Collected> | undefined): void {
    const t = this.#p.reply.target(res, req, principal.tenant, series);
    if (this.#p.auditReads) {
      const draft = { action: 'read', resource: req.getUrl(), credential: principal.credential, requestId: t.requestId, ip: peerAddress(res) };
      t.audit = new AuditedRequest(principal.tenant, draft, this.#p.audit, false);
    }
    const contentType = req.getHeader('content-type');
    let headerError: AppError | undefined;
    let minRevision = 0;
    try {
      minRevision = parseQuery(req, false, false).minRevision;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      headerError = err;
    }
    res.onAborted(() => {
      t.aborted = true;
    });
    this.#p.drain.enter();
    const onBody = (body: Collected): void => {
      try {
        this.#answer(route, t, prepare(body, contentType, headerError, minRevision));
      } catch (err) {
        this.#p.reply.internal(t, err);
      } finally {
        this.#p.drain.leave();
      }
    };
    if (pending === undefined) this.#p.body.collect(res, req, onBody);
    else void pending.then(onBody);
  }

  /** Answers from the cached graph at once when it is recent enough, else once it is loaded (or the wait fails). */
  #answer(route: AuthzenRoute, t: TenantTarget, prepared: Prepared): void {
    const g = this.#p.cache.get(t.tenant);
    this.#p.metrics.cache(g !== undefined);
    if (g !== undefined && prepared.minRevision <= g.revision) return corked(t, () => this.#reply(route, t, g, prepared));
    const later = this.#p.slow.graphAtLeast(t, prepared.minRevision).then((loaded) => {
      if (loaded instanceof AppError) return corked(t, () => this.#p.reply.error(t, loaded, this.#p.cache.get(t.tenant)?.revision));
      corked(t, () => this.#reply(route, t, loaded, prepared));
    });
    this.#p.drain.track(later.catch((err: unknown) => this.#p.reply.internal(t, err)));
  }

  #reply(route: AuthzenRoute, t: TenantTarget, g: TenantGraph, prepared: Prepared): void {
    if (prepared.error !== undefined) return this.#p.reply.error(t, prepared.error, g.revision, prepared.close);
    let text: string;
    try {
      text = this.#p.answers.answer(route, t.tenant, g, prepared.value);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return this.#p.reply.error(t, err, g.revision);
    }
    this.#p.reply.send(t, 200, text, g.revision);
  }
}

/** The body as a JSON object, or the first error in the order of docs/authzen.md (413, then 400). */
function prepare(body: Collected, contentType: string, headerError: AppError | undefined, minRevision: number): Prepared {
  // A refused request is answered at once, whatever revision it asked for.
  if (body.error !== undefined) return { error: body.error, close: body.close, minRevision: 0 };
  try {
    const value = jsonObjectOf(body.bytes, contentType);
    if (headerError !== undefined) throw headerError;
    return { value, minRevision };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { error: err, close: false, minRevision: 0 };
  }
}
