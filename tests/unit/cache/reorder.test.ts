// TenantCache.apply with changes that arrive out of revision order: two workers commit at almost
// the same time, and each hears of its own change before the other's. The cache must hold the
// early arrival until the missing change comes, replay the changelog only when it does not, and
// never apply out of order nor keep a writer waiting on a graph that is gone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Change, ChangeRecord, Snapshot } from '../../../src/authz/changes.ts';
import { TenantCache } from '../../../src/cache/index.ts';
import { tenantId } from '../../helpers/tenants.ts';
import { sleep } from '../../helpers/wait.ts';
import { imageOfSnapshot } from '../../../src/authz/graph-image.ts';

const T = tenantId('tenant');
const grant = (permission: string): Change => ({ op: 'permission.grant', role: 'r', permission });
const base: Snapshot = { revision: 1, roles: [['r', '']], grants: [], memberships: [['u', 'r']] };

/** A cache holding the tenant at revision 1, and the changelog its replay reads. */
async function cacheAt1(gapWaitMs: number): Promise<{ cache: TenantCache; log: ChangeRecord[]; replays: number[] }> {
  const log: ChangeRecord[] = [];
  const replays: number[] = [];
  const cache = new TenantCache(async () => imageOfSnapshot(base), 1 << 20, gapWaitMs);
  await cache.load(T);
  return { cache, log, replays };
}

const replayFrom =
  (log: ChangeRecord[], replays: number[]) =>
  async (since: number): Promise<ChangeRecord[]> => {
    replays.push(since);
    return log.filter((r) => r.revision > since);
  };

/** Whether `p` settled within `ms`. */
async function settles(p: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await sleep(ms);
  return done;
}

test('a change that arrives early waits for the missing one, then both apply in order, without a replay', async () => {
  const { cache, log, replays } = await cacheAt1(10_000);
  const replay = replayFrom(log, replays);
  const early = cache.apply(T, grant('b'), 3, replay);
  assert.equal(await settles(early, 20), false, 'revision 3 cannot be applied before 2');
  assert.equal(cache.get(T)?.revision, 1);
  assert.equal(cache.get(T)?.check('u', 'b'), false);
  await cache.apply(T, grant('a'), 2, replay);
  await early;
  const g = cache.get(T);
  assert.equal(g?.revision, 3);
  assert.equal(g?.check('u', 'a'), true);
  assert.equal(g?.check('u', 'b'), true);
  assert.deepEqual(replays, [], 'the changelog was not read');
});

test('held changes apply in revision order whatever order they arrive in', async () => {
  const { cache, log, replays } = await cacheAt1(10_000);
  const replay = replayFrom(log, replays);
  const revoke: Change = { op: 'permission.revoke', role: 'r', permission: 'a' };
  // 2 grants a, 3 revokes it, 4 grants it again: applied in any other order the answer differs.
  const arrivals = [cache.apply(T, grant('a'), 4, replay), cache.apply(T, revoke, 3, replay)];
  assert.equal(cache.get(T)?.revision, 1);
  arrivals.push(cache.apply(T, grant('a'), 2, replay));
  await Promise.all(arrivals);
  assert.equal(cache.get(T)?.revision, 4);
  assert.equal(cache.get(T)?.check('u', 'a'), true);
  assert.deepEqual(replays, []);
});

test('a missing change that never comes is replayed from the changelog after the wait', async () => {
  const { cache, log, replays } = await cacheAt1(30);
  log.push({ revision: 2, change: grant('a'), at: '' }, { revision: 3, change: grant('b'), at: '' });
  const t0 = performance.now();
  await cache.apply(T, grant('b'), 3, replayFrom(log, replays));
  assert.ok(performance.now() - t0 >= 25, 'the replay waited for the missing change first');
  assert.deepEqual(replays, [1]);
  assert.equal(cache.get(T)?.revision, 3);
  assert.equal(cache.get(T)?.check('u', 'a'), true);
});

test('a gap the changelog cannot fill drops the graph, and the writer is let go', async () => {
  const { cache, replays } = await cacheAt1(20);
  const failing = async (since: number): Promise<ChangeRecord[]> => {
    replays.push(since);
    throw new Error('database down');
  };
  await cache.apply(T, grant('b'), 3, failing);
  assert.deepEqual(replays, [1]);
  assert.equal(cache.get(T), undefined, 'the graph behind is not served');
});

test('dropping a graph lets go of the writers waiting on it at once', async () => {
  const { cache, log, replays } = await cacheAt1(10_000);
  const early = cache.apply(T, grant('b'), 3, replayFrom(log, replays));
  cache.drop(T);
  assert.equal(await settles(early, 20), true);
  assert.equal(cache.get(T), undefined);
  assert.deepEqual(replays, []);
});
