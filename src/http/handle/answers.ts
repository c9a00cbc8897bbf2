import fastJson from 'fast-json-stringify';
import type { Change, ChangeRecord, WriteCommitted } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import { pageAfter } from '../../authz/page.ts';
import type { Cursors } from '../input/cursor.ts';
import type { Query } from '../input/query.ts';
import { successPrefix, successTail } from '../reply/envelope.ts';
import { checkResultsJson, nameItemsJson, type CheckItem } from '../reply/name-json.ts';
import { TimestampedAnswer } from '../reply/prebuilt.ts';
import type { Reply, TenantTarget } from '../reply/reply.ts';
import type { AuditRoute, GraphRoute, HasPermissionRoute, ListRoute, LogRoute, Route, TokenRoute, WriteRoute } from '../api/route-types.ts';
import type { AuditEntry, AuditPosition } from '../../audit/record.ts';
import { appError } from '../../errors/index.ts';
import { wireWindow } from '../api/window-routes.ts';
import type { IssuedToken } from '../../crypto/tokens.ts';
import type { RequestMetrics } from '../../metrics/requests.ts';
import { data as dataSchemas, type DataSchemaName } from '../api/schemas.ts';
import type { TenantId } from '../../authz/tenant.ts';

/** Without `limit`, /api/changes answers in pages of this size (with next_cursor). */
const MAX_CHANGES = 10_000;

/** Reads a tenant's changelog after `since`, ascending, at most `limit` entries. */
export type ChangelogReader = (tenant: TenantId, since: number, limit: number) => Promise<ChangeRecord[]>;

/** Reads a tenant's audit rows after `after` (from the top when undefined), newest first by time then id, at most `limit`. */
export type AuditReader = (tenant: TenantId, after: AuditPosition | undefined, limit: number) => Promise<AuditEntry[]>;

/** Without `limit`, /api/audit answers in pages of this size (with next_cursor). */
const MAX_AUDIT = 10_000;

/**
 * The success bodies of /api routes, from serialisers compiled once at start-up: reads answered
 * from a graph, pages signed with cursors, write results and changelog pages.
 */
export class Answers {
  readonly #reply: Reply;
  readonly #cursors: Cursors;
  readonly #changelog: ChangelogReader;
  readonly #audit: AuditReader;
  readonly #metrics: RequestMetrics;
  readonly #serialize: Record<DataSchemaName, (v: unknown) => string>;
  /** has_permission's two answers, as bytes: only the timestamp varies. */
  readonly #hasTrue = new TimestampedAnswer(`${successPrefix(200, 'OK')}{"has_permission":true},"timestamp":"`);
  readonly #hasFalse = new TimestampedAnswer(`${successPrefix(200, 'OK')}{"has_permission":false},"timestamp":"`);

  constructor(reply: Reply, cursors: Cursors, changelog: ChangelogReader, audit: AuditReader, metrics: RequestMetrics) {
    this.#reply = reply;
    this.#cursors = cursors;
    this.#changelog = changelog;
    this.#audit = audit;
    this.#metrics = metrics;
    this.#serialize = Object.fromEntries(Object.entries(dataSchemas).map(([k, schema]) => [k, fastJson(schema as object)])) as Record<
      DataSchemaName,
      (v: unknown) => string
    >;
  }

  /** Answers a route read from `g`, uncorked (the caller corks outside the handler); throws AppError for 4xx. */
  read(t: TenantTarget, route: GraphRoute, g: TenantGraph, p: string[], query: Query, body: unknown): void {
    if (route.kind === 'has_permission') return this.hasPermission(t, route, g, g.check(p[0] as string, p[1] as string));
    this.#reply.send(t, route.status, this.#fromGraph(t, route, g, p, query, body), g.revision);
  }

  /** has_permission's answer, `allowed` already decided from `g`. */
  hasPermission(t: TenantTarget, route: HasPermissionRoute, g: TenantGraph, allowed: boolean): void {
    this.#metrics.decision(allowed);
    // Stamped with the time the handler took the request: a microsecond before now, one clock read fewer.
    this.#reply.send(t, route.status, (allowed ? this.#hasTrue : this.#hasFalse).at(t.startedAt), g.revision);
  }

