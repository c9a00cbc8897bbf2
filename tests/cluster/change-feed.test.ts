/**
 * Multi-process mode (docs/operations.md §4 signals, docs/api.md §10 the change feed, §9
 * consistency): AUTH_WORKERS workers share one port (SO_REUSEPORT), so a request on a brand-new
 * TCP connection lands on a worker the kernel picks. The change feed on two workers: since must be a
 * non-negative integer, and limit=1 pages through every revision on either worker.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { start, startTimes, freshGet, entryKey, allChanges, type ChangeEntry } from '../helpers/cluster.ts';
import { show } from '../helpers/show.ts';

// ---- 6. /api/changes validation and paging ---------------------------------------------------------

test('6. /api/changes (2 workers): since must be a non-negative integer; limit=1 pages through every revision', { timeout: 120_000 }, async () => {
  const server = await start(2);
  try {
    const key = randomUUID();
    const c = server.client(key);
    const ops = ['role.create R', 'permission.grant R perm=a', 'permission.grant R perm=b', 'membership.add R user=alice', 'permission.revoke R perm=a'];
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.grant('R', 'a')).status, 201);
    assert.equal((await c.grant('R', 'b')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    assert.equal((await c.revoke('R', 'a')).status, 200);

    for (const since of ['abc', '-1', '1.5']) {
      const res = await freshGet(server.port, key, `/api/changes?since=${since}`);
      assert.equal(res.status, 400, `since=${since}: ${show(res)}`);
      const body = res.body as { success?: unknown; code?: unknown; error?: unknown };
      assert.equal(body.success, false, `since=${since}: error envelope`);
      assert.equal(body.code, 400);
      assert.match(String(body.error), /since/, `since=${since}: the error names the parameter`);
      assert.equal(res.revision, 5, `since=${since}: X-Authz-Revision on an error`);
    }

    const whole = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes');
    assert.equal(whole.status, 200, show(whole));
    assert.deepEqual(whole.data?.map(entryKey), ops, 'without since: every change, ascending');
    assert.deepEqual(
      whole.data?.map((e) => e.revision),
      [1, 2, 3, 4, 5],
    );
    assert.equal(whole.nextCursor, undefined);
    const rec = whole.data?.[1] as unknown as Record<string, unknown>;
    assert.equal('user' in rec, false, 'absent fields are omitted');
    assert.match(String(rec.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/);

    // limit=1: one entry a page, each page on a new connection (so on either worker).
    const paged = await allChanges(server.port, key, 1);
    assert.deepEqual(paged.entries.map(entryKey), ops, 'limit=1 pages through every change in order');
    assert.equal(paged.pages, 5, 'five pages of one; the last has no next_cursor');
    assert.deepEqual(paged.entries, whole.data, 'paged entries equal the unpaged list');

    const fromThree = await allChanges(server.port, key, 1, 3);
    assert.deepEqual(
      fromThree.entries.map((e) => e.revision),
      [4, 5],
      'since=3 with limit=1',
    );
    const none = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=5&limit=1');
    assert.equal(none.status, 200, show(none));
    assert.deepEqual(none.data, []);
    assert.equal(none.nextCursor, undefined);
    const far = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=1000');
    assert.deepEqual(far.data, [], 'since beyond the last revision: empty');

    // A cursor belongs to its since and its client.
    const first = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=0&limit=1');
    const cur = encodeURIComponent(first.nextCursor ?? '');
    const foreign = await freshGet(server.port, randomUUID(), `/api/changes?since=0&limit=1&cursor=${cur}`);
    assert.equal(foreign.status, 400, `another client's cursor: ${show(foreign)}`);
    const sig = (first.nextCursor ?? '').split('.')[1] ?? '';
    const forged = encodeURIComponent(`${Buffer.from('0').toString('base64url')}.${sig}`);
    const tampered = await freshGet(server.port, key, `/api/changes?since=0&limit=1&cursor=${forged}`);
    assert.equal(tampered.status, 400, `a tampered cursor: ${show(tampered)}`);
    const moved = await freshGet(server.port, key, `/api/changes?since=2&limit=1&cursor=${cur}`);
    assert.equal(moved.status, 400, `a cursor issued for since=0 used with since=2: ${show(moved)}`);
  } finally {
    await server.kill();
  }
});

test.after(() => {
  process.stdout.write(`# server start-up times (ms): ${startTimes.join(', ')}\n`);
});
