/**
 * The audit trail (docs/api.md §11) as the tests read it: the client's rows, walked in pages or
 * waited for, and the checks of one row against what the request was.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { ApiResult, AuditRow, PageOptions, RbacClient } from '../../src/client/index.ts';
import { TIMESTAMP_RE } from './contract.ts';
import { waitUntil } from './wait.ts';

export type AuditItem = AuditRow;

/** A request id without the shape of a client key (the leak scan flags any UUID v4 in server output). */
export const rid = (what: string): string => `${what}-${randomBytes(8).toString('hex')}`;

/** `key:` and the first 12 hex of SHA-256 of the lower-cased key. */
export const keyCredential = (key: string): string => `key:${createHash('sha256').update(key.toLowerCase()).digest('hex').slice(0, 12)}`;

export function auditPage(c: RbacClient, options: PageOptions = {}): Promise<ApiResult<AuditItem[]>> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.cursor !== undefined) query.set('cursor', options.cursor);
  const qs = query.toString();
  return c.request<AuditItem[]>('GET', qs.length > 0 ? `/api/audit?${qs}` : '/api/audit', options);
}

/** The client's whole trail, newest first, walked in pages. */
export function auditAll(c: RbacClient, limit = 1000): Promise<AuditItem[]> {
  return c.all((o) => auditPage(c, o), limit);
}

/**
 * Polls the client's trail until a row of each request id is there: a failed request's row is
 * recorded after its answer (batched, some 50 ms later on an idle server).
 */
export async function waitForRows(c: RbacClient, requestIds: readonly string[]): Promise<AuditItem[]> {
  let state = '';
  return waitUntil(
    () => `audit rows of every request: ${state}`,
    async () => {
      const rows = await auditAll(c);
      const seen = new Set(rows.map((r) => r.request_id));
      const missing = requestIds.filter((id) => !seen.has(id));
      state = `none for ${missing.length} request(s): ${missing.slice(0, 5).join(', ')}\nrows: ${JSON.stringify(rows).slice(0, 1500)}`;
      return missing.length === 0 ? rows : undefined;
    },
  );
}

/** The one row of `requestId` among `rows`. */
export function rowOf(rows: readonly AuditItem[], requestId: string): AuditItem {
  const found = rows.filter((r) => r.request_id === requestId);
  assert.equal(found.length, 1, `rows of request ${requestId}: ${JSON.stringify(found)}`);
  return found[0] as AuditItem;
}

export interface Expected {
  action: string;
  resource: string;
  status: number;
  credential: string;
  revision?: number;
}

/** A row with exactly the contract's fields, as expected, recorded between `from` and now. */
export function expectRow(row: AuditItem, want: Expected, from: number): void {
  const where = JSON.stringify(row);
  const keys = ['action', 'credential', 'id', 'ip', 'request_id', 'resource', 'status', 'timestamp'];
  if (want.revision !== undefined) keys.push('revision');
  assert.deepEqual(Object.keys(row).sort(), keys.sort(), `fields of ${where} (revision only on a successful write)`);
  assert.ok(Number.isInteger(row.id) && row.id > 0, `id: ${where}`);
  assert.match(row.timestamp, TIMESTAMP_RE, `timestamp: UTC, 6 fractional digits, no zone: ${where}`);
  const at = Date.parse(`${row.timestamp}Z`);
  assert.ok(at >= from - 2000 && at <= Date.now() + 2000, `timestamp ${row.timestamp} is not the time of the request (${new Date(from).toISOString()})`);
  assert.equal(row.action, want.action, `action: ${where}`);
  assert.equal(row.resource, want.resource, `resource: ${where}`);
  assert.equal(row.status, want.status, `status: ${where}`);
  assert.equal(row.credential, want.credential, `credential: ${where}`);
  assert.equal(row.ip, '127.0.0.1', `ip: ${where}`);
  if (want.revision !== undefined) assert.equal(row.revision, want.revision, `revision: ${where}`);
}
