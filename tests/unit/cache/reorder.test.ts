// TenantCache.apply with changes that arrive out of revision order: two workers commit at almost
// the same time, and each hears of its own change before the other's. The cache must hold the
// early arrival until the missing change comes, replay the changelog only when it does not, and
// never apply out of order nor keep a writer waiting on a graph that is gone. The gap wait runs
// on a clock the test moves (tests/helpers/clock.ts): nothing here sleeps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Change, ChangeRecord, Snapshot } from '../../../src/authz/changes.ts';
import { TenantCache } from '../../../src/cache/index.ts';
import { tenantId } from '../../helpers/tenants.ts';
import { ManualClock, settle } from '../../helpers/clock.ts';
import { imageOfSnapshot } from '../../../src/authz/graph-image.ts';

const T = tenantId('tenant');
const grant = (permission: string): Change => ({ op: 'permission.grant', role: 'r', permission });
const base: Snapshot = { revision: 1, roles: [['r', '']], grants: [], memberships: [['u', 'r']], windows: [] };

/** How long the cache waits for a missing change before it replays the changelog. */
const GAP_WAIT_MS = 1000;

/** A cache holding the tenant at revision 1 on a hand-moved clock, and the changelog its replay reads. */
async function cacheAt1(): Promise<{ cache: TenantCache; clock: ManualClock; log: ChangeRecord[]; replays: number[] }> {
  const log: ChangeRecord[] = [];
  const replays: number[] = [];
  const clock = new ManualClock();
  const cache = new TenantCache(async () => imageOfSnapshot(base), 1 << 20, GAP_WAIT_MS, undefined, clock);
  await cache.load(T);
  return { cache, clock, log, replays };
}

const replayFrom =
  (log: ChangeRecord[], replays: number[]) =>
  async (since: number): Promise<ChangeRecord[]> => {
    replays.push(since);
    return log.filter((r) => r.revision > since);
  };

/** Whether `p` settled once the promise work already started has run (the clock not moved). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await settle();
  return done;
}

test('a change that arrives early waits for the missing one, then both apply in order, without a replay', async () => {
  const { cache, clock, log, replays } = await cacheAt1();
  const replay = replayFrom(log, replays);
  const early = cache.apply(T, [grant('b')], 3, replay);
  await clock.advance(GAP_WAIT_MS - 1);
  assert.equal(await settled(early), false, 'revision 3 cannot be applied before 2');
  assert.equal(cache.get(T)?.revision, 1);
  assert.equal(cache.get(T)?.check('u', 'b'), false);
  await cache.apply(T, [grant('a')], 2, replay);
  await early;
  const g = cache.get(T);
  assert.equal(g?.revision, 3);
  assert.equal(g?.check('u', 'a'), true);
  assert.equal(g?.check('u', 'b'), true);
  assert.deepEqual(replays, [], 'the changelog was not read');
});

test('held changes apply in revision order whatever order they arrive in', async () => {
  const { cache, log, replays } = await cacheAt1();
  const replay = replayFrom(log, replays);
  const revoke: Change = { op: 'permission.revoke', role: 'r', permission: 'a' };
  // 2 grants a, 3 revokes it, 4 grants it again: applied in any other order the answer differs.
  const arrivals = [cache.apply(T, [grant('a')], 4, replay), cache.apply(T, [revoke], 3, replay)];
  assert.equal(cache.get(T)?.revision, 1);
  arrivals.push(cache.apply(T, [grant('a')], 2, replay));
  await Promise.all(arrivals);
  assert.equal(cache.get(T)?.revision, 4);
  assert.equal(cache.get(T)?.check('u', 'a'), true);
  assert.deepEqual(replays, []);
});

test('a missing change that never comes is replayed from the changelog after the wait', async () => {
  const { cache, clock, log, replays } = await cacheAt1();
  log.push({ revision: 2, change: grant('a'), at: '' }, { revision: 3, change: grant('b'), at: '' });
  const applied = cache.apply(T, [grant('b')], 3, replayFrom(log, replays));
  await clock.advance(GAP_WAIT_MS - 1);
  assert.deepEqual(replays, [], 'the replay waits for the missing change first');
  await clock.advance(1);
  await applied;
  assert.deepEqual(replays, [1]);
  assert.equal(cache.get(T)?.revision, 3);
  assert.equal(cache.get(T)?.check('u', 'a'), true);
});

test('a gap the changelog cannot fill drops the graph, and the writer is let go', async () => {
  const { cache, clock, replays } = await cacheAt1();
  const failing = async (since: number): Promise<ChangeRecord[]> => {
    replays.push(since);
    throw new Error('database down');
  };
  const applied = cache.apply(T, [grant('b')], 3, failing);
  await clock.advance(GAP_WAIT_MS);
  await applied;
  assert.deepEqual(replays, [1]);
  assert.equal(cache.get(T), undefined, 'the graph behind is not served');
});

test('dropping a graph lets go of the writers waiting on it at once', async () => {
  const { cache, clock, log, replays } = await cacheAt1();
  const early = cache.apply(T, [grant('b')], 3, replayFrom(log, replays));
  cache.drop(T);
  assert.equal(await settled(early), true, 'let go without the clock moving');
  assert.equal(clock.pending, 0, 'and the gap wait is cancelled');
  assert.equal(cache.get(T), undefined);
  assert.deepEqual(replays, []);
});
