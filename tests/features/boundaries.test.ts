/**
 * Boundary changes (CONTRACT §12.1) in real time, on a server with two workers: windows a second
 * or two long; each `not_before` / `expires_at` that passes becomes its own change within 5 s
 * (`*.activate` / `*.expire`, +1 revision each, a changelog row whose timestamp is the boundary,
 * an audit row by credential `system`), exactly once; a window replaced meanwhile is left alone;
 * reads decide by the time they are answered, before the change is committed; boundaries passed
 * while the server was stopped are committed at the next start, in time order.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { RbacClient } from '../../src/client/index.ts';
import { auditAll } from '../helpers/audit.ts';
import { expectOk, seedRole } from '../helpers/envelopes.ts';
import { answeredBy, rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';
import { changesSince, echoed, member, grantOf, onEdge, sent, stamped, type ChangeRow } from '../helpers/windows.ts';

/** The contract's bound on committing a boundary, and the slack of polling for it. */
const COMMIT_WITHIN_MS = 5000;
const POLL_SLACK_MS = 1000;

let server: RunningServer;

before(async () => {
  server = await startServer({ env: { AUTH_WORKERS: '2' } });
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, `exit code after SIGTERM\n${server.output().slice(-2000)}`);
});

/**
 * Polls the client's changes above `since` until there are `count`, noting when each revision was
 * first seen (epoch ms), so that the delay of each commit after its boundary can be told.
 */
async function waitForChanges(c: RbacClient, since: number, count: number): Promise<{ rows: ChangeRow[]; seenAt: Map<number, number> }> {
  const seenAt = new Map<number, number>();
  let rows: ChangeRow[] = [];
  await waitUntil(
    () => `${count} changes above revision ${since}, have ${JSON.stringify(rows)}`,
    async () => {
      rows = await changesSince(c, since);
      for (const row of rows) if (!seenAt.has(row.revision)) seenAt.set(row.revision, Date.now());
      return rows.length >= count ? rows : undefined;
    },
    { intervalMs: 100 },
  );
  return { rows, seenAt };
}

/** Asserts each row was committed within 5 s of its boundary (its timestamp); returns the delays seen. */
function committedInTime(rows: readonly ChangeRow[], seenAt: ReadonlyMap<number, number>, from?: number): number[] {
  const delays: number[] = [];
  for (const row of rows) {
    const boundary = Date.parse(`${row.timestamp}Z`);
    const start = from === undefined ? boundary : Math.max(boundary, from);
    const delay = (seenAt.get(row.revision) ?? Infinity) - start;
    delays.push(delay);
    assert.ok(
      delay <= COMMIT_WITHIN_MS + POLL_SLACK_MS,
      `${row.op} of ${row.user ?? row.permission} seen ${delay} ms after ${from === undefined ? 'its boundary' : 'the start'}`,
    );
  }
  return delays;
}

/** The audit rows of the boundary changes: by `system`, the edge's path, no ip nor request id. */
async function systemRows(c: RbacClient): Promise<Array<Record<string, unknown>>> {
  const rows = (await auditAll(c)).filter((r) => r.credential === 'system').reverse();
  for (const row of rows) {
    assert.deepEqual(Object.keys(row).sort(), ['action', 'credential', 'id', 'resource', 'revision', 'status', 'timestamp'], JSON.stringify(row));
  }
  return rows.map(({ action, resource, revision }) => ({ action, resource, revision }));
}

/** The first client's rows, for the last test: no boundary committed twice. */
let first: { c: RbacClient; rows: ChangeRow[]; lastBoundary: number } | undefined;

