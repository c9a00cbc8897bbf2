import type { AuditEntry } from '../../audit/record.ts';
import type { BoundaryChange, Change, ChangeRecord, Window, WriteCommitted } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import type { NameField } from '../../authz/names.ts';
import type { BodySchemaName, DataSchemaName } from './schemas.ts';

/** The kinds of /api routes and what each route says about itself; the routes are in routes.ts and workflow-routes.ts. */

/**
 * The ids of the write routes: the op of the change each asks for (its audit rows' action), and
 * `writes`, the atomic batch (docs/api.md §12.2).
 */
export type WriteRouteId = Exclude<Change['op'], BoundaryChange['op']> | 'writes';

/**
 * Every /api route's id: binds cursors, names the route in logs, metrics, audit rows and the
 * OpenAPI document.
 */
export type RouteId =
  | WriteRouteId
  | 'roles'
  | 'windows'
  | 'dry-run'
  | 'permission.get'
  | 'role_permissions'
  | 'membership.get'
  | 'members'
  | 'has_permission'
  | 'explain'
  | 'user_permissions'
  | 'user_roles'
  | 'which_users_can'
  | 'which_roles_can'
  | 'changes'
  | 'token.issue'
  | 'token.revoke'
  | 'audit'
  | 'check'
  | 'workflow.users'
  | 'workflow.can_run'
  | WorkflowRoute['id']
  | DataRoute['id'];

export interface RouteBase<Id extends RouteId = RouteId> {
  readonly id: Id;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI form, `{name}` for a parameter. */
  readonly path: string;
  readonly params: readonly NameField[];
  readonly summary: string;
  readonly status: 200 | 201;
  readonly message: string;
  readonly data: DataSchemaName;
  /** Request body schema; every POST, PUT and DELETE reads (and validates) its body. */
  readonly body?: BodySchemaName;
  /** What its 404 means, in the OpenAPI document; absent when the route has no 404 of its own. */
  readonly notFound?: string;
  /** What its 400 means, in the OpenAPI document, when more than a bad name, query, header or body. */
  readonly badRequest?: string;
}

/**
 * GET /api/has_permission, the hot path: answered from prebuilt bytes, its two names decoded in
 * place and looked up without building a string (http/handle/api-handler.ts `#serveSpelled`).
 */
export interface HasPermissionRoute extends RouteBase<'has_permission'> {
  readonly kind: 'has_permission';
}

/** POST /api/check: many has_permission checks at one revision, written straight to JSON (no object per check). */
export interface CheckRoute extends RouteBase<'check'> {
  readonly kind: 'check';
}

/** A yes or no read from the tenant graph, counted in rbac_check_decisions_total (docs/operations.md §2). */
export interface DecisionRoute extends RouteBase {
  readonly kind: 'decision';
  /** The answer; throws 404 when the route's role does not exist. */
  decide(g: TenantGraph, p: readonly string[]): boolean;
  /** The one field of the answer's data. */
  readonly field: 'has_permission' | 'is_member';
  /** The window of the edge asked about, when it exists with one: added to the answer (docs/api.md §12.1). */
  window?(g: TenantGraph, p: readonly string[]): Window | undefined;
}

/** Any other read answered from the tenant graph. */
export interface ReadRoute extends RouteBase {
  readonly kind: 'read';
  run(g: TenantGraph, p: readonly string[]): unknown;
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
  readonly items: ItemField | ((g: TenantGraph, names: readonly string[], p: readonly string[]) => unknown[]);
  /**
   * A list of edges (docs/api.md §12.1): the window of the edge each name stands for, which its
   * item then carries. Asked only of a graph with windows; the others answer the plain items.
   */
  window?(g: TenantGraph, p: readonly string[], name: string): Window | undefined;
}

/** The field of a list item that is one name. */
export type ItemField = 'name' | 'user' | 'role';

/** A write request: its changes committed by the store at one revision, then applied to the graphs. */
export interface WriteRoute extends RouteBase<WriteRouteId> {
  readonly kind: 'write';
  /** The changes the request asks for, from its path names and body; `nowMicros` judges a window (throws 400). */
  changes(p: readonly string[], body: unknown, nowMicros: number): readonly Change[];
  /**
   * The response data; `p` are the decoded path names, `asked` the changes the request asked for
   * (a window is echoed as asked: a `not_before` already past was not stored, the edge being active).
   */
  result(done: WriteCommitted, p: readonly string[], asked: readonly Change[]): unknown;
  /** The status of a success when it depends on what was committed (a PUT: created 201, replaced 200); else `status`. */
  statusOf?(done: WriteCommitted): 200 | 201;
}

