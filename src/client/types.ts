/**
 * What the typed client sends and gets (docs/api.md §2, §6): the envelopes, the options of a call
 * and the data of each route. Names follow the wire (`has_permission`, `not_before`), so a body
 * read from a log and one typed here look alike.
 */

export interface SuccessEnvelope<T> {
  success: true;
  code: number;
  message: string;
  data: T;
  timestamp: string;
  next_cursor?: string;
}

export interface ErrorEnvelope {
  success: false;
  code: number;
  message: string;
  error: string;
  timestamp: string;
}

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
export interface Windowed {
  not_before?: string;
  expires_at?: string;
}

export interface Role {
  role: string;
  description: string;
}
export interface RoleCreated extends Role {
  revision: number;
}
export interface RoleDeleted {
  role: string;
  permissions_removed: number;
  memberships_removed: number;
  revision: number;
}
/** A grant made, windowed, or revoked (the window only on the first two). */
export interface GrantChange extends Windowed {
  role: string;
  permission: string;
  revision: number;
}
/** A membership added, windowed, or removed (the window only on the first two). */
export interface MembershipChange extends Windowed {
  user: string;
  role: string;
  revision: number;
}
export interface CheckItem {
  user: string;
  permission: string;
}
export interface CheckResult {
  results: Array<CheckItem & { has_permission: boolean }>;
  all: boolean;
  any: boolean;
}

export interface IssuedToken {
  token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: 'read' | 'write';
}

/** A revoked token: its jti, and when it expires (RFC 3339 UTC, microseconds), until which it is refused. */
export interface RevokedToken {
  jti: string;
  revoked_until: string;
}

export interface AuditRow {
  id: number;
  timestamp: string;
  action: string;
  resource: string;
  status: number;
  /** Only on successful writes. */
  revision?: number;
  /** `key:…`, `token:…`, or `system` for a window's boundary change. */
  credential: string;
  /** Absent on a boundary change's row, which no request made. */
  request_id?: string;
  /** Absent on a boundary change's row. */
  ip?: string;
}

/** A row of the change feed (GET /api/changes, docs/api.md §10). */
export interface ChangeRow extends Windowed {
  revision: number;
  op: string;
  role: string;
  permission?: string;
  user?: string;
  timestamp: string;
}

export interface WorkflowScheduled {
  workflow: string;
  interval_seconds: number;
  webhook_url: string | null;
  /** `whsec_…`: verifies the webhook deliveries (Standard Webhooks); shown only in this answer. */
  webhook_secret: string;
}

export interface WorkflowSchedule {
  workflow: string;
  interval_seconds: number;
  webhook_url: string | null;
  last_run_at: string | null;
}

export interface WorkflowRun {
  run_at: string;
  revision: number;
  users_count: number;
  added: string[];
  removed: string[];
  delivery: { status: 'none' | 'pending' | 'delivered' | 'failed'; attempts: number; last_status: number | null };
}

export interface ClientOptions {
  /** For example `http://127.0.0.1:5000`. */
  baseUrl: string;
  /** Client key (UUID v4) or token, sent as the bearer credential. */
  key?: string;
  /** Called with every answer (after its body is read): for logging, metrics or contract checks. */
  onResponse?: (method: string, path: string, result: ApiResult<unknown>) => void;
}