test('activate and expire: one change each, +1 revision, the boundary as timestamp, audited by system', async (t) => {
  const c = server.client();
  await seedRole(c, 'r', ['p']);
  // Leads of a few seconds: the five writes below are made before the first bound on a loaded machine too.
  const nb = Date.now() + 2500;
  const ex = nb + 700;
  const past = Date.now() - 60_000;
  const later = Date.now() + 3_600_000;
  // Revisions 3-7: alice and grant q timed; `now` already active (no activate change); `kept`
  // would expire first but its window is replaced before (left alone).
  expectOk(await onEdge(c, 'POST', member('alice', 'r'), { not_before: sent(nb), expires_at: sent(ex) }), 201);
  expectOk(await onEdge(c, 'PUT', grantOf('r', 'q'), { not_before: sent(nb), expires_at: sent(ex) }), 201);
  expectOk(await onEdge(c, 'POST', member('now', 'r'), { not_before: sent(past), expires_at: sent(ex + 300) }), 201);
  expectOk(await onEdge(c, 'POST', member('kept', 'r'), { expires_at: sent(nb - 500) }), 201);
  expectOk(await onEdge(c, 'PUT', member('kept', 'r'), { expires_at: sent(later) }), 200);
  const pending = expectOk(await c.isMember('alice', 'r'));
  if (Date.now() < nb) assert.deepEqual(pending, { is_member: false, not_before: echoed(nb), expires_at: echoed(ex) });

  const { rows, seenAt } = await waitForChanges(c, 7, 5);
  // Each row names the bound it passed (its timestamp); the edge's other bound may come with it.
  const windows: Record<string, { not_before: string; expires_at: string }> = {
    alice: { not_before: echoed(nb), expires_at: echoed(ex) },
    q: { not_before: echoed(nb), expires_at: echoed(ex) },
    now: { not_before: echoed(past), expires_at: echoed(ex + 300) },
  };
  for (const row of rows) {
    const own = windows[row.user ?? row.permission ?? ''];
    if (row.not_before !== undefined) assert.equal(row.not_before, own?.not_before, JSON.stringify(row));
    if (row.expires_at !== undefined) assert.equal(row.expires_at, own?.expires_at, JSON.stringify(row));
  }
  const passed = rows.map(({ op, role, user, permission, not_before, expires_at, timestamp }) => ({
    op,
    role,
    who: user ?? permission,
    bound: op.endsWith('.activate') ? not_before : expires_at,
    timestamp,
  }));
  // Two changes at one boundary: each its own revision, in either order.
  const sortOps = (xs: typeof passed): typeof passed => [...xs].sort((a, b) => a.op.localeCompare(b.op));
  assert.deepEqual(sortOps(passed.slice(0, 2)), [
    { op: 'membership.activate', role: 'r', who: 'alice', bound: echoed(nb), timestamp: stamped(nb) },
    { op: 'permission.activate', role: 'r', who: 'q', bound: echoed(nb), timestamp: stamped(nb) },
  ]);
  assert.deepEqual(sortOps(passed.slice(2, 4)), [
    { op: 'membership.expire', role: 'r', who: 'alice', bound: echoed(ex), timestamp: stamped(ex) },
    { op: 'permission.expire', role: 'r', who: 'q', bound: echoed(ex), timestamp: stamped(ex) },
  ]);
  assert.deepEqual(passed[4], { op: 'membership.expire', role: 'r', who: 'now', bound: echoed(ex + 300), timestamp: stamped(ex + 300) });
  assert.deepEqual(
    rows.map((r) => r.revision),
    [8, 9, 10, 11, 12],
    'one revision per boundary change',
  );
  t.diagnostic(`seen after their boundaries (ms): ${committedInTime(rows, seenAt).join(', ')}`);

  const audited = await waitUntil('the audit rows of five boundary changes', async () => {
    const found = await systemRows(c);
    return found.length >= 5 ? found : undefined;
  });
  const path = (row: ChangeRow): string => (row.user === undefined ? `/api/permission/r/${row.permission}` : `/api/membership/${row.user}/r`);
  assert.deepEqual(
    audited,
    rows.map((row) => ({ action: row.op, resource: path(row), revision: row.revision })),
  );

  assert.deepEqual(expectOk(await c.isMember('alice', 'r')), { is_member: false });
  assert.deepEqual(expectOk(await c.roleHasPermission('r', 'q')), { has_permission: false });
  assert.deepEqual(expectOk(await c.isMember('kept', 'r')), { is_member: true, expires_at: echoed(later) });
  assert.deepEqual(expectOk(await c.members('r')), [{ user: 'kept', expires_at: echoed(later) }]);
  assert.deepEqual(expectOk(await c.request('GET', '/api/windows')), [{ kind: 'membership', role: 'r', user: 'kept', expires_at: echoed(later) }]);
  first = { c, rows, lastBoundary: ex + 300 };
});

