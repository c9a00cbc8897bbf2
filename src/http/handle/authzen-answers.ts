import stableStringify from 'fast-json-stable-stringify';
import type { TenantGraph } from '../../authz/graph.ts';
import { pageAfter } from '../../authz/page.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { Pdp } from '../../authzen/decide.ts';
import { parseRequest, type EvaluationRequest, type EvaluationsRequest, type SearchRequest } from '../../authzen/requests.ts';
import { AppError, appError } from '../../errors/index.ts';
import type { RequestMetrics } from '../../metrics/requests.ts';
import type { Cursors } from '../input/cursor.ts';
import type { AuthzenRoute, SearchRoute } from '../api/authzen-routes.ts';

/** A search page holds at most this many results, whatever the limit (docs/authzen.md). */
const MAX_PAGE = 1000;

/**
 * The 200 bodies of the AuthZEN routes, from a validated request and a graph: decisions from
 * prebuilt bytes, search pages signed with the same cursors as /api lists (bound to the client,
 * the route and the query, valid on every worker and instance).
 */
export class AuthzenAnswers {
  readonly #pdp: Pdp;
  readonly #cursors: Cursors;
  readonly #count: (allowed: boolean) => void;

  constructor(pdp: Pdp, cursors: Cursors, metrics: RequestMetrics) {
    this.#pdp = pdp;
    this.#cursors = cursors;
    this.#count = (allowed) => metrics.decision(allowed);
  }

  /** The body answering `value` (a JSON object) on `route`; throws a 400 AppError naming the field. */
  answer(route: AuthzenRoute, tenant: TenantId, g: TenantGraph, value: object): string {
    if (route.kind === 'evaluation') return this.#pdp.evaluation(g, parseRequest<EvaluationRequest>('evaluation', value), this.#count);
    if (route.kind === 'evaluations') {
      const req = parseRequest<EvaluationsRequest>('evaluations', value);
      const items = req.evaluations;
      // Without items the batch route is the single one (AuthZEN §7.1).
      if (items === undefined || items.length === 0) return this.#pdp.evaluation(g, parseRequest<EvaluationRequest>('evaluation', value), this.#count);
      return this.#pdp.evaluations(g, req, items, this.#count);
    }
    const req = parseRequest<SearchRequest>(route.schema, value);
    return this.#page(route, tenant, req, route.search(g, this.#pdp, req));
  }

  /** One page of a search's sorted results, after the token's last id. */
  #page(route: SearchRoute, tenant: TenantId, req: SearchRequest, list: readonly string[]): string {
    const query = req as unknown as Record<string, unknown>;
    const bound = [stableStringify(route.bound.map((k) => query[k] ?? null))];
    let limit = req.page?.limit;
    let after: string | undefined;
    const token = req.page?.token;
    if (token !== undefined && token !== '') {
      const opened = this.#open(tenant, route, bound, token);
      const kept = opened.limit;
      if (limit !== undefined && limit !== kept) throw appError('ERR_VALIDATION_BODY', 'page.limit must be the limit of the first page, or absent');
      limit = kept;
      after = opened.after;
    }
    const page = pageAfter(list, after, Math.min(limit ?? MAX_PAGE, MAX_PAGE));
    const next = page.after === undefined ? '' : this.#cursors.sign(tenant, route.id, bound, `${limit ?? ''}\n${page.after}`);
    const head = `{"page":{"next_token":${JSON.stringify(next)},"count":${page.items.length},"total":${list.length}},"results":[`;
    return `${head}${this.#results(route, req, page.items)}]}`;
  }

  /** The token's kept limit and last id; a 400 naming page.token when it is not this search's. */
  #open(tenant: TenantId, route: SearchRoute, bound: readonly string[], token: string): { limit: number | undefined; after: string } {
    let opened: string;
    try {
      opened = this.#cursors.open(tenant, route.id, bound, token);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      throw appError('ERR_VALIDATION_BODY', 'page.token is not a token of this search (same client, route, subject, action, resource and context)');
    }
    const nl = opened.indexOf('\n');
    const kept = opened.slice(0, nl);
    return { limit: kept === '' ? undefined : Number(kept), after: opened.slice(nl + 1) };
  }

  /** The results of a page, written straight from the ids (no object per result). */
  #results(route: SearchRoute, req: SearchRequest, ids: readonly string[]): string {
    if (route.finds === 'action') return ids.map((name) => `{"name":${JSON.stringify(name)}}`).join(',');
    const type = JSON.stringify(route.finds === 'subject' ? req.subject.type : req.resource.type);
    return ids.map((id) => `{"type":${type},"id":${JSON.stringify(id)}}`).join(',');
  }
}
