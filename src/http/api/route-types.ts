import type { AuditEntry } from '../../audit/record.ts';
import type { Change, ChangeRecord, WriteCommitted } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import type { NameField } from '../../authz/names.ts';
import type { BodySchemaName, DataSchemaName } from './schemas.ts';

/** The kinds of /api routes and what each route says about itself; the routes are in routes.ts and workflow-routes.ts. */

export interface RouteBase {
  /** Stable id: binds cursors, names the route in logs and in the OpenAPI document. */
  readonly id: string;
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** OpenAPI form, `{name}` for a parameter. */
  readonly path: string;
  readonly params: readonly NameField[];
  readonly summary: string;
  readonly status: 200 | 201;
  readonly message: string;
  readonly data: DataSchemaName;
  /** Request body schema; every POST and DELETE reads (and validates) its body. */
  readonly body?: BodySchemaName;
}

/**
 * Answered from the tenant graph by `run`; without one (has_permission and check, the hot
 * paths), by Answers itself: a prebuilt answer, or JSON written with no object per item
 * (http/handle/answers.ts).
 */
export interface ReadRoute extends RouteBase {
  readonly kind: 'read';
  readonly run?: (g: TenantGraph, p: readonly string[], body: unknown) => unknown;
}

/** A sorted list answered from the tenant graph, paged by name. */
export interface ListRoute extends RouteBase {
  readonly kind: 'list';
  /** The sorted names; throws 404 when the route's role does not exist. */
  names(g: TenantGraph, p: readonly string[]): readonly string[];
  /**
   * The wire items of a page of names: built by a function, or, where each item is one name,
   * the item's one field (`{"user":"alice"}`), written straight from the names (see nameItemsJson).
   */
  readonly items: ItemField | ((g: TenantGraph, names: readonly string[]) => unknown[]);
}

/** The field of a list item that is one name. */
export type ItemField = 'name' | 'user' | 'role';

/** A change committed by the store, then applied to the graph. */
export interface WriteRoute extends RouteBase {
  readonly kind: 'write';
  change(p: readonly string[], body: unknown): Change;
  /** The response data; `p` are the decoded path names. */
  result(done: WriteCommitted, p: readonly string[]): unknown;
}

/** The tenant's changelog, read from the database and paged by revision. */
export interface LogRoute extends RouteBase {
  readonly kind: 'log';
  items(records: readonly ChangeRecord[]): unknown[];
}

/** POST /api/token: a signed token for the calling client key (docs/api.md §3). */
export interface TokenRoute extends RouteBase {
  readonly kind: 'token';
}

/** The tenant's audit trail, read from the database, newest first, paged by row id. */
export interface AuditRoute extends RouteBase {
  readonly kind: 'audit';
  items(entries: readonly AuditEntry[]): unknown[];
}

/** Workflow schedules and runs, kept in the database (docs/api.md §6, §12). */
export interface WorkflowRoute extends RouteBase {
  readonly kind: 'workflow';
  readonly op: 'schedule' | 'unschedule' | 'schedules' | 'runs';
}

export type Route = ReadRoute | ListRoute | WriteRoute | LogRoute | TokenRoute | AuditRoute | WorkflowRoute;

/** Whether the route answers a list in pages (`?limit=`, `?cursor=`, `next_cursor`). */
export function isPaged(route: Route): boolean {
  return route.kind === 'list' || route.kind === 'log' || route.kind === 'audit' || (route.kind === 'workflow' && route.method === 'GET');
}

/** Whether a successful request's audit row commits in the store with what it changed (not after the answer). */
export function auditCommitsWithChange(route: Route): boolean {
  return route.kind === 'write' || (route.kind === 'workflow' && route.method !== 'GET');
}

/**
 * What a route asks of the caller's credential (docs/api.md §3): `read` for GET routes and
 * POST /api/check (any key or token), `write` for changes (a key or a write token), `key` for
 * minting tokens (a client key only).
 */
export function accessOf(route: Route): 'read' | 'write' | 'key' {
  if (route.kind === 'token') return 'key';
  return route.method === 'GET' || route.id === 'check' ? 'read' : 'write';
}

/** The `action` of the route's audit rows: its change's op (`role.create` …), `token.issue`, `workflow.schedule`, `workflow.unschedule`, or `read`. */
export function auditActionOf(route: Route): string {
  return accessOf(route) === 'read' ? 'read' : route.id;
}