  /** The body of a read from `g`, by the route's kind. */
  #fromGraph(t: TenantTarget, route: Exclude<GraphRoute, HasPermissionRoute>, g: TenantGraph, p: string[], query: Query, body: unknown): string {
    switch (route.kind) {
      case 'list':
        return this.#listPage(t, route, g, p, query.limit, query.cursor);
      case 'check':
        return successPrefix(route.status, route.message) + this.#checkBatch(g, body) + successTail(undefined);
      case 'decision': {
        const allowed = route.decide(g, p);
        // Counted in rbac_check_decisions_total (docs/operations.md §2), like has_permission's.
        this.#metrics.decision(allowed);
        const w = g.hasWindows ? route.window?.(g, p) : undefined;
        return this.envelope(route, { [route.field]: allowed, ...wireWindow(w?.notBefore, w?.expiresAt) });
      }
      case 'read':
        return this.envelope(route, route.run(g, p));
    }
  }

  /** POST /api/check's data: every check answered from `g` at its revision and counted. */
  #checkBatch(g: TenantGraph, body: unknown): string {
    const checks = (body as { checks?: CheckItem[] } | undefined)?.checks;
    if (checks === undefined) throw appError('ERR_VALIDATION_BODY', "body must have the key 'checks'");
    return checkResultsJson(checks, (user, permission) => {
      const allowed = g.check(user, permission);
      this.#metrics.decision(allowed);
      return allowed;
    });
  }

  /** The body of a committed write, answered with `status`. */
  written(route: WriteRoute, status: number, outcome: WriteCommitted, p: string[], asked: readonly Change[]): string {
    return successPrefix(status, route.message) + this.#serialize[route.data](route.result(outcome, p, asked)) + successTail(undefined);
  }

  /** A page of the tenant's changelog (read from the database, not the graph). */
  async changesPage(t: TenantTarget, route: LogRoute, query: Query): Promise<string> {
    const bound = [String(query.since)];
    let since = query.since;
    if (query.cursor !== undefined) since = Math.max(since, Number(this.#cursors.open(t.tenant, route.id, bound, query.cursor)));
    const want = query.limit ?? MAX_CHANGES;
    const records = await this.#changelog(t.tenant, since, want + 1);
    const cut = records.length > want;
    // A page ends with a whole revision (a write request's rows, which the store reads whole): the
    // next one starts after it.
    const lastRevision = records[want - 1]?.revision ?? 0;
    const page = cut ? records.filter((r) => r.revision <= lastRevision) : records;
    const last = page[page.length - 1];
    const next = cut && last !== undefined ? this.#cursors.sign(t.tenant, route.id, bound, String(last.revision)) : undefined;
    return successPrefix(200, route.message) + this.#serialize[route.data](route.items(page)) + successTail(next);
  }

  /** A page of the tenant's audit trail, newest first; the cursor holds the last row's time and id. */
  async auditPage(t: TenantTarget, route: AuditRoute, query: Query): Promise<string> {
    const after = query.cursor === undefined ? undefined : auditPosition(this.#cursors.open(t.tenant, route.id, [], query.cursor));
    const want = query.limit ?? MAX_AUDIT;
    const entries = await this.#audit(t.tenant, after, want + 1);
    const cut = entries.length > want;
    const page = cut ? entries.slice(0, want) : entries;
    const last = page[page.length - 1];
    const next = cut && last !== undefined ? this.#cursors.sign(t.tenant, route.id, [], `${last.at} ${last.id}`) : undefined;
    return successPrefix(200, route.message) + this.#serialize[route.data](route.items(page)) + successTail(next);
  }

  /** A success envelope of `route` around `data`, with `next_cursor` when a page was cut. */
  envelope(route: Route, data: unknown, next?: string): string {
    return successPrefix(route.status, route.message) + this.#serialize[route.data](data) + successTail(next);
  }

  /** The body of an issued token. */
  token(route: TokenRoute, issued: IssuedToken): string {
    const value = { token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn, scope: issued.scope };
    return successPrefix(route.status, route.message) + this.#serialize[route.data](value) + successTail(undefined);
  }

  #listPage(t: TenantTarget, route: ListRoute, g: TenantGraph, p: string[], limit: number | undefined, cursor: string | undefined): string {
    const after = cursor === undefined ? undefined : this.#cursors.open(t.tenant, route.id, p, cursor);
    const page = pageAfter(route.names(g, p), after, limit);
    const next = page.after === undefined ? undefined : this.#cursors.sign(t.tenant, route.id, p, page.after);
    const items = this.#listItems(route, g, p, page.items);
    return successPrefix(200, route.message) + items + successTail(next);
  }

  /** A page's items: one name each, written straight from the names, unless they carry more (a function's, or an edge's window). */
  #listItems(route: ListRoute, g: TenantGraph, p: string[], names: readonly string[]): string {
    const field = route.items;
    if (typeof field === 'function') return this.#serialize[route.data](field(g, names, p));
    const window = route.window;
    if (window === undefined || !g.hasWindows) return nameItemsJson(field, names);
    return this.#serialize[route.data](
      names.map((name) => {
        const w = window(g, p, name);
        return { [field]: name, ...wireWindow(w?.notBefore, w?.expiresAt) };
      }),
    );
  }
}

/** The position an audit cursor holds (`<at> <id>`, signed); a cursor of another shape is refused (400). */
function auditPosition(opened: string): AuditPosition {
  const space = opened.lastIndexOf(' ');
  const id = Number(opened.slice(space + 1));
  if (space <= 0 || !Number.isSafeInteger(id)) throw appError('ERR_VALIDATION_CURSOR');
  return { at: opened.slice(0, space), id };
}
