/**
 * Typed HTTP client of the rbac-gateway API (docs/api.md §6, §12). Used by the tests, the benchmark and
 * by services that call the gateway. Every call resolves with the full answer (status, headers,
 * parsed body); it never throws on an error status, so callers can assert on 4xx/5xx as values.
 */
import type {
  ActionSearchRequest,
  AuthzenMetadata,
  Decision,
  EvaluationRequest,
  EvaluationsRequest,
  ResourceSearchRequest,
  SubjectSearchRequest,
} from './authzen.ts';
import { exportLines, importPath, type ImportOptions, type ImportPreview, type ImportResult } from './transfer.ts';
import { batchBody, ifMatchHeader, windowBody, type BatchApplied, type BatchWrite, type Preview, type WindowEntry, type WindowInput } from './timed.ts';
import type {
  ApiResult,
  AuditRow,
  CallOptions,
  ChangeRow,
  CheckItem,
  CheckResult,
  ClientOptions,
  ErrorEnvelope,
  Explanation,
  Grant,
  GrantRemoved,
  IssuedToken,
  Membership,
  MembershipRemoved,
  RevokedToken,
  PageOptions,
  Role,
  RoleCreated,
  RoleDeleted,
  Schemas,
  SuccessEnvelope,
  WorkflowRun,
  WorkflowSchedule,
  WorkflowScheduled,
  WriteOptions,
} from './types.ts';

export type * from './authzen.ts';
export type { components } from './openapi.generated.ts';
export type * from './types.ts';
export type * from './timed.ts';
export { rfc3339 } from './timed.ts';
export type * from './transfer.ts';
export { ExportError } from './transfer.ts';

/** The options of a grant or membership write: its window (docs/api.md §12.1) and If-Match. */
export type EdgeWriteOptions = WriteOptions & WindowInput;

/** An AuthZEN answer: `value` is the 200 body (AuthZEN's own shape); errors come as in {@link ApiResult}. */
export type PdpResult<T> = ApiResult<never> & { value: T | undefined };

const seg = encodeURIComponent;

