/**
 * Reads of the routes held to what a model says, with messages that stay readable: the envelope
 * of each answer, every list complete and then walked page by page at several limits (and by a
 * cursor without a limit), and many such reads at once. Used by the property test.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { ApiResult, PageOptions } from '../../src/client/index.ts';
import { TIMESTAMP_RE } from './contract.ts';

/** Long strings shortened to a prefix, their length and a hash, so that diffs stay readable. */
export function compact<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (_k, v: unknown) =>
    typeof v === 'string' && v.length > 40
      ? `${v.slice(0, 12)}…[${[...v].length} code points, sha256 ${createHash('sha256').update(v).digest('hex').slice(0, 12)}]`
      : v,
  ) as T;
}

export function describeRes(res: ApiResult<unknown>): string {
  return `HTTP ${res.status} ${res.body === undefined ? '(no body)' : JSON.stringify(compact(res.body)).slice(0, 400)}`;
}

/** Asserts a success envelope with `status` and returns its data. */
export function expectOk<T>(res: ApiResult<T>, status: number, what: string): T {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${describeRes(res)}`);
  const body = res.body;
  assert.ok(body !== undefined && body.success === true, `${what}: not a success envelope: ${describeRes(res)}`);
  assert.equal(body.code, status, `${what}: code`);
  assert.equal(typeof body.message, 'string', `${what}: message`);
  assert.match(body.timestamp, TIMESTAMP_RE, `${what}: timestamp`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/i, `${what}: content-type`);
  return body.data;
}

/** Asserts an error envelope with `status`; `names` must appear in its `error` text. */
export function expectErr(res: ApiResult<unknown>, status: number, what: string, key: string | undefined, names?: string): void {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${describeRes(res)}`);
  const body = res.body;
  assert.ok(body !== undefined && body.success === false, `${what}: not an error envelope: ${describeRes(res)}`);
  assert.equal(body.code, status, `${what}: code`);
  assert.equal(typeof body.message, 'string', `${what}: message`);
  assert.equal(typeof body.error, 'string', `${what}: error`);
  assert.match(body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/, `${what}: timestamp`);
  if (names !== undefined) assert.ok(body.error.includes(names), `${what}: error ${JSON.stringify(body.error)} should name ${JSON.stringify(names)}`);
  if (key !== undefined) assert.ok(!JSON.stringify(body).toLowerCase().includes(key.toLowerCase()), `${what}: error body echoes the client key`);
}

/** Runs thunks with at most `width` in flight. */
export async function inParallel(tasks: ReadonlyArray<() => Promise<void>>, width = 8): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
}

export type Fetch<T> = (options?: PageOptions) => Promise<ApiResult<T[]>>;

/** Walks the list with `limit` following next_cursor; compares every page and the whole. */
export async function walk<T>(what: string, fetch: Fetch<T>, expected: readonly T[], limit: number): Promise<void> {
  const got: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    assert.ok(page <= expected.length + 1, `${what} limit=${limit}: too many pages`);
    const res = await fetch(cursor === undefined ? { limit } : { limit, cursor });
    const label = `${what} limit=${limit} page ${page}`;
    const data = expectOk(res, 200, label);
    assert.ok(Array.isArray(data), `${label}: data is not an array`);
    assert.equal(data.length, Math.min(limit, expected.length - got.length), `${label}: page length (got ${JSON.stringify(compact(data))})`);
    got.push(...data);
    const body = res.body as unknown as Record<string, unknown>;
    if (got.length >= expected.length) {
      assert.ok(!('next_cursor' in body), `${label}: next_cursor present on the page that ends the list`);
      break;
    }
    assert.equal(typeof body.next_cursor, 'string', `${label}: next_cursor missing on a cut page`);
    assert.ok((body.next_cursor as string).length > 0, `${label}: empty next_cursor`);
    cursor = body.next_cursor as string;
  }
  assert.deepEqual(compact(got), compact(expected), `${what} limit=${limit}: concatenated pages`);
}

/** Compares one list route with the model: complete, then (optionally) paged. */
export async function checkList<T>(what: string, fetch: Fetch<T>, expected: readonly T[], paginate: boolean): Promise<void> {
  const res = await fetch();
  const data = expectOk(res, 200, what);
  assert.deepEqual(compact(data), compact(expected), `${what}: list`);
  assert.ok(!('next_cursor' in (res.body as object)), `${what}: next_cursor on a complete list`);
  if (!paginate) return;
  const n = expected.length;
  for (const limit of new Set([1, 2, n - 1, n, n + 1])) {
    if (limit >= 1) await walk(what, fetch, expected, limit);
  }
  if (n >= 2) {
    // A cursor without limit: the rest of the list.
    const first = await fetch({ limit: 1 });
    expectOk(first, 200, `${what} limit=1`);
    assert.ok(first.nextCursor !== undefined, `${what} limit=1: next_cursor`);
    const rest = await fetch({ cursor: first.nextCursor });
    assert.deepEqual(compact(expectOk(rest, 200, `${what} cursor without limit`)), compact(expected.slice(1)), `${what}: rest of the list`);
    assert.ok(!('next_cursor' in (rest.body as object)), `${what} cursor without limit: next_cursor`);
  }
}