test('reads decide by the time they are answered, on both workers, before the change is committed', async (t) => {
  const c = server.client();
  const key = c.key ?? '';
  await seedRole(c, 'r', ['p']);
  const boundary = Date.now() + 2000;
  expectOk(await onEdge(c, 'POST', member('leaving', 'r'), { expires_at: sent(boundary) }), 201);
  expectOk(await onEdge(c, 'POST', member('arriving', 'r'), { not_before: sent(boundary) }), 201);
  const revisionBefore = 4;
  const get = (path: string): Promise<RawResult<Record<string, unknown>>> => rawRequest({ port: server.port, key, path });
  // The answer itself, not the window beside it: an edge past its expiry still shows its window
  // until the expire change deletes it, and whether an activated edge keeps its past not_before is
  // not this test's business.
  const users = (data: unknown): unknown =>
    Array.isArray(data)
      ? data.map((item: { user: string }) => item.user)
      : Object.fromEntries(Object.entries(data as object).filter(([k]) => k.startsWith('is_') || k.startsWith('has_')));
  const probes: Array<{ path: string; before: unknown; after: unknown }> = [
    { path: '/api/has_permission/leaving/p', before: { has_permission: true }, after: { has_permission: false } },
    { path: '/api/has_permission/arriving/p', before: { has_permission: false }, after: { has_permission: true } },
    { path: '/api/membership/leaving/r', before: { is_member: true }, after: { is_member: false } },
    { path: '/api/members/r', before: ['leaving'], after: ['arriving'] },
  ];
  let afterBoundary = 0;
  let uncommitted = 0;
  const workers = new Set<string>();
  while (Date.now() < boundary + 1500) {
    for (const probe of probes) {
      const sentAt = Date.now();
      const res = await get(probe.path);
      const answeredAt = Date.now();
      assert.equal(res.status, 200, res.text);
      workers.add(answeredBy(res));
      if (answeredAt < boundary) assert.deepEqual(users(res.data), probe.before, `${probe.path} answered before the boundary`);
      // Sent 1 ms or more after the boundary: answered after it, whatever was committed.
      if (sentAt > boundary) {
        afterBoundary++;
        if (res.revision === revisionBefore) uncommitted++;
        assert.deepEqual(users(res.data), probe.after, `${probe.path} sent ${sentAt - boundary} ms after the boundary, at revision ${res.revision}`);
      }
    }
  }
  const batch = await c.check([
    { user: 'leaving', permission: 'p' },
    { user: 'arriving', permission: 'p' },
  ]);
  assert.deepEqual(
    expectOk(batch).results.map((r) => r.has_permission),
    [false, true],
  );
  t.diagnostic(`${afterBoundary} answers after the boundary, ${uncommitted} of them before its change was committed; workers seen: ${workers.size}`);
  assert.ok(afterBoundary > 0, 'no answer after the boundary was sampled');
});

test('boundaries passed while the server was stopped are committed at the next start, in time order', async (t) => {
  const { dir, cleanup } = tempDir();
  const sqlitePath = join(dir, 'rbac.sqlite3');
  const env = { AUTH_WORKERS: '2', AUTH_DATABASE_TYPE: 'sqlite' };
  let stopped: RunningServer | undefined = await startServer({ env, sqlitePath });
  let restarted: RunningServer | undefined;
  try {
    const key = stopped.client().key ?? '';
    const c = stopped.client(key);
    await seedRole(c, 'r', ['p']);
    const t1 = Date.now() + 2500;
    const [t2, t3, t4] = [t1 + 300, t1 + 600, t1 + 900];
    expectOk(await onEdge(c, 'POST', member('a', 'r'), { expires_at: sent(t1) }), 201);
    expectOk(await onEdge(c, 'POST', grantOf('r', 'q'), { not_before: sent(t2) }), 201);
    expectOk(await onEdge(c, 'POST', member('b', 'r'), { not_before: sent(t3), expires_at: sent(t4) }), 201);
    assert.equal(expectOk(await c.request<unknown[]>('GET', '/api/changes?since=0')).length, 5);
    assert.equal(await stopped.stop(), 0);
    stopped = undefined;
    assert.ok(Date.now() < t1, `the server took until ${Date.now() - t1} ms after the first boundary to stop: the test proves nothing`);
    // The point of this wait: every boundary passes while no instance runs.
    await sleep(t4 + 200 - Date.now());

    restarted = await startServer({ env, sqlitePath });
    const startedAt = Date.now();
    const d = restarted.client(key);
    const { rows, seenAt } = await waitForChanges(d, 5, 4);
    assert.deepEqual(
      rows.map(({ revision, op, user, permission, timestamp }) => ({ revision, op, who: user ?? permission, timestamp })),
      [
        { revision: 6, op: 'membership.expire', who: 'a', timestamp: stamped(t1) },
        { revision: 7, op: 'permission.activate', who: 'q', timestamp: stamped(t2) },
        { revision: 8, op: 'membership.activate', who: 'b', timestamp: stamped(t3) },
        { revision: 9, op: 'membership.expire', who: 'b', timestamp: stamped(t4) },
      ],
    );
    t.diagnostic(`seen after the start (ms): ${committedInTime(rows, seenAt, startedAt).join(', ')}`);
    assert.deepEqual(expectOk(await d.whichUsersCan('p')), []);
    assert.equal(expectOk(await d.roleHasPermission('r', 'q')).has_permission, true);
    const audited = await waitUntil('four audit rows by system', async () => {
      const found = await systemRows(d);
      return found.length >= 4 ? found : undefined;
    });
    assert.deepEqual(
      audited.map((r) => [r.action, r.revision]),
      rows.map((r) => [r.op, r.revision]),
    );
  } finally {
    await stopped?.kill();
    if (restarted !== undefined) assert.equal(await restarted.stop(), 0, restarted.output().slice(-2000));
    cleanup();
  }
});

test('no boundary was committed twice by the two workers', async () => {
  assert.ok(first !== undefined, 'the first test did not finish');
  // A second commit of a boundary would come within 5 s of it: let that time pass (the tests
  // above took most of it already).
  await sleep(first.lastBoundary + COMMIT_WITHIN_MS - Date.now());
  assert.deepEqual(await changesSince(first.c, 7), first.rows);
  assert.equal((await systemRows(first.c)).length, first.rows.length);
});
