import type { TenantGraph } from '../../authz/graph.ts';
import { UNKNOWN_CLIENT, type TenantCache } from '../../cache/index.ts';
import { appError, type AppError } from '../../errors/index.ts';
import type { RequestMetrics } from '../../metrics/requests.ts';
import type { Access } from '../api/route-types.ts';
import { peerAddress } from '../engine/peer-address.ts';
import type { EngineRequest, EngineResponse } from '../engine/port.ts';
import { CapturedRequest } from '../input/captured-request.ts';
import type { Credentials, Principal } from '../input/credentials.ts';
import type { Drain } from '../reply/drain.ts';
import type { Reply, TenantTarget } from '../reply/reply.ts';
import { AuditedRequest, type AuditSink } from './audited.ts';

/** What the authenticated prelude needs: the same for the /api and the AuthZEN handlers. */
export interface PreludeParts {
  readonly credentials: Credentials;
  readonly cache: TenantCache;
  readonly reply: Reply;
  readonly drain: Drain;
  readonly audit: AuditSink;
  /** AUTH_AUDIT_CHECKS: reads are audited too (writes always are). */
  readonly auditReads: boolean;
  readonly metrics: RequestMetrics;
}

/** What the prelude asks of a route, decided once per route ({@link Prelude.gate}). */
export interface Gate {
  /** Its metrics series. */
  readonly series: number;
  readonly access: Access;
  /** The audit row's action, or undefined when requests of this route are not audited. */
  readonly action: string | undefined;
  /** A successful request's audit row commits in the store with its change, not after the answer. */
  readonly rowCommitsWithChange: boolean;
  /** How many path parameters the route has (copied when the request must outlive its handler). */
  readonly params: number;
}

/** A route's work once its caller is known; `req` may be a copy of the engine's request. */
export type Serve<B> = (res: EngineResponse, req: EngineRequest, principal: Principal, body: B) => void;

/**
 * The authenticated prelude of the /api and AuthZEN routes, written once: who is asking (a key,
 * a token seen before, or a token verified now), what their credential may do, the request's
 * target with its audit draft, and the client's graph counted as a cache hit, a miss or an
 * unknown client. The handlers look the credential up themselves (`Credentials.known`, a memo)
 * and call {@link unknownCredential} only when it is not there, so that the hot path makes no
 * call through a function value.
 */
export class Prelude {
  readonly #p: PreludeParts;

  constructor(parts: PreludeParts) {
    this.#p = parts;
  }

  /** A route's gate: `action` is its audit action, kept when its requests are audited (every change; reads under AUTH_AUDIT_CHECKS). */
  gate(series: number, access: Access, action: string, rowCommitsWithChange: boolean, params: number): Gate {
    return { series, access, action: access !== 'read' || this.#p.auditReads ? action : undefined, rowCommitsWithChange, params };
  }

  /**
   * No key and no token verified before: 401, unless the credential may be a token. Then the
   * request is copied, `early` starts reading its body (it must be read in the engine's handler),
   * the token is verified, and `serve` is called, corked, with its principal.
   */
  unknownCredential<B>(gate: Gate, res: EngineResponse, req: EngineRequest, early: (res: EngineResponse, req: EngineRequest) => B, serve: Serve<B>): void {
    const header = req.getHeader('authorization');
    if (!this.#p.credentials.mayBeToken(header)) return this.#p.reply.unauthenticated(res, req, gate.series);
    const captured = new CapturedRequest(req, gate.params);
    const body = early(res, req);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const verified = this.#p.credentials.verify(header).then((principal) => {
      if (aborted) return;
      res.cork(() => (principal === undefined ? this.#p.reply.unauthenticated(res, captured, gate.series) : serve(res, captured, principal, body)));
    });
    this.#p.drain.track(verified.catch((err: unknown) => this.#p.reply.crashed(res, err)));
  }

  /** The request's target, with its audit draft when the route's requests are audited. */
  target(gate: Gate, res: EngineResponse, req: EngineRequest, principal: Principal): TenantTarget {
    const t = this.#p.reply.target(res, req, principal.tenant, gate.series);
    if (gate.action !== undefined) {
      const draft = { action: gate.action, resource: req.getUrl(), credential: principal.credential, requestId: t.requestId, ip: peerAddress(res) };
      t.audit = new AuditedRequest(principal.tenant, draft, this.#p.audit, gate.rowCommitsWithChange);
    }
    return t;
  }

  /** The principal's graph when cached (or the empty client's), counted as a hit, a miss or an unknown client. */
  graphOf(principal: Principal): TenantGraph | undefined {
    const g = principal.neverWrote === true ? UNKNOWN_CLIENT : this.#p.cache.get(principal.tenant);
    if (g === UNKNOWN_CLIENT) this.#p.metrics.unknownClient();
    else this.#p.metrics.cache(g !== undefined);
    return g;
  }
}

/** The 403 of a credential whose scope does not allow the route (docs/api.md §3), else undefined. */
export function scopeRefusal(access: Access, principal: Principal): AppError | undefined {
  if (access === 'key' && principal.scope !== 'key') return appError('ERR_AUTH_TOKEN_CANNOT_MINT');
  if (access === 'write' && principal.scope === 'read') return appError('ERR_AUTH_READ_SCOPE');
  return undefined;
}
