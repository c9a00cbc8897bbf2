/**
 * Workflow schedules across instances (docs/api.md §16: "one run per interval per schedule across
 * all instances"): two instances on one fresh PostgreSQL database and Redis run a 2 s schedule;
 * every run happens once, never twice, and each is delivered under one webhook-id; then the
 * instance holding the scheduler lease is killed (SIGKILL) and the survivor runs on. How close to
 * the interval the runs come, and how soon the survivor takes over, is printed. Skipped with the
 * reason printed when PostgreSQL or Redis is missing, failed instead under
 * AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { sharedDatabase } from '../helpers/postgres.ts';
import { startServers, type RunningServer } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { startReceiver, verified, type Receiver } from '../helpers/webhook-receiver.ts';
import { atMs, expectNewestFirst, runs, scheduled, waitForRuns, type RunItem } from '../helpers/workflows.ts';
import { crash } from '../helpers/processes.ts';
import { EVENT_TIMEOUT_MS } from '../helpers/wait.ts';

const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const INTERVAL_S = 2;

/** The workflow_lease rows, as text (an owner names a host and a pid, nothing secret). */
async function leaseRows(url: string): Promise<Array<Record<string, unknown>>> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query<Record<string, unknown>>('SELECT * FROM workflow_lease')).rows;
  } finally {
    await c.end();
  }
}

/** Seconds between consecutive runs, oldest first. */
const spacing = (list: readonly RunItem[]): number[] => {
  const times = list.map((r) => atMs(r.run_at)).reverse();
  return times.slice(1).map((t, i) => (t - (times[i] as number)) / 1000);
};

/**
 * Each run of `checked` delivered under a webhook-id of its own; every request a verified body of
 * a run in `known`. Runs in `exact` (made and delivered with no crash in between) were received
 * exactly as many times as the attempts they count.
 */
function expectDeliveredOnce(
  receiver: Receiver,
  path: string,
  secret: string,
  known: readonly RunItem[],
  checked: readonly RunItem[],
  exact: ReadonlySet<string>,
): void {
  const idsByRun = new Map<string, Set<string>>();
  const receiptsById = new Map<string, number>();
  for (const r of receiver.received(path)) {
    const body = verified(secret, r) as { run_at: string };
    assert.ok(
      known.some((x) => x.run_at === body.run_at),
      `a delivery of a run not listed: ${r.body}`,
    );
    idsByRun.set(body.run_at, (idsByRun.get(body.run_at) ?? new Set()).add(r.id ?? ''));
    receiptsById.set(r.id ?? '', (receiptsById.get(r.id ?? '') ?? 0) + 1);
  }
  for (const run of checked) {
    assert.equal(run.delivery.status, 'delivered', `run ${run.run_at}: ${JSON.stringify(run.delivery)}`);
    const ids = [...(idsByRun.get(run.run_at) ?? [])];
    assert.equal(ids.length, 1, `run ${run.run_at} delivered under exactly one webhook-id: ${ids.join(' ')}`);
    // A retry repeats the id, and counts as an attempt: a second request is no duplicate run.
    if (exact.has(run.run_at))
      assert.equal(receiptsById.get(ids[0] as string), run.delivery.attempts, `run ${run.run_at}: requests received = attempts recorded`);
  }
}

