import type { TenantGraph } from '../../authz/graph.ts';
import { jsonObjectOf } from '../../authzen/requests.ts';
import type { TenantCache } from '../../cache/index.ts';
import { AppError } from '../../errors/index.ts';
import type { AuthzenAnswers } from './authzen-answers.ts';
import type { BodyReader, Collected } from '../input/body.ts';
import type { Credentials, Principal } from '../input/credentials.ts';
import type { EngineRequest, EngineResponse, Handler } from '../engine/port.ts';
import { parseQuery } from '../input/query.ts';
import type { Drain } from '../reply/drain.ts';
import { corked, type Reply, type TenantTarget } from '../reply/reply.ts';
import type { AuthzenRoute } from '../api/authzen-routes.ts';
import type { Gate, Prelude, Serve } from './prelude.ts';
import type { SlowPath } from './slow-path.ts';

/** What the AuthZEN routes share with /api (the same prelude, credentials, body reader, reply and slow path), with their own answers. */
export interface AuthzenParts {
  readonly prelude: Prelude;
  readonly credentials: Credentials;
  readonly cache: TenantCache;
  readonly body: BodyReader;
  readonly answers: AuthzenAnswers;
  readonly reply: Reply;
  readonly slow: SlowPath;
  readonly drain: Drain;
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
    // Read only, never changed here: the audit rows (under AUTH_AUDIT_CHECKS) are `read`s recorded after the answer.
    const gate = this.#p.prelude.gate(series, 'read', 'read', false, 0);
    // A token seen for the first time: the body is read while it is verified, and kept past the
    // data callback (copied out of the engine's memory).
    const early = (res: EngineResponse, req: EngineRequest): Promise<Collected> =>
      new Promise<Collected>((resolve) => this.#p.body.collect(res, req, (b) => resolve(b.error === undefined ? { bytes: Buffer.from(b.bytes) } : b)));
    const serve: Serve<Promise<Collected>> = (res, req, principal, body) => this.#serve(route, gate, res, req, principal, body);
    return (res, req) => {
      const principal = this.#p.credentials.known(req.getHeader('authorization'));
      if (principal !== undefined) return this.#serve(route, gate, res, req, principal, undefined);
      this.#p.prelude.unknownCredential(gate, res, req, early, serve);
    };
  }

  #serve(route: AuthzenRoute, gate: Gate, res: EngineResponse, req: EngineRequest, principal: Principal, pending: Promise<Collected> | undefined): void {
    const t = this.#p.prelude.target(gate, res, req, principal);
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
        this.#answer(route, t, principal, prepare(body, contentType, headerError, minRevision));
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
  #answer(route: AuthzenRoute, t: TenantTarget, principal: Principal, prepared: Prepared): void {
    const g = this.#p.prelude.graphOf(principal);
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
