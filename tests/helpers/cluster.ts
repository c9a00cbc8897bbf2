/**
 * Multi-process mode as the cluster tests see it from outside: servers with AUTH_WORKERS workers
 * (and their "worker ready" log lines), requests on brand-new TCP connections (so the kernel
 * picks the worker, SO_REUSEPORT), writes as ops, and the change feed (docs/api.md §10) read
 * whole and checked gapless.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import type { Change } from '../../src/authz/changes.ts';
import { RawError, rawRequest, type RawResult } from './raw-http.ts';
import { RbacModel } from '../../support/rbac-model.ts';
import { startServer, type RunningServer } from './server.ts';
import { show } from './show.ts';
import { sleep, waitUntil } from './wait.ts';

/** Milliseconds each server took to start (diagnostics). */
export const startTimes: number[] = [];

export async function start(workers: number, sqlitePath?: string): Promise<RunningServer> {
  const t0 = Date.now();
  const server = await startServer({
    env: { AUTH_WORKERS: String(workers), AUTH_LOG_LEVEL: 'debug' },
    ...(sqlitePath === undefined ? {} : { sqlitePath }),
  });
  // "listening" comes when every worker reported ready; their own debug line may trail it a little.
  await waitUntil(`${workers} "worker ready" log lines`, () => (readyPids(server).length >= workers ? true : undefined));
  startTimes.push(Date.now() - t0);
  return server;
}

export interface LogLine {
  readonly msg?: unknown;
  readonly event?: unknown;
  readonly level?: unknown;
  readonly pid?: unknown;
  /** A worker's pid, on the primary's lines about it (`pid` is always the writer's). */
  readonly worker_pid?: unknown;
  readonly role?: unknown;
  readonly restarts?: unknown;
  readonly signal?: unknown;
  readonly [field: string]: unknown;
}

export function logLines(server: RunningServer): LogLine[] {
  const out: LogLine[] = [];
  for (const line of server.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line still being written
    }
  }
  return out;
}

/** Pids of workers that logged "worker ready", in order. */
export function readyPids(server: RunningServer): number[] {
  const pids: number[] = [];
  for (const l of logLines(server)) {
    if (l.event === 'worker.ready' && l.role === 'worker' && typeof l.pid === 'number' && !pids.includes(l.pid)) pids.push(l.pid);
  }
  return pids;
}

/** The service's warn and error log lines, for assertion messages. */
export function warnings(server: RunningServer): string {
  const lines = server
    .output()
    .split('\n')
    .filter((l) => /"level":(40|50)[,}]/.test(l) || (l.length > 0 && !l.startsWith('{')));
  return lines.length === 0 ? '(no warnings in the log)' : lines.slice(0, 20).join('\n');
}

export function logsAbout(server: RunningServer, pid: number): string {
  return logLines(server)
    .filter((l) => l.pid === pid || l.worker_pid === pid || (typeof l.level === 'number' && l.level >= 40))
    .map((l) => JSON.stringify(l))
    .join('\n');
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A GET on a brand-new TCP connection, retried (bounded) on connection errors, which are counted. */
export async function freshGet<T>(port: number, key: string, path: string, errors?: string[], attempts = 4): Promise<RawResult<T>> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await rawRequest<T>({ port, key, path, timeoutMs: 10_000 });
    } catch (err) {
      if (!(err instanceof RawError)) throw err;
      errors?.push(`${path}: ${err.message}`);
      last = err;
      await sleep(30);
    }
  }
  throw last;
}

export type Op =
  | { readonly kind: 'grant' | 'revoke'; readonly role: string; readonly perm: string }
  | { readonly kind: 'add' | 'remove'; readonly role: string; readonly user: string };

const OP_NAME = { grant: 'permission.grant', revoke: 'permission.revoke', add: 'membership.add', remove: 'membership.remove' } as const;

export function opKey(op: Op): string {
  return 'perm' in op ? `${OP_NAME[op.kind]} ${op.role} perm=${op.perm}` : `${OP_NAME[op.kind]} ${op.role} user=${op.user}`;
}

/** The op as the change it commits. */
export function changeOf(op: Op): Change {
  if ('perm' in op) return { op: OP_NAME[op.kind], role: op.role, permission: op.perm };
  return { op: OP_NAME[op.kind], role: op.role, user: op.user };
}

