/**
 * The workflow routes of docs/api.md §6 and §10 as the black-box tests call them: typed answers
 * written out from the contract (not imported from src/), polling for runs, and the checks every
 * test shares. Every webhook secret a server returns is remembered for the leak scan: the service
 * shows it once, in the 201, and never prints it.
 */
import assert from 'node:assert/strict';
import type { ApiResult, CallOptions, PageOptions, RbacClient } from '../../src/client/index.ts';
import { TIMESTAMP_RE } from './contract.ts';
import { rememberSecret } from './leak-record.ts';
import { byCodePoint } from '../../support/rbac-model.ts';
import { show } from './show.ts';
import { EVENT_TIMEOUT_MS, sleep } from './wait.ts';

export interface ScheduleCreated {
  workflow: string;
  interval_seconds: number;
  webhook_url: string | null;
  webhook_secret: string;
}

export interface ScheduleItem {
  workflow: string;
  interval_seconds: number;
  webhook_url: string | null;
  last_run_at: string | null;
}

export interface Delivery {
  status: 'none' | 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status: number | null;
}

export interface RunItem {
  run_at: string;
  revision: number;
  users_count: number;
  added: string[];
  removed: string[];
  delivery: Delivery;
}

export const WEBHOOK_SECRET_RE = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

const seg = encodeURIComponent;

/** Epoch ms of a wire timestamp (UTC, 6 fractional digits, no zone); the microseconds are dropped. */
export function atMs(timestamp: string): number {
  assert.match(timestamp, TIMESTAMP_RE, `a wire timestamp: ${timestamp}`);
  return Date.parse(`${timestamp.slice(0, 23)}Z`);
}

/** `POST /api/workflow/schedule/{workflow}` with `body` as given (any JSON, to test refusals). */
export async function schedule(c: RbacClient, workflow: string, body: unknown, options: CallOptions = {}): Promise<ApiResult<ScheduleCreated>> {
  const res = await c.request<ScheduleCreated>('POST', `/api/workflow/schedule/${seg(workflow)}`, { ...options, body });
  const secret: unknown = (res.data as { webhook_secret?: unknown } | undefined)?.webhook_secret;
  if (typeof secret === 'string') rememberSecret(secret, 'secret');
  return res;
}

/** A schedule that must be created: 201 with the contract's fields; returns its secret. */
export async function scheduled(c: RbacClient, workflow: string, interval: number, webhookUrl?: string): Promise<string> {
  const res = await schedule(c, workflow, webhookUrl === undefined ? { interval_seconds: interval } : { interval_seconds: interval, webhook_url: webhookUrl });
  assert.equal(res.status, 201, `schedule ${workflow}: ${show(res)}`);
  const data = res.data as ScheduleCreated;
  assert.deepEqual(Object.keys(data).sort(), ['interval_seconds', 'webhook_secret', 'webhook_url', 'workflow']);
  assert.equal(data.workflow, workflow);
  assert.equal(data.interval_seconds, interval);
  assert.equal(data.webhook_url, webhookUrl ?? null);
  expectSecret(data.webhook_secret);
  return data.webhook_secret;
}

/** `whsec_` and standard base64 of 24 or more bytes. */
export function expectSecret(secret: unknown): void {
  assert.equal(typeof secret, 'string', `webhook_secret: ${String(secret)}`);
  const s = secret as string;
  assert.match(s, WEBHOOK_SECRET_RE, 'webhook_secret is whsec_<base64>');
  const bytes = Buffer.from(s.slice('whsec_'.length), 'base64');
  assert.ok(bytes.length >= 24, `the secret decodes to ${bytes.length} bytes, fewer than 24`);
  // Node's decoder skips what is not base64; re-encoding proves every character counted.
  assert.equal(bytes.toString('base64'), s.slice('whsec_'.length), 'the secret is canonical base64');
}

export function unschedule(c: RbacClient, workflow: string, options: CallOptions = {}): Promise<ApiResult<{ workflow: string }>> {
  return c.request('DELETE', `/api/workflow/schedule/${seg(workflow)}`, options);
}

export function schedules(c: RbacClient, options: CallOptions = {}): Promise<ApiResult<ScheduleItem[]>> {
  return c.request('GET', '/api/workflow/schedules', options);
}

function query(options: PageOptions): string {
  const q = new URLSearchParams();
  if (options.limit !== undefined) q.set('limit', String(options.limit));
  if (options.cursor !== undefined) q.set('cursor', options.cursor);
  const qs = q.toString();
  return qs.length > 0 ? `?${qs}` : '';
}

export function runsPage(c: RbacClient, workflow: string, options: PageOptions = {}): Promise<ApiResult<RunItem[]>> {
  return c.request('GET', `/api/workflow/runs/${seg(workflow)}${query(options)}`, options);
}