/** Client of one gateway for one credential. */
export class RbacClient {
  readonly baseUrl: string;
  readonly key: string | undefined;
  readonly #onResponse: ClientOptions['onResponse'];

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.key = options.key;
    this.#onResponse = options.onResponse;
  }

  /** The same gateway with another credential (and the same `onResponse`). */
  withKey(key: string | undefined): RbacClient {
    const observer = this.#onResponse === undefined ? {} : { onResponse: this.#onResponse };
    return new RbacClient(key === undefined ? { baseUrl: this.baseUrl, ...observer } : { baseUrl: this.baseUrl, key, ...observer });
  }

  /** Any request; `path` is sent as given (already encoded). */
  async request<T = unknown>(
    method: string,
    path: string,
    options: WriteOptions & { body?: unknown; rawBody?: string | Uint8Array; contentType?: string } = {},
  ): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.key !== undefined && headers.authorization === undefined) headers.authorization = `Bearer ${this.key}`;
    if (options.minRevision !== undefined) headers['x-authz-min-revision'] = String(options.minRevision);
    if (options.ifMatch !== undefined) headers['if-match'] = ifMatchHeader(options.ifMatch);
    if (options.requestId !== undefined) headers['x-request-id'] = options.requestId;
    // The browser's fetch types (the console bundles this client) take only views of an
    // ArrayBuffer; a body is never a view of shared memory.
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (options.rawBody !== undefined) body = options.rawBody as string | Uint8Array<ArrayBuffer>;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const res = await fetch(this.baseUrl + path, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    let parsed: SuccessEnvelope<T> | ErrorEnvelope | undefined;
    try {
      parsed = text.length > 0 ? (JSON.parse(text) as SuccessEnvelope<T> | ErrorEnvelope) : undefined;
    } catch {
      parsed = undefined;
    }
    const rev = res.headers.get('x-authz-revision');
    const result: ApiResult<T> = {
      status: res.status,
      ok: res.ok,
      headers: res.headers,
      body: parsed,
      data: parsed !== undefined && parsed.success === true ? parsed.data : undefined,
      error: parsed !== undefined && parsed.success === false ? parsed.error : undefined,
      revision: rev === null ? undefined : Number(rev),
      nextCursor: parsed !== undefined && parsed.success === true ? parsed.next_cursor : undefined,
      requestId: res.headers.get('x-request-id'),
    };
    this.#onResponse?.(method, path, result);
    return result;
  }

  /** GET /api/export: the client's data as NDJSON lines, streamed (docs/api.md §17). */
  exportClient(): AsyncGenerator<string> {
    return exportLines(this.baseUrl, this.key);
  }

  /** POST /api/import with an NDJSON body (an export); `dryRun` stores nothing and answers the pairs that would change. */
  importClient(body: string | Uint8Array, options: ImportOptions = {}): Promise<ApiResult<ImportResult | ImportPreview>> {
    const { mode: _mode, dryRun: _dry, ...write } = options;
    return this.request('POST', importPath(options), { ...write, rawBody: body, contentType: 'application/x-ndjson' });
  }

  private page<T>(path: string, options: PageOptions = {}): Promise<ApiResult<T>> {
    const query = new URLSearchParams();
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.cursor !== undefined) query.set('cursor', options.cursor);
    const qs = query.toString();
    if (qs.length === 0) return this.request<T>('GET', path, options);
    return this.request<T>('GET', `${path}${path.includes('?') ? '&' : '?'}${qs}`, options);
  }

  /** Follows `next_cursor` until the list is complete; throws on an error status. */
  async all<T>(fetchPage: (options: PageOptions) => Promise<ApiResult<T[]>>, limit: number): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await fetchPage(cursor === undefined ? { limit } : { limit, cursor });
      if (res.data === undefined) throw new Error(`page failed with ${res.status}: ${res.error ?? ''}`);
      out.push(...res.data);
      if (res.nextCursor === undefined) return out;
      cursor = res.nextCursor;
    }
  }

  ping(): Promise<ApiResult<never>> {
    return this.request('GET', '/ping');
  }
  health(): Promise<ApiResult<never>> {
    return this.request('GET', '/health');
  }
  /** 200 `ready` or `degraded`, 503 `draining`; `strict`: 503 whenever degraded too. */
  ready(strict = false): Promise<ApiResult<never>> {
    return this.request('GET', strict ? '/ready?strict=1' : '/ready');
  }
  openapi(): Promise<ApiResult<never>> {
    return this.request('GET', '/openapi.json');
  }

  listRoles(options?: PageOptions): Promise<ApiResult<Role[]>> {
    return this.page('/api/roles', options);
  }
  createRole(role: string, body?: Schemas['RoleCreateRequest'], options?: WriteOptions): Promise<ApiResult<RoleCreated>> {
    return this.request('POST', `/api/role/${seg(role)}`, body === undefined ? { ...options } : { ...options, body });
  }
  deleteRole(role: string, options?: WriteOptions): Promise<ApiResult<RoleDeleted>> {
    return this.request('DELETE', `/api/role/${seg(role)}`, options);
  }
  /** Whether the role holds the permission now; the grant's window whenever it has one. */
  roleHasPermission(role: string, permission: string, options?: CallOptions): Promise<ApiResult<Schemas['GrantStatus']>> {
    return this.request('GET', `/api/permission/${seg(role)}/${seg(permission)}`, options);
  }
  /** Grants the permission, for good or within `notBefore`/`expiresAt`; 409 when the grant exists (even pending). */
  grant(role: string, permission: string, options?: EdgeWriteOptions): Promise<ApiResult<Grant>> {
    return this.edgeWrite('POST', `/api/permission/${seg(role)}/${seg(permission)}`, options);
  }
  /** Grants the permission or replaces its window: 201 granted, 200 replaced; no bound given makes it permanent. */
  putGrant(role: string, permission: string, options?: EdgeWriteOptions): Promise<ApiResult<Grant>> {
    return this.edgeWrite('PUT', `/api/permission/${seg(role)}/${seg(permission)}`, options);
  }
  revoke(role: string, permission: string, options?: WriteOptions): Promise<ApiResult<GrantRemoved>> {
    return this.request('DELETE', `/api/permission/${seg(role)}/${seg(permission)}`, options);
  }
  /** The role's active grants, each with its window when it has one. */
  rolePermissions(role: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['GrantedPermission']>>> {
    return this.page(`/api/role_permissions/${seg(role)}`, options);
  }
  /** Whether the user is a member now; the membership's window whenever it has one. */
  isMember(user: string, role: string, options?: CallOptions): Promise<ApiResult<Schemas['MembershipStatus']>> {
    return this.request('GET', `/api/membership/${seg(user)}/${seg(role)}`, options);
  }
  /** Adds the user, for good or within `notBefore`/`expiresAt`; 409 when a member (even pending). */
  addMember(user: string, role: string, options?: EdgeWriteOptions): Promise<ApiResult<Membership>> {
    return this.edgeWrite('POST', `/api/membership/${seg(user)}/${seg(role)}`, options);
  }
  /** Adds the user or replaces the membership's window: 201 added, 200 replaced; no bound given makes it permanent. */
  putMembership(user: string, role: string, options?: EdgeWriteOptions): Promise<ApiResult<Membership>> {
    return this.edgeWrite('PUT', `/api/membership/${seg(user)}/${seg(role)}`, options);
  }
  removeMember(user: string, role: string, options?: WriteOptions): Promise<ApiResult<MembershipRemoved>> {
    return this.request('DELETE', `/api/membership/${seg(user)}/${seg(role)}`, options);
  }
  /** The role's active members, each with its window when it has one. */
  members(role: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['RoleMember']>>> {
    return this.page(`/api/members/${seg(role)}`, options);
  }
  /**
   * A grant or membership written with its window as the body: a POST without a bound sends no
   * body (the plain write), a PUT always sends one (`{}` makes the edge permanent).
   */
  private edgeWrite<T>(method: 'POST' | 'PUT', path: string, options: EdgeWriteOptions = {}): Promise<ApiResult<T>> {
    const window = windowBody(options);
    if (method === 'POST' && Object.keys(window).length === 0) return this.request(method, path, options);
    return this.request(method, path, { ...options, body: window });
  }
  hasPermission(user: string, permission: string, options?: CallOptions): Promise<ApiResult<Schemas['HasPermission']>> {
    return this.request('GET', `/api/has_permission/${seg(user)}/${seg(permission)}`, options);
  }
  userPermissions(user: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['PermissionItem']>>> {
    return this.page(`/api/user_permissions/${seg(user)}`, options);
  }
  userRoles(user: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['UserRole']>>> {
    return this.page(`/api/user_roles/${seg(user)}`, options);
  }
  whichUsersCan(permission: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['UserItem']>>> {
    return this.page(`/api/which_users_can/${seg(permission)}`, options);
  }
  whichRolesCan(permission: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['RoleItem']>>> {
    return this.page(`/api/which_roles_can/${seg(permission)}`, options);
  }
  check(checks: CheckItem[], options?: CallOptions): Promise<ApiResult<CheckResult>> {
    return this.request('POST', '/api/check', { ...options, body: { checks } });
  }
  /** Mints a signed token (the credential must be a client key). */
  issueToken(body?: Schemas['TokenRequest'], options?: WriteOptions): Promise<ApiResult<IssuedToken>> {
    return this.request('POST', '/api/token', body === undefined ? { ...options } : { ...options, body });
  }
  /** Revokes a token of this client by its `jti` claim: refused everywhere from the answer on (docs/api.md §3); 404 when unknown. */
  revokeToken(jti: string, options?: CallOptions): Promise<ApiResult<RevokedToken>> {
    return this.request('DELETE', `/api/token/${seg(jti)}`, options);
  }
  /** The client's changes after revision `since` (default 0), ascending; the items of one batch share a revision. */
  changes(since?: number, options?: PageOptions): Promise<ApiResult<ChangeRow[]>> {
    return this.page(since === undefined ? '/api/changes' : `/api/changes?since=${since}`, options);
  }
  /** Every grant and membership with a boundary ahead (pending, or active with an end), by that boundary. */
  windows(options?: PageOptions): Promise<ApiResult<WindowEntry[]>> {
    return this.page('/api/windows', options);
  }
  /** Makes every write of `batch`, in order, at one new revision, or none of them (docs/api.md §12.2). */
  writes(batch: readonly BatchWrite[], options?: WriteOptions): Promise<ApiResult<BatchApplied>> {
    return this.request('POST', '/api/writes', { ...options, body: batchBody(batch) });
  }
  /** What `writes(batch)` would do now, storing nothing (docs/api.md §12.3); a read token may ask. */
  dryRun(batch: readonly BatchWrite[], options?: CallOptions): Promise<ApiResult<Preview>> {
    return this.request('POST', '/api/dry-run', { ...options, body: batchBody(batch) });
  }
  /** The client's audit rows, newest first. */
  audit(options?: PageOptions): Promise<ApiResult<AuditRow[]>> {
    return this.page('/api/audit', options);
  }
  /** Users who can run the workflow (a permission name). */
  workflowUsers(workflow: string, options?: PageOptions): Promise<ApiResult<Array<Schemas['UserItem']>>> {
    return this.page(`/api/workflow/users/${seg(workflow)}`, options);
  }
  canRun(user: string, workflow: string, options?: CallOptions): Promise<ApiResult<Schemas['CanRun']>> {
    return this.request('GET', `/api/workflow/user/${seg(user)}/can_run/${seg(workflow)}`, { ...options });
  }
  /** Creates or replaces the workflow's schedule; the first run follows at once. */
  scheduleWorkflow(workflow: string, body: Schemas['ScheduleRequest'], options?: WriteOptions): Promise<ApiResult<WorkflowScheduled>> {
    return this.request('POST', `/api/workflow/schedule/${seg(workflow)}`, { ...options, body });
  }
  schedules(options?: PageOptions): Promise<ApiResult<WorkflowSchedule[]>> {
    return this.page('/api/workflow/schedules', options);
  }
  unscheduleWorkflow(workflow: string, options?: WriteOptions): Promise<ApiResult<Schemas['WorkflowUnscheduled']>> {
    return this.request('DELETE', `/api/workflow/schedule/${seg(workflow)}`, { ...options });
  }
  explain(user: string, permission: string, options?: CallOptions): Promise<ApiResult<Explanation>> {
    return this.request('GET', `/api/explain/${seg(user)}/${seg(permission)}`, options);
  }

  // ---- AuthZEN 1.0 (at the service root) --------------------------------------------------------

  /** POST to an AuthZEN route; `value` is the body of a 200. */
  async pdp<T>(path: string, body: unknown, options: CallOptions = {}): Promise<PdpResult<T>> {
    const res = await this.request<never>('POST', path, { ...options, body });
    return { ...res, value: res.status === 200 ? (res.body as unknown as T) : undefined };
  }
  evaluation(body: EvaluationRequest, options?: CallOptions): Promise<PdpResult<Decision>> {
    return this.pdp('/access/v1/evaluation', body, options);
  }
  /** A batch; without `evaluations` the answer is a single decision, like {@link evaluation}. */
  evaluations(body: EvaluationsRequest, options?: CallOptions): Promise<PdpResult<Schemas['EvaluationsResponse']>> {
    return this.pdp('/access/v1/evaluations', body, options);
  }
  searchSubjects(body: SubjectSearchRequest, options?: CallOptions): Promise<PdpResult<Schemas['EntitySearchResponse']>> {
    return this.pdp('/access/v1/search/subject', body, options);
  }
  searchResources(body: ResourceSearchRequest, options?: CallOptions): Promise<PdpResult<Schemas['EntitySearchResponse']>> {
    return this.pdp('/access/v1/search/resource', body, options);
  }
  searchActions(body: ActionSearchRequest, options?: CallOptions): Promise<PdpResult<Schemas['ActionSearchResponse']>> {
    return this.pdp('/access/v1/search/action', body, options);
  }
  /** The PDP metadata; `path` is the base URL's path, when it has one. */
  async authzenConfiguration(path = ''): Promise<PdpResult<AuthzenMetadata>> {
    const res = await this.request<never>('GET', `/.well-known/authzen-configuration${path}`);
    return { ...res, value: res.status === 200 ? (res.body as unknown as AuthzenMetadata) : undefined };
  }

  /** The schedule's runs, newest first. */
  workflowRuns(workflow: string, options?: PageOptions): Promise<ApiResult<WorkflowRun[]>> {
    return this.page(`/api/workflow/runs/${seg(workflow)}`, options);
  }
}
