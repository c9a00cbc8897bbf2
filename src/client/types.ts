import type { components } from './openapi.generated.ts';

/**
 * What the typed client sends and gets (docs/api.md §2, §6). The shapes of the wire are not
 * written here: they are the named schemas of /openapi.json, generated into openapi.generated.ts
 * (`npm run generate:client`). What remains is the client's own: the result of a call and its
 * options. Names follow the wire (`has_permission`, `not_before`), so a body read from a log and
 * one typed here look alike.
 */

/** Every named shape of the API (`Schemas['Role']`, `Schemas['ErrorEnvelope']` …), as /openapi.json gives it. */
export type Schemas = components['schemas'];

/** A success envelope whose `data` is `T` (`next_cursor` only on a cut page). */
export type SuccessEnvelope<T> = Omit<Schemas['RoleListPage'], 'data'> & { data: T };
export type ErrorEnvelope = Schemas['ErrorEnvelope'];

export interface ApiResult<T> {
  /** HTTP status. */
  status: number;
  ok: boolean;
  headers: Headers;
  /** Parsed JSON body (undefined when the body was empty or not JSON). */
  body: SuccessEnvelope<T> | ErrorEnvelope | undefined;
  /** `data` of a success envelope. */
  data: T | undefined;
  /** `error` of an error envelope. */
  error: string | undefined;
  /** `X-Authz-Revision`, when sent. */
  revision: number | undefined;
  nextCursor: string | undefined;
  requestId: string | null;
}

export interface CallOptions {
  /** Sent as `X-Authz-Min-Revision`. */
  minRevision?: number;
  requestId?: string;
  headers?: Record<string, string>;
}

export interface PageOptions extends CallOptions {
  limit?: number;
  cursor?: string;
}

/** The options of a write (docs/api.md §12.4). */
export interface WriteOptions extends CallOptions {
  /**
   * Sent as `If-Match: "R"` (`*` as is): the write is made only while the client is at revision
   * R, else 412 and nothing written. A revision is what `X-Authz-Revision` (or a preview) gave.
   */
  ifMatch?: number | '*';
}

/**
 * A window's bounds as answers give them (docs/api.md §12.1): UTC, six fractional digits and `Z`;
 * each key only when the edge has that bound.
 */
export type Windowed = Pick<Schemas['Grant'], 'not_before' | 'expires_at'>;

export type Role = Schemas['Role'];
export type RoleCreated = Schemas['RoleCreated'];
export type RoleDeleted = Schemas['RoleDeleted'];
/** A grant made or windowed, with its window when it has one. */
export type Grant = Schemas['Grant'];
export type GrantRemoved = Schemas['GrantRemoved'];
/** A membership added or windowed, with its window when it has one. */
export type Membership = Schemas['Membership'];
export type MembershipRemoved = Schemas['MembershipRemoved'];
/** One check of POST /api/check: a user and a permission. */
export type CheckItem = Schemas['UserPermission'];
export type CheckResult = Schemas['CheckResult'];
export type IssuedToken = Schemas['IssuedToken'];
/** A revoked token: its jti, and when it expires (RFC 3339 UTC, microseconds), until which it is refused. */
export type RevokedToken = Schemas['RevokedToken'];
export type AuditRow = Schemas['AuditRow'];
/** A row of the change feed (GET /api/changes, docs/api.md §10). */
export type ChangeRow = Schemas['Change'];
export type WorkflowScheduled = Schemas['WorkflowScheduled'];
export type WorkflowSchedule = Schemas['WorkflowSchedule'];
export type WorkflowRun = Schemas['WorkflowRun'];
/** Why a user holds a permission, or the roles that would grant it (GET /api/explain). */
export type Explanation = Schemas['Explanation'];

export interface ClientOptions {
  /** For example `http://127.0.0.1:5000`. */
  baseUrl: string;
  /** Client key (UUID v4) or token, sent as the bearer credential. */
  key?: string;
  /** Called with every answer (after its body is read): for logging, metrics or contract checks. */
  onResponse?: (method: string, path: string, result: ApiResult<unknown>) => void;
}