/** POST /api/dry-run (docs/api.md §12.3): what a batch would change, answered from the graph, storing nothing. */
export interface PreviewRoute extends RouteBase<'dry-run'> {
  readonly kind: 'preview';
}

/** The tenant's changelog, read from the database and paged by revision. */
export interface LogRoute extends RouteBase {
  readonly kind: 'log';
  items(records: readonly ChangeRecord[]): unknown[];
}

/** POST /api/token: a signed token for the calling client key (docs/api.md §3). */
export interface TokenRoute extends RouteBase<'token.issue'> {
  readonly kind: 'token';
}

/** DELETE /api/token/{jti}: revokes a token of the caller's client (docs/api.md §3). */
export interface RevokeRoute extends RouteBase<'token.revoke'> {
  readonly kind: 'revoke';
}

/** The tenant's audit trail, read from the database, newest first, paged by row id. */
export interface AuditRoute extends RouteBase {
  readonly kind: 'audit';
  items(entries: readonly AuditEntry[]): unknown[];
}

/** Workflow schedules and runs, kept in the database (docs/api.md §6, §16). */
export interface WorkflowRoute extends RouteBase<'workflow.schedule' | 'workflow.unschedule' | 'workflow.schedules' | 'workflow.runs'> {
  readonly kind: 'workflow';
  readonly op: 'schedule' | 'unschedule' | 'schedules' | 'runs';
}

/** GET /api/export and POST /api/import (docs/api.md §17): a client's data as NDJSON, out and in. */
export interface DataRoute extends RouteBase<'export' | 'client.import'> {
  readonly kind: 'data';
}

export type Route =
  | HasPermissionRoute
  | CheckRoute
  | DecisionRoute
  | ReadRoute
  | ListRoute
  | WriteRoute
  | PreviewRoute
  | LogRoute
  | TokenRoute
  | RevokeRoute
  | AuditRoute
  | WorkflowRoute
  | DataRoute;

/** The routes answered from the tenant graph, in memory (once it is cached and recent enough). */
export type GraphRoute = HasPermissionRoute | CheckRoute | DecisionRoute | ReadRoute | ListRoute;

/** Whether the route is answered from the tenant graph (not from the database, nor by a write). */
export function isGraphRoute(route: Route): route is GraphRoute {
  switch (route.kind) {
    case 'has_permission':
    case 'check':
    case 'decision':
    case 'read':
    case 'list':
      return true;
    case 'write':
    case 'preview':
    case 'log':
    case 'token':
    case 'revoke':
    case 'audit':
    case 'workflow':
    case 'data':
      return false;
  }
}

/** Whether the route answers a list in pages (`?limit=`, `?cursor=`, `next_cursor`). */
export function isPaged(route: Route): boolean {
  return route.kind === 'list' || route.kind === 'log' || route.kind === 'audit' || (route.kind === 'workflow' && accessOf(route) === 'read');
}

/** Whether a successful request's audit row commits in the store with what it changed (not after the answer). */
export function auditCommitsWithChange(route: Route): boolean {
  return route.kind === 'write' || route.kind === 'revoke' || ((route.kind === 'workflow' || route.kind === 'data') && accessOf(route) === 'write');
}

/** What a route asks of the caller's credential: see {@link accessOf}. */
export type Access = 'read' | 'write' | 'key';

/**
 * What a route asks of the caller's credential (docs/api.md §3): `read` for the reads, POST
 * /api/check included (any key or token), `write` for changes (a key or a write token), `key` for
 * minting tokens (a client key only).
 */
export function accessOf(route: Route): Access {
  switch (route.kind) {
    case 'token':
      return 'key';
    case 'write':
    case 'revoke':
      return 'write';
    case 'workflow':
      return route.op === 'schedule' || route.op === 'unschedule' ? 'write' : 'read';
    case 'data':
      return route.id === 'export' ? 'read' : 'write';
    case 'has_permission':
    case 'check':
    case 'decision':
    case 'read':
    case 'list':
    case 'preview':
    case 'log':
    case 'audit':
      return 'read';
  }
}

/** The `action` of the route's audit rows: its change's op (`role.create` …), `token.issue`, `workflow.schedule`, `workflow.unschedule`, or `read`. */
export function auditActionOf(route: Route): string {
  return accessOf(route) === 'read' ? 'read' : route.id;
}