export function expectedStatus(op: Op): number {
  return op.kind === 'grant' || op.kind === 'add' ? 201 : 200;
}

/** The status a retry gets when the attempt whose answer was lost had committed. */
export function alreadyDoneStatus(op: Op): number {
  return op.kind === 'grant' || op.kind === 'add' ? 409 : 404;
}

export function sendOp(port: number, key: string, op: Op, agent: http.Agent | false, timeoutMs = 15_000): Promise<RawResult<{ revision: number }>> {
  const e = encodeURIComponent;
  const path = 'perm' in op ? `/api/permission/${e(op.role)}/${e(op.perm)}` : `/api/membership/${e(op.user)}/${e(op.role)}`;
  const method = op.kind === 'grant' || op.kind === 'add' ? 'POST' : 'DELETE';
  return rawRequest<{ revision: number }>({ port, key, method, path, agent, timeoutMs });
}

export interface ChangeEntry {
  revision: number;
  op: string;
  role: string;
  permission?: string;
  user?: string;
  timestamp: string;
}

export function entryKey(e: ChangeEntry): string {
  if (e.op === 'permission.grant' || e.op === 'permission.revoke') return `${e.op} ${e.role} perm=${e.permission ?? '(missing)'}`;
  if (e.op === 'membership.add' || e.op === 'membership.remove') return `${e.op} ${e.role} user=${e.user ?? '(missing)'}`;
  return `${e.op} ${e.role}`;
}

/** The whole changelog after `since`, following next_cursor, every page on a new connection. */
export async function allChanges(port: number, key: string, limit = 100, since = 0): Promise<{ entries: ChangeEntry[]; pages: number }> {
  const entries: ChangeEntry[] = [];
  let cursor: string | undefined;
  for (let page = 1; page <= 2000; page++) {
    const qs = `since=${since}&limit=${limit}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res = await freshGet<ChangeEntry[]>(port, key, `/api/changes?${qs}`);
    assert.equal(res.status, 200, `GET /api/changes?${qs}: ${show(res)}`);
    assert.ok(Array.isArray(res.data), `GET /api/changes?${qs}: data is an array`);
    assert.ok(res.data.length <= limit, `GET /api/changes?${qs}: at most ${limit} entries, got ${res.data.length}`);
    entries.push(...res.data);
    if (res.nextCursor === undefined) return { entries, pages: page };
    cursor = res.nextCursor;
  }
  assert.fail('GET /api/changes: more than 2000 pages');
}

/** Revisions must be exactly 1..n, ascending. Returns n. */
export function assertGapless(entries: readonly ChangeEntry[], what: string): number {
  const revs = entries.map((e) => e.revision);
  const expected = Array.from({ length: revs.length }, (_, i) => i + 1);
  if (revs.some((r, i) => r !== expected[i])) {
    const missing = expected.filter((r) => !revs.includes(r)).slice(0, 20);
    const dups = revs.filter((r, i) => revs.indexOf(r) !== i).slice(0, 20);
    assert.fail(
      `${what}: revisions in /api/changes are not exactly 1..${revs.length}: missing ${JSON.stringify(missing)}, duplicated ${JSON.stringify(dups)}, first ${JSON.stringify(revs.slice(0, 10))}`,
    );
  }
  return revs.length;
}

/** The change an entry of the changelog records (its description left out: the feed has none). */
function changeOfEntry(e: ChangeEntry): Change {
  switch (e.op) {
    case 'role.create':
      return { op: 'role.create', role: e.role, description: '' };
    case 'role.delete':
      return { op: 'role.delete', role: e.role };
    case 'permission.grant':
    case 'permission.revoke':
      return { op: e.op, role: e.role, permission: e.permission ?? '' };
    case 'membership.add':
    case 'membership.remove':
      return { op: e.op, role: e.role, user: e.user ?? '' };
    default:
      return assert.fail(`an unknown op in the changelog: ${JSON.stringify(e)}`);
  }
}

/** What the changelog says each role holds: its entries replayed in order into the reference model. */
export function replay(entries: readonly ChangeEntry[]): RbacModel {
  return RbacModel.of(entries.map(changeOfEntry));
}

export function errorCode(err: unknown): string {
  return err instanceof RawError ? err.code : err instanceof Error ? err.message : String(err);
}
