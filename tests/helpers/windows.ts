/**
 * Timed access, atomic batches, previews and preconditions (CONTRACT §12) as the black-box suites
 * speak them: instants as sent and as echoed, the edges and their routes, the new routes'
 * requests, the change feed, a snapshot of everything a client stores (so that a refused request
 * can be shown to have stored nothing), and the error envelopes of the statuses §12 adds.
 */
import assert from 'node:assert/strict';
import type { ApiResult, CallOptions, PageOptions, RbacClient } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from './contract.ts';
import { asRecord, expectOk } from './envelopes.ts';
import { show } from './show.ts';

// ---- instants ----------------------------------------------------------------------------------

/** An instant (epoch ms) as a client sends it: RFC 3339 in UTC with `Z` and 3 fractional digits. */
export const sent = (ms: number): string => new Date(ms).toISOString();

/** An instant as the service echoes a window bound: UTC, exactly 6 fractional digits, then `Z`. */
export const echoed = (ms: number): string => `${new Date(ms).toISOString().slice(0, 23)}000Z`;

/** An instant in §2's timestamp form (6 fractional digits, no zone): a boundary change's `timestamp`. */
export const stamped = (ms: number): string => echoed(ms).slice(0, -1);

/** A whole second `seconds` from now (epoch ms): round numbers make echoes easy to read. */
export const inSeconds = (seconds: number): number => Math.floor(Date.now() / 1000) * 1000 + seconds * 1000;

export const DAY = 86_400_000;

/** Asserts `value` is a window bound as echoed: `…T…:…:….ffffffZ`. */
export function assertEchoed(value: unknown, what: string): void {
  assert.equal(typeof value, 'string', `${what}: ${JSON.stringify(value)}`);
  assert.match(value as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/, what);
}

// ---- edges and their routes --------------------------------------------------------------------

export type Edge = { kind: 'membership'; user: string; role: string } | { kind: 'permission'; role: string; permission: string };

export interface WindowBody {
  not_before?: string;
  expires_at?: string;
}

const seg = encodeURIComponent;

/** The edge's own route: `/api/membership/{user}/{role}` or `/api/permission/{role}/{permission}`. */
export function edgePath(edge: Edge): string {
  return edge.kind === 'membership' ? `/api/membership/${seg(edge.user)}/${seg(edge.role)}` : `/api/permission/${seg(edge.role)}/${seg(edge.permission)}`;
}

export const member = (user: string, role: string): Edge => ({ kind: 'membership', user, role });
export const grantOf = (role: string, permission: string): Edge => ({ kind: 'permission', role, permission });

/** `method` on the edge's route, with `body` as JSON when given (no body at all otherwise). */
export function onEdge<T = Record<string, unknown>>(
  c: RbacClient,
  method: string,
  edge: Edge,
  body?: unknown,
  options: CallOptions = {},
): Promise<ApiResult<T>> {
  return c.request<T>(method, edgePath(edge), body === undefined ? options : { ...options, body });
}

/** The §5 data of a write on the edge, plus the window echoed. */
export function edgeData(edge: Edge, revision: number, window: { notBefore?: number; expiresAt?: number } = {}): Record<string, unknown> {
  const base: Record<string, unknown> = edge.kind === 'membership' ? { user: edge.user, role: edge.role } : { role: edge.role, permission: edge.permission };
  base.revision = revision;
  if (window.notBefore !== undefined) base.not_before = echoed(window.notBefore);
  if (window.expiresAt !== undefined) base.expires_at = echoed(window.expiresAt);
  return base;
}

// ---- the routes of §12 -------------------------------------------------------------------------

export type WriteItem = Record<string, unknown>;

export function writes<T = { revision: number; results: Array<Record<string, unknown>> }>(
  c: RbacClient,
  items: unknown,
  options: CallOptions = {},
): Promise<ApiResult<T>> {
  return c.request<T>('POST', '/api/writes', { ...options, body: { writes: items } });
}

export interface Preview {
  revision: number;
  valid: boolean;
  results: Array<{ status: number; error?: string }>;
  gained: Array<{ user: string; permission: string }>;
  lost: Array<{ user: string; permission: string }>;
  gained_count: number;
  lost_count: number;
  truncated: boolean;
}

