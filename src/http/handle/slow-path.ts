import type { Change, WriteRefused } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import type { TenantCache } from '../../cache/index.ts';
import { AppError, appError, fromWire } from '../../errors/index.ts';
import type { Answers } from './answers.ts';
import type { Backend } from '../backend.ts';
import type { BodyResult } from '../input/body.ts';
import type { Drain } from '../reply/drain.ts';
import type { Query } from '../input/query.ts';
import { corked, type Reply, type TenantTarget } from '../reply/reply.ts';
import type { AuditRoute, GraphRoute, LogRoute, PreviewRoute, RevokeRoute, Route, TokenRoute, WorkflowRoute, WriteRoute } from '../api/route-types.ts';
import { dryRun } from './dry-run.ts';
import { DataAnswers } from './data-answers.ts';
import type { Logger } from '../../log/index.ts';
import type { WorkflowAnswers } from './workflow-answers.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { TokenAuthority, TokenScope } from '../../crypto/tokens.ts';
import type { Principal } from '../input/credentials.ts';
import { formatInstant } from '../../time/instant.ts';
import type { SpanStart, Tracer } from '../../trace/index.ts';

/** How tokens are issued: the signer (none without AUTH_JWT_SECRET_KEY) and the default lifetime. */
export interface TokenIssuing {
  readonly authority: TokenAuthority | undefined;
  readonly defaultTtlSeconds: number;
}

const MIN_REVISION_WAIT_MS = 1000;

/**
 * The asynchronous answers of /api: hydration, bodies, writes, the changelog and revision waits.
 * Every reply is corked (it is written outside the engine's handler) and skipped if the caller
 * went away.
 */
export class SlowPath {
  readonly #cache: TenantCache;
  readonly #backend: Backend;
  readonly #answers: Answers;
  readonly #reply: Reply;
  readonly #drain: Drain;
  readonly #tokens: TokenIssuing;
  readonly #workflows: WorkflowAnswers;
  readonly #data: DataAnswers;
  readonly #tracer: Tracer;

  constructor(
    cache: TenantCache,
    backend: Backend,
    answers: Answers,
    reply: Reply,
    drain: Drain,
    tokens: TokenIssuing,
    workflows: WorkflowAnswers,
    log: Logger,
    tracer: Tracer,
  ) {
    this.#tracer = tracer;
    this.#data = new DataAnswers(backend, answers, reply, log, (t, revision) => this.graphAtLeast(t, revision));
    this.#cache = cache;
    this.#backend = backend;
    this.#answers = answers;
    this.#reply = reply;
    this.#drain = drain;
    this.#tokens = tokens;
    this.#workflows = workflows;
  }