test('two instances on one database: each run once, never twice; the lease holder killed, the survivor runs on', { timeout: 300_000 }, async (t) => {
  if (!(await requireService(t, 'redis', REDIS_URL))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const env = { ...db.env, AUTH_REDIS_URL: REDIS_URL, AUTH_WORKERS: '1', AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1', AUTH_WEBHOOK_ALLOWED_HOSTS: receiver.host };
  const servers = await startServers({ env }, { env });
  t.after(async () => {
    await Promise.all(servers.map((s) => s.kill()));
  });
  const [a, b] = servers as [RunningServer, RunningServer];

  const key = randomUUID();
  const ca = a.client(key);
  const cb = b.client(key);
  assert.equal((await ca.createRole('r')).status, 201);
  assert.equal((await ca.grant('r', 'nightly')).status, 201);
  assert.equal((await ca.addMember('alice', 'r')).status, 201);
  const path = '/hook/cluster';
  const created = Date.now();
  const secret = await scheduled(ca, 'nightly', INTERVAL_S, receiver.url(path));
  // A change through the other instance once a few runs were made: some later run must show it, once.
  await waitForRuns(cb, 'nightly', 'three runs', EVENT_TIMEOUT_MS, (l) => l.length >= 3);
  const bob = await cb.addMember('bob', 'r');
  assert.equal(bob.status, 201);
  const window = await waitForRuns(
    cb,
    'nightly',
    'three runs after the change',
    EVENT_TIMEOUT_MS,
    (l) => l.filter((r) => r.revision >= (bob.revision as number)).length >= 3,
  );
  const elapsed = (Date.now() - created) / 1000;
  expectNewestFirst(window);
  assert.equal(new Set(window.map((r) => r.run_at)).size, window.length, 'run_at values distinct');
  const expected = Math.floor(elapsed / INTERVAL_S) + 1;
  const gaps = spacing(window);
  console.log(`${window.length} runs in ${elapsed.toFixed(1)} s (expected ${expected} ± 1), spaced ${gaps.map((g) => g.toFixed(2)).join(' ')} s`);
  // Two instances both making a due run would show as more runs than the interval allows, and as
  // a gap near 0. (A run skipped by a slow machine shows as a gap near 4 s in the spacing printed.)
  assert.ok(window.length <= expected + 1, `${window.length} runs in ${elapsed.toFixed(1)} s at one per ${INTERVAL_S} s`);
  for (const g of gaps) assert.ok(g >= 1, `runs spaced ${g} s apart, interval ${INTERVAL_S} s`);
  assert.equal(window.filter((r) => r.added.includes('bob')).length, 1, `the change made on B shows in one run: ${JSON.stringify(window)}`);
  const settledBefore = await waitForRuns(cb, 'nightly', 'the window delivered', EVENT_TIMEOUT_MS, (l) =>
    window.every((w) => l.find((x) => x.run_at === w.run_at)?.delivery.status === 'delivered'),
  );
  const windowDelivered = settledBefore.filter((x) => window.some((w) => w.run_at === x.run_at));
  expectDeliveredOnce(receiver, path, secret, settledBefore, windowDelivered, new Set(windowDelivered.map((r) => r.run_at)));

  // The holder of the scheduler lease: its owner names the primary's pid (`<host>:<pid>:<random>`).
  const lease = await leaseRows(db.env.AUTH_POSTGRESQL_URL as string);
  const leaseText = JSON.stringify(lease);
  const holder = servers.find((s) => new RegExp(`:${String(s.proc.pid)}:`).test(leaseText));
  t.diagnostic(`workflow_lease: ${leaseText}; primaries ${a.proc.pid} and ${b.proc.pid}`);
  assert.ok(holder !== undefined, `the lease names one of the primaries (${a.proc.pid}, ${b.proc.pid}): ${leaseText}`);
  const survivor = holder === a ? b : a;
  const cs = survivor.client(key);

  const lastBefore = atMs((await runs(cs, 'nightly'))[0]?.run_at as string);
  await crash(holder);
  const killed = Date.now();
  // The survivor takes the lease once the dead holder's expires, and runs on.
  const after = await waitForRuns(cs, 'nightly', 'a run after the kill', EVENT_TIMEOUT_MS, (l) => atMs(l[0]?.run_at as string) > killed);
  const next = after.filter((r) => atMs(r.run_at) > killed).at(-1) as RunItem;
  const takeover = (atMs(next.run_at) - killed) / 1000;
  console.log(`last run ${((killed - lastBefore) / 1000).toFixed(2)} s before the kill; next run ${takeover.toFixed(2)} s after it, on the survivor`);

  // Then on time again, one run per interval, each delivered under one id.
  const resumed = atMs(next.run_at);
  const since = await waitForRuns(
    cs,
    'nightly',
    'three runs from the takeover on',
    EVENT_TIMEOUT_MS,
    (l) => l.filter((r) => atMs(r.run_at) >= resumed).length >= 3,
  );
  const tail = since.filter((r) => atMs(r.run_at) >= resumed);
  const tailSeconds = (Date.now() - resumed) / 1000;
  const tailGaps = spacing(tail);
  console.log(`after the takeover: ${tail.length} runs in ${tailSeconds.toFixed(1)} s, spaced ${tailGaps.map((g) => g.toFixed(2)).join(' ')} s`);
  assert.ok(tail.length <= Math.floor(tailSeconds / INTERVAL_S) + 2, `${tail.length} runs in the ${tailSeconds.toFixed(1)} s after the takeover`);
  for (const g of tailGaps) assert.ok(g >= 1, `runs spaced ${g} s apart after the takeover`);
  const newest = atMs(tail[0]?.run_at as string);
  const all = await waitForRuns(cs, 'nightly', 'every run delivered', EVENT_TIMEOUT_MS, (l) =>
    l.filter((r) => atMs(r.run_at) <= newest).every((r) => r.delivery.status === 'delivered'),
  );
  assert.equal(new Set(all.map((r) => r.run_at)).size, all.length, 'run_at values distinct across the takeover');
  // Runs made after the kill are the survivor's alone, as are their deliveries.
  const exact = new Set([...windowDelivered, ...all.filter((r) => atMs(r.run_at) > killed)].map((r) => r.run_at));
  expectDeliveredOnce(
    receiver,
    path,
    secret,
    all,
    all.filter((r) => atMs(r.run_at) <= newest),
    exact,
  );
});
