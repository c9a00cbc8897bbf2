/**
 * The answers of /api as docs/api.md §1-5 writes them, asserted: success and error envelopes, the
 * headers every answer carries, the revision header, and the key never echoed. Shared by the
 * contract suites (tests/contract/), each of which holds every answer it gets to these.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from './contract.ts';
import { show } from './show.ts';

export function asRecord(value: unknown): Record<string, unknown> {
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `not an object: ${JSON.stringify(value)}`);
  return value as Record<string, unknown>;
}

export function assertTimestamp(ts: unknown): void {
  assert.equal(typeof ts, 'string', `timestamp is not a string: ${JSON.stringify(ts)}`);
  const text = ts as string;
  assert.match(text, TIMESTAMP_RE);
  const t = Date.parse(`${text}Z`);
  assert.ok(Number.isFinite(t), `unparseable timestamp ${text}`);
  assert.ok(Math.abs(t - Date.now()) < 60_000, `timestamp ${text} is not close to now (${new Date().toISOString()})`);
}

export function assertJsonType(headers: Headers): void {
  const ct = headers.get('content-type') ?? '';
  assert.ok(ct.toLowerCase().startsWith('application/json'), `content-type is ${JSON.stringify(ct)}`);
}

export function assertRequestId(headers: Headers): void {
  const id = headers.get('x-request-id');
  assert.ok(id !== null && id.length > 0, 'missing X-Request-Id');
}

/** Asserts a success envelope with `status` and returns its data. */
export function expectOk<T>(res: ApiResult<T>, status = 200): T {
  assert.equal(res.status, status, `expected ${status}, got ${show(res)}`);
  const body = asRecord(res.body);
  assert.equal(body.success, true);
  assert.equal(body.code, status);
  assert.equal(typeof body.message, 'string');
  assert.ok((body.message as string).length > 0, 'empty success message');
  assertTimestamp(body.timestamp);
  for (const k of Object.keys(body)) {
    assert.ok(['success', 'code', 'message', 'data', 'timestamp', 'next_cursor'].includes(k), `unexpected envelope key ${k}`);
  }
  assert.ok('data' in body, 'success envelope without data');
  assertJsonType(res.headers);
  assertRequestId(res.headers);
  assert.ok(res.data !== undefined);
  return res.data;
}

/**
 * Asserts an error envelope with `status`. `detail`: a string the `error` must contain, or a RegExp it
 * must match. Returns the `error` text.
 */
export function expectErr(res: ApiResult<unknown>, status: number, detail?: string | RegExp, context = ''): string {
  assert.equal(res.status, status, `${context ? `${context}: ` : ''}expected ${status}, got ${show(res)}`);
  const body = asRecord(res.body);
  assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'message', 'success', 'timestamp']);
  assert.equal(body.success, false);
  assert.equal(body.code, status);
  assert.equal(body.message, STATUS_TEXT[status]);
  assert.equal(typeof body.error, 'string');
  const error = body.error as string;
  assert.ok(error.length > 0, 'empty error text');
  assert.doesNotMatch(error, /SQLITE|node_modules|\.ts:\d|\n\s+at /, `error leaks internals: ${error}`);
  assertTimestamp(body.timestamp);
  assertJsonType(res.headers);
  assertRequestId(res.headers);
  if (typeof detail === 'string') assert.ok(error.includes(detail), `error ${JSON.stringify(error)} does not name ${JSON.stringify(detail)}`);
  else if (detail !== undefined) assert.match(error, detail);
  return error;
}

export function expectRoleMissing(res: ApiResult<unknown>, role: string): void {
  expectErr(res, 404);
  assert.equal(res.error, `Role '${role}' does not exist`);
}

export function expectRev(res: ApiResult<unknown>, revision: number): void {
  assert.equal(res.headers.get('x-authz-revision'), String(revision), `X-Authz-Revision of ${show(res)}`);
}

export function expectNoRev(res: ApiResult<unknown>): void {
  assert.equal(res.headers.get('x-authz-revision'), null, 'unexpected X-Authz-Revision');
}

/** The current revision of a tenant (from a read). */
export async function revisionOf(c: RbacClient): Promise<number> {
  const res = await c.listRoles();
  expectOk(res);
  const rev = res.headers.get('x-authz-revision');
  assert.ok(rev !== null && /^\d+$/.test(rev), `bad X-Authz-Revision ${String(rev)}`);
  return Number(rev);
}

export function allowOf(headers: Headers): string[] {
  const allow = headers.get('allow');
  assert.ok(allow !== null, 'missing Allow header');
  return allow.split(',').map((m) => m.trim().toUpperCase());
}

/** Asserts no body text nor header value of `res` contains any part of `key`. */
export function assertNoKey(res: ApiResult<unknown>, key: string): void {
  const parts = [
    key,
    key.toLowerCase(),
    key.toUpperCase(),
    key.replace(/-/g, '').toLowerCase(),
    ...key
      .toLowerCase()
      .split('-')
      .filter((p) => p.length >= 8),
  ];
  const texts = [JSON.stringify(res.body ?? null).toLowerCase()];
  res.headers.forEach((value, name) => texts.push(`${name}: ${value}`.toLowerCase()));
  for (const t of texts) for (const p of parts) assert.ok(!t.includes(p.toLowerCase()), `response contains the key (${p}): ${t}`);
}

/** A client key: a UUID v4 with the given variant nibble, optionally upper-cased. */
export function v4Key(variant = '8', upper = false): string {
  const k = randomUUID();
  const key = `${k.slice(0, 14)}4${k.slice(15, 19)}${variant}${k.slice(20)}`;
  return upper ? key.toUpperCase() : key;
}

/** Creates `role` with its permissions and members, each write answered 201. */
export async function seedRole(c: RbacClient, role: string, perms: readonly string[] = [], users: readonly string[] = []): Promise<void> {
  expectOk(await c.createRole(role), 201);
  for (const p of perms) expectOk(await c.grant(role, p), 201);
  for (const u of users) expectOk(await c.addMember(u, role), 201);
}