  /**
   * Takes over a request from its handler: call during the handler's synchronous part (onAborted
   * must be set there). With traces on, the request is a span, child of the caller's when its
   * `traceparent` header is given: everything the answer does is traced inside it.
   */
  start(
    t: TenantTarget,
    route: Route,
    p: string[],
    query: Query,
    failure: AppError | undefined,
    body: Promise<BodyResult> | undefined,
    principal: Principal,
    traceparent?: string,
  ): void {
    t.res.onAborted(() => {
      t.aborted = true;
    });
    if (!this.#tracer.enabled)
      return this.#drain.track(this.#answer(t, route, p, query, failure, body, principal).catch((err: unknown) => this.#failed(t, err)));
    // A failure is answered inside the span (its log line names the trace), then marks the span failed.
    const traced = (): Promise<void> =>
      this.#answer(t, route, p, query, failure, body, principal).catch((err: unknown) => {
        this.#failed(t, err);
        throw err;
      });
    this.#drain.track(this.#tracer.span(`${route.method} ${route.path}`, traced, requestSpan(route, traceparent)).catch(() => undefined));
  }

  async #answer(
    t: TenantTarget,
    route: Route,
    p: string[],
    query: Query,
    failure: AppError | undefined,
    body: Promise<BodyResult> | undefined,
    principal: Principal,
  ): Promise<void> {
    if (route.kind === 'write') return this.#writeAnswer(t, route, p, query, failure, body);
    if (route.kind === 'data' && failure === undefined) return this.#data.answer(t, route, query, body);
    const g = this.#cache.get(t.tenant) ?? (await this.#cache.load(t.tenant));
    if (failure !== undefined) return corked(t, () => this.#reply.error(t, failure, g.revision));
    let value: unknown;
    if (body !== undefined) {
      const b = await body;
      if (b.error !== undefined) return corked(t, () => this.#reply.error(t, b.error, this.#revisionOr(t, g), b.close));
      value = b.value;
    }
    switch (route.kind) {
      case 'log':
        return this.#changes(t, route, query, g);
      case 'audit':
        return this.#auditPage(t, route, query, g);
      case 'token':
        return this.#token(t, route, value, principal, g);
      case 'revoke':
        return this.#revoke(t, route, p, g);
      case 'workflow':
        return this.#workflow(t, route, p, query, value, g);
      case 'preview':
        return this.#preview(t, route, query, value, g);
      case 'data':
        return; // answered above, a failure before it below
      default:
        return this.#read(t, route, p, query, value, g);
    }
  }

  /**
   * A write hydrates nothing first: its outcome carries the revision. A refusal before it (a bad
   * body) reads the revision alone, from the cached graph or else the database.
   */
  async #writeAnswer(
    t: TenantTarget,
    route: WriteRoute,
    p: string[],
    query: Query,
    failure: AppError | undefined,
    body: Promise<BodyResult> | undefined,
  ): Promise<void> {
    if (failure !== undefined) {
      const revision = await this.#revisionNow(t.tenant);
      return corked(t, () => this.#reply.error(t, failure, revision));
    }
    let value: unknown;
    if (body !== undefined) {
      const b = await body;
      if (b.error !== undefined) {
        const revision = await this.#revisionNow(t.tenant);
        return corked(t, () => this.#reply.error(t, b.error, revision, b.close));
      }
      value = b.value;
    }
    return this.#write(t, route, p, value, query.ifMatch);
  }

  async #write(t: TenantTarget, route: WriteRoute, p: string[], value: unknown, ifMatch: number | undefined): Promise<void> {
    let changes: readonly Change[];
    try {
      changes = route.changes(p, value, Date.now() * 1000);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const revision = await this.#revisionNow(t.tenant);
      return corked(t, () => this.#reply.error(t, err, revision));
    }
    const audit = t.audit === undefined ? undefined : { ...t.audit.draft, status: route.status };
    const outcome = await this.#backend.write(t.tenant, changes, audit, ifMatch);
    if (!outcome.ok) return corked(t, () => this.#reply.error(t, refusalOf(route, outcome), outcome.revision));
    const status = route.statusOf?.(outcome) ?? route.status;
    const text = this.#answers.written(route, status, outcome, p, changes);
    corked(t, () => this.#reply.send(t, status, text, outcome.revision));
  }

  async #changes(t: TenantTarget, route: LogRoute, query: Query, g: TenantGraph): Promise<void> {
    const text = await this.#answers.changesPage(t, route, query);
    corked(t, () => this.#reply.send(t, 200, text, this.#revisionOr(t, g)));
  }

  async #auditPage(t: TenantTarget, route: AuditRoute, query: Query, g: TenantGraph): Promise<void> {
    const text = await this.#answers.auditPage(t, route, query);
    corked(t, () => this.#reply.send(t, 200, text, this.#revisionOr(t, g)));
  }

  /** Schedules and runs (docs/api.md §6): read and written in the database; the revision is not theirs to change. */
  async #workflow(t: TenantTarget, route: WorkflowRoute, p: string[], query: Query, value: unknown, g: TenantGraph): Promise<void> {
    const text = await this.#workflows.answer(t, route, p, query, value);
    corked(t, () => this.#reply.send(t, route.status, text, this.#revisionOr(t, g)));
  }

  /** POST /api/dry-run (docs/api.md §12.3): from the graph, at its revision (at least X-Authz-Min-Revision), storing nothing. */
  async #preview(t: TenantTarget, route: PreviewRoute, query: Query, value: unknown, loaded: TenantGraph): Promise<void> {
    const g = await this.graphAtLeast(t, query.minRevision, loaded);
    if (g instanceof AppError) return corked(t, () => this.#reply.error(t, g, this.#revisionOr(t, loaded)));
    const data = await dryRun(value, g, () => this.#cache.get(t.tenant) ?? g);
    const text = this.#answers.envelope(route, data);
    corked(t, () => this.#reply.send(t, route.status, text, data.revision));
  }

  /** POST /api/token (docs/api.md §3): the caller is a client key (checked with the scopes). */
  async #token(t: TenantTarget, route: TokenRoute, value: unknown, principal: Principal, g: TenantGraph): Promise<void> {
    const authority = this.#tokens.authority;
    if (authority === undefined) return corked(t, () => this.#reply.error(t, appError('ERR_AUTH_TOKENS_OFF'), this.#revisionOr(t, g)));
    const asked = (value ?? {}) as { scope?: TokenScope; ttl_seconds?: number };
    const issued = await this.#tracer.span('token.issue', async () => {
      const signed = await authority.issue(principal.tenant, asked.scope ?? 'write', asked.ttl_seconds ?? this.#tokens.defaultTtlSeconds);
      // Recorded before it is handed out, so that it can be revoked from its first use on.
      await this.#backend.recordToken(principal.tenant, signed.jti, signed.expiresAtMs);
      return signed;
    });
    const text = this.#answers.token(route, issued);
    corked(t, () => this.#reply.send(t, route.status, text, this.#revisionOr(t, g)));
  }

  /**
   * DELETE /api/token/{jti} (docs/api.md §3): stored with its audit row, then known to every worker
   * and instance, then answered; the client's revision does not move.
   */
  async #revoke(t: TenantTarget, route: RevokeRoute, p: string[], g: TenantGraph): Promise<void> {
    if (this.#tokens.authority === undefined) return corked(t, () => this.#reply.error(t, appError('ERR_AUTH_TOKENS_OFF'), this.#revisionOr(t, g)));
    if (t.audit === undefined) throw new Error('a revocation is always audited');
    const jti = p[0] as string;
    const until = await this.#backend.revokeToken(t.tenant, jti, t.audit.row(route.status));
    if (until === undefined) return corked(t, () => this.#reply.error(t, appError('ERR_AUTH_TOKEN_NOT_FOUND', { jti }), this.#revisionOr(t, g)));
    const text = this.#answers.envelope(route, { jti, revoked_until: formatInstant(until * 1000) });
    corked(t, () => this.#reply.send(t, route.status, text, this.#revisionOr(t, g)));
  }

  /** A read that needed a hydration or a newer revision (`X-Authz-Min-Revision`) first. */
  async #read(t: TenantTarget, route: GraphRoute, p: string[], query: Query, body: unknown, loaded: TenantGraph): Promise<void> {
    const g = await this.graphAtLeast(t, query.minRevision, loaded);
    if (g instanceof AppError) return corked(t, () => this.#reply.error(t, g, this.#revisionOr(t, loaded)));
    corked(t, () => {
      try {
        this.#answers.read(t, route, g, p, query, body);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        this.#reply.error(t, err, g.revision);
      }
    });
  }

  /**
   * The tenant's graph at `minRevision` or newer (`X-Authz-Min-Revision`, docs/api.md §9), waiting
   * for it up to a second; the 400 to answer when the database has not reached it, the 503 when it
   * does not come in time. `loaded`: a graph already in
   * hand, else the cached one (loaded when missing).
   */
  async graphAtLeast(t: TenantTarget, minRevision: number, loaded?: TenantGraph): Promise<TenantGraph | AppError> {
    const current = loaded ?? this.#cache.get(t.tenant) ?? (await this.#cache.load(t.tenant));
    if (minRevision > current.revision) {
      // The database's revision first: above it, no state can ever answer, and waiting would turn
      // a client's wrong revision into a 503 that counts against the service (docs/api.md §9).
      const stored = await this.#backend.revision(t.tenant);
      if (stored < minRevision) return appError('ERR_CONSISTENCY_REVISION_AHEAD', { revision: minRevision, current: stored });
      const reached = await this.#cache.waitFor(t.tenant, minRevision, MIN_REVISION_WAIT_MS, () => this.#refresh(t.tenant));
      if (!reached) return appError('ERR_CONSISTENCY_REVISION_TIMEOUT', { revision: minRevision, waitMs: MIN_REVISION_WAIT_MS });
    }
    return this.#cache.get(t.tenant) ?? (await this.#cache.load(t.tenant));
  }

  /** Picks up a change committed by another process: rehydrates when the database is ahead. */
  async #refresh(tenant: TenantId): Promise<void> {
    const stored = await this.#backend.revision(tenant);
    const g = this.#cache.get(tenant);
    if (g === undefined || stored > g.revision) await this.#cache.reload(tenant);
  }

  /** A 4xx thrown on the way is the answer; anything else is a 500. */
  #failed(t: TenantTarget, err: unknown): void {
    if (err instanceof AppError && err.status !== 500) return corked(t, () => this.#reply.error(t, err, this.#cache.get(t.tenant)?.revision));
    this.#reply.internal(t, err);
  }

  /** The revision of the tenant's cached graph, else the database's (no hydration). */
  async #revisionNow(tenant: TenantId): Promise<number> {
    return this.#cache.get(tenant)?.revision ?? (await this.#backend.revision(tenant));
  }

  /** The revision of the tenant's cached graph now, else of the one this request loaded. */
  #revisionOr(t: TenantTarget, loaded: TenantGraph): number {
    return (this.#cache.get(t.tenant) ?? loaded).revision;
  }
}

/** A request's span: the route's template and id (never its path, which holds names), under the caller's trace. */
function requestSpan(route: Route, traceparent: string | undefined): SpanStart {
  const attributes = { 'http.request.method': route.method, 'http.route': route.path, 'rbac.route': route.id };
  return traceparent === undefined ? { kind: 'server', attributes } : { kind: 'server', attributes, traceparent };
}

/**
 * The error a refused write answers: the store's, and for an item of a batch its position first
 * (docs/api.md §12.2: `writes[i]` and its reason).
 */
function refusalOf(route: WriteRoute, refused: WriteRefused): AppError {
  const error = fromWire(refused.error);
  if (route.id !== 'writes' || refused.index === undefined) return error;
  return new AppError(error.code, `writes[${refused.index}]: ${error.message}`);
}