export function dryRun(c: RbacClient, items: unknown, options: CallOptions = {}): Promise<ApiResult<Preview>> {
  return c.request<Preview>('POST', '/api/dry-run', { ...options, body: { writes: items } });
}

export interface WindowItem {
  kind: 'membership' | 'permission';
  role: string;
  user?: string;
  permission?: string;
  not_before?: string;
  expires_at?: string;
}

export function windowsPage(c: RbacClient, options: PageOptions = {}): Promise<ApiResult<WindowItem[]>> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.cursor !== undefined) query.set('cursor', options.cursor);
  const qs = query.toString();
  return c.request<WindowItem[]>('GET', qs.length > 0 ? `/api/windows?${qs}` : '/api/windows', options);
}

export interface ChangeRow {
  revision: number;
  op: string;
  role: string;
  user?: string;
  permission?: string;
  not_before?: string;
  expires_at?: string;
  timestamp: string;
}

/** Every change of the client above `since`, ascending. */
export async function changesSince(c: RbacClient, since = 0): Promise<ChangeRow[]> {
  const res = await c.request<ChangeRow[]>('GET', `/api/changes?since=${since}`);
  const rows = expectOk(res);
  for (const row of rows) assert.match(row.timestamp, TIMESTAMP_RE, `timestamp of ${JSON.stringify(row)}`);
  return rows;
}

// ---- what a client stores ----------------------------------------------------------------------

export interface Stored {
  revision: number;
  roles: unknown;
  grants: Record<string, unknown>;
  members: Record<string, unknown>;
  windows: unknown;
  changes: number;
}

/** Everything the client stores, as its reads show it: lists of every role, pending edges, the feed's length. */
export async function storedBy(c: RbacClient): Promise<Stored> {
  const roles = await c.listRoles();
  const list = expectOk(roles);
  const out: Stored = { revision: Number(roles.headers.get('x-authz-revision')), roles: list, grants: {}, members: {}, windows: undefined, changes: 0 };
  for (const { role } of list) {
    out.grants[role] = expectOk(await c.rolePermissions(role));
    out.members[role] = expectOk(await c.members(role));
  }
  out.windows = (await windowsPage(c)).data;
  out.changes = (await changesSince(c)).length;
  return out;
}

/** Asserts the client stores exactly what `before` saw (same revision, same data). */
export async function assertNothingStored(c: RbacClient, before: Stored, what: string): Promise<void> {
  assert.deepEqual(await storedBy(c), before, `${what}: stored data or revision changed`);
}

// ---- errors ------------------------------------------------------------------------------------

const MESSAGES: Readonly<Record<number, string>> = { ...STATUS_TEXT, 403: 'Forbidden', 412: 'Precondition failed' };

/**
 * Asserts an error envelope of `status` (§2, any status of §12 included) whose `error` contains
 * every string of `names`, and that its X-Authz-Revision is `revision` when given. Returns `error`.
 */
export function expectError(res: ApiResult<unknown>, status: number, names: readonly string[] = [], revision?: number, context = ''): string {
  const where = `${context ? `${context}: ` : ''}${show(res)}`;
  assert.equal(res.status, status, `expected ${status}: ${where}`);
  const body = asRecord(res.body);
  assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'message', 'success', 'timestamp'], where);
  assert.equal(body.success, false, where);
  assert.equal(body.code, status, where);
  assert.equal(body.message, MESSAGES[status], where);
  assert.equal(typeof body.error, 'string', where);
  const error = body.error as string;
  for (const name of names) assert.ok(error.includes(name), `error ${JSON.stringify(error)} does not name ${JSON.stringify(name)} (${context})`);
  if (revision !== undefined) assert.equal(res.headers.get('x-authz-revision'), String(revision), `X-Authz-Revision: ${where}`);
  return error;
}

/** The 412 of §12.4: `error` names If-Match and the current revision, which the header carries too. */
export function expectPreconditionFailed(res: ApiResult<unknown>, current: number, context = ''): void {
  const error = expectError(res, 412, ['If-Match'], current, context);
  assert.match(error, new RegExp(`\\b${current}\\b`), `412 error ${JSON.stringify(error)} does not name the current revision ${current} (${context})`);
}

/** `If-Match` with the revision `r` as an entity tag. */
export const ifMatch = (r: number | string): CallOptions => ({ headers: { 'if-match': typeof r === 'number' ? `"${r}"` : r } });