export function usersPage(c: RbacClient, workflow: string, options: PageOptions = {}): Promise<ApiResult<Array<{ user: string }>>> {
  return c.request('GET', `/api/workflow/users/${seg(workflow)}${query(options)}`, options);
}

export function canRun(c: RbacClient, user: string, workflow: string): Promise<ApiResult<{ can_run: boolean }>> {
  return c.request('GET', `/api/workflow/user/${seg(user)}/can_run/${seg(workflow)}`);
}

/** Every run of the schedule, newest first (one page: the list is complete without a limit). */
export async function runs(c: RbacClient, workflow: string): Promise<RunItem[]> {
  const res = await runsPage(c, workflow);
  assert.equal(res.status, 200, `GET runs of ${workflow}: ${show(res)}`);
  assert.equal(res.nextCursor, undefined, 'a list without limit is complete');
  return res.data as RunItem[];
}

/** Polls the runs every 100 ms until `done` says they are as wanted; fails after `timeoutMs`. */
export async function waitForRuns(c: RbacClient, workflow: string, what: string, timeoutMs: number, done: (runs: RunItem[]) => boolean): Promise<RunItem[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await runs(c, workflow);
    if (done(list)) return list;
    if (Date.now() > deadline) assert.fail(`${workflow}: ${what}: not within ${timeoutMs} ms; runs: ${JSON.stringify(list.slice(0, 6))}`);
    await sleep(100);
  }
}

/** The first run that read at least `revision` (a run after the write that answered it). */
export async function runAtLeast(c: RbacClient, workflow: string, revision: number, timeoutMs = EVENT_TIMEOUT_MS): Promise<RunItem> {
  const list = await waitForRuns(c, workflow, `a run at revision ≥ ${revision}`, timeoutMs, (l) => l.some((r) => r.revision >= revision));
  return [...list].reverse().find((r) => r.revision >= revision) as RunItem;
}

/** A run with exactly the contract's fields and types. */
export function expectRunShape(run: RunItem): void {
  assert.deepEqual(Object.keys(run).sort(), ['added', 'delivery', 'removed', 'revision', 'run_at', 'users_count'], JSON.stringify(run));
  atMs(run.run_at);
  assert.ok(Number.isInteger(run.revision) && run.revision >= 0, JSON.stringify(run));
  assert.ok(Number.isInteger(run.users_count) && run.users_count >= 0, JSON.stringify(run));
  for (const list of [run.added, run.removed]) {
    assert.ok(Array.isArray(list) && list.every((u) => typeof u === 'string'), JSON.stringify(run));
    assert.deepEqual(list, [...new Set(list)].sort(byCodePoint), `sorted by code point, no duplicates: ${JSON.stringify(run)}`);
  }
  assert.deepEqual(Object.keys(run.delivery).sort(), ['attempts', 'last_status', 'status'], JSON.stringify(run));
  assert.ok(['none', 'pending', 'delivered', 'failed'].includes(run.delivery.status), JSON.stringify(run));
  assert.ok(Number.isInteger(run.delivery.attempts) && run.delivery.attempts >= 0, JSON.stringify(run));
  assert.ok(run.delivery.last_status === null || Number.isInteger(run.delivery.last_status), JSON.stringify(run));
}

/** Newest first: run_at strictly descending, revisions never increasing. */
export function expectNewestFirst(list: readonly RunItem[]): void {
  for (let i = 1; i < list.length; i++) {
    const newer = list[i - 1] as RunItem;
    const older = list[i] as RunItem;
    // One fixed-width format: text order is time order.
    assert.ok(newer.run_at > older.run_at, `run_at descending: ${newer.run_at} then ${older.run_at}`);
    assert.ok(newer.revision >= older.revision, `revisions never go back: ${newer.revision} then ${older.revision}`);
  }
}

/**
 * Walks the runs in pages of `limit`; every page but the last is full and carries next_cursor.
 * Resolves with the runs in order and the page sizes.
 */
export async function walkRuns(c: RbacClient, workflow: string, limit: number): Promise<{ runs: RunItem[]; sizes: number[] }> {
  const out: RunItem[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 1000, 'the walk ends');
    const res = await runsPage(c, workflow, cursor === undefined ? { limit } : { limit, cursor });
    assert.equal(res.status, 200, show(res));
    out.push(...(res.data ?? []));
    sizes.push(res.data?.length ?? 0);
    if (res.nextCursor === undefined) return { runs: out, sizes };
    assert.equal(res.data?.length, limit, 'a cut page is full');
    cursor = res.nextCursor;
  }
}
