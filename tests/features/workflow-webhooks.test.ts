/**
 * Workflow webhooks (docs/api.md §16), black-box against the real service and a loopback
 * receiver that checks every delivery with the `standardwebhooks` package: the signed body of
 * each run; retries with the same webhook-id after about 1 s, 5 s and 25 s, then `delivered` or
 * `failed` on the run; an answer later than 5 s and a redirect (never followed) are failures;
 * nothing more after the schedule is deleted; a delivery failing across a restart (SIGTERM, and
 * SIGKILL) resumes with the same webhook-id, its attempts counted across the restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { RbacClient } from '../../src/client/index.ts';
import { startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { answer, failFirst, startReceiver, verified, type Receiver, type Received } from '../helpers/webhook-receiver.ts';
import { atMs, runAtLeast, runs, runsPage, scheduled, unschedule, waitForRuns, type Delivery, type RunItem } from '../helpers/workflows.ts';
import { show } from '../helpers/show.ts';
import { crash } from '../helpers/processes.ts';
import { EVENT_TIMEOUT_MS } from '../helpers/wait.ts';

let receiver: Receiver;
let server: RunningServer;

const settings = (): Record<string, string> => ({ AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1', AUTH_WEBHOOK_ALLOWED_HOSTS: receiver.host });

before(async () => {
  receiver = await startReceiver();
  server = await startServer({ env: settings() });
});

after(async () => {
  const code = await server?.stop();
  await receiver?.close();
  assert.equal(code, 0, `exit code after SIGTERM\n${server?.output().slice(-1500)}`);
});

/** A path of its own on the receiver for one test. */
const hookPath = (what: string): string => `/hook/${what}-${randomBytes(4).toString('hex')}`;

/** The body every delivery of `run` must carry, exactly. */
const bodyOf = (workflow: string, run: RunItem): Record<string, unknown> => ({
  type: 'workflow.run',
  workflow,
  run_at: run.run_at,
  revision: run.revision,
  users_count: run.users_count,
  added: run.added,
  removed: run.removed,
});

/** Seconds between consecutive requests. */
const gaps = (list: readonly Received[]): number[] => list.slice(1).map((r, i) => (r.at - (list[i] as Received).at) / 1000);

/** Checks every request to `path` is a signed POST of the one run `run`, all with one webhook-id. */
function expectAttemptsOf(path: string, secret: string, workflow: string, run: RunItem): Received[] {
  const got = receiver.received(path);
  assert.ok(got.length > 0, `no request reached ${path}`);
  for (const r of got) {
    assert.equal(r.method, 'POST');
    assert.match(r.contentType ?? '', /^application\/json\b/);
    assert.deepEqual(verified(secret, r), bodyOf(workflow, run), 'a verified body, exactly the run');
  }
  assert.deepEqual([...new Set(got.map((r) => r.id))], [got[0]?.id], `one webhook-id on every attempt: ${got.map((r) => r.id).join(' ')}`);
  return got;
}

/** Polls the single run of `workflow` until its delivery settles; returns it and every delivery state seen on the way. */
async function settled(c: RbacClient, workflow: string, timeoutMs: number): Promise<{ run: RunItem; seen: Delivery[] }> {
  const seen: Delivery[] = [];
  const list = await waitForRuns(c, workflow, 'a settled delivery', timeoutMs, (l) => {
    const d = l[0]?.delivery;
    if (d !== undefined && !seen.some((s) => JSON.stringify(s) === JSON.stringify(d))) seen.push(d);
    return d !== undefined && (d.status === 'delivered' || d.status === 'failed');
  });
  assert.equal(list.length, 1, `one run (a day's interval): ${JSON.stringify(list)}`);
  return { run: list[0] as RunItem, seen };
}

describe('webhooks', { concurrency: true }, () => {
  test('every run is delivered once, signed, with exactly its body; nothing after DELETE', { timeout: 120_000 }, async () => {
    const c = server.client();
    const path = hookPath('signed');
    assert.equal((await c.createRole('r')).status, 201);
    assert.equal((await c.addMember('alice', 'r')).status, 201);
    assert.equal((await c.grant('r', 'ship')).status, 201);
    const secret = await scheduled(c, 'ship', 1, receiver.url(path));
    const granted = await c.addMember('bob', 'r');
    assert.equal(granted.status, 201, show(granted));
    await runAtLeast(c, 'ship', granted.revision as number);
    const list = await waitForRuns(c, 'ship', 'three delivered runs', EVENT_TIMEOUT_MS, (l) => l.filter((r) => r.delivery.status === 'delivered').length >= 3);
    const delivered = list.filter((r) => r.delivery.status === 'delivered');
    for (const run of delivered) assert.deepEqual(run.delivery, { status: 'delivered', attempts: 1, last_status: 200 }, JSON.stringify(run));
    assert.ok(
      list.some((r) => r.added.includes('bob')),
      'a run with a change is among them',
    );

    const got = receiver.received(path);
    const lags: number[] = [];
    for (const r of got) {
      assert.equal(r.method, 'POST');
      assert.match(r.contentType ?? '', /^application\/json\b/);
      const body = verified(secret, r) as { run_at?: string };
      const run = list.find((x) => x.run_at === body.run_at) ?? (await runs(c, 'ship')).find((x) => x.run_at === body.run_at);
      assert.ok(run !== undefined, `a delivery of a run that is not listed: ${r.body}`);
      assert.deepEqual(body, bodyOf('ship', run), 'the body is exactly the run');
      assert.ok(Math.abs(Number(r.timestamp) * 1000 - r.at) < 60_000, `webhook-timestamp ${r.timestamp} is the time of sending`);
      lags.push(r.at - atMs(run.run_at));
    }
    console.log(`deliveries ${lags.join(', ')} ms after their runs`);
    for (const run of delivered) {
      const of = got.filter((r) => (JSON.parse(r.body) as { run_at: string }).run_at === run.run_at);
      assert.equal(of.length, 1, `run ${run.run_at} delivered once: ${of.length} requests`);
    }
    assert.equal(new Set(got.map((r) => r.id)).size, got.length, 'a webhook-id per run');
    // The checks above can fail: a changed body or another secret does not verify.
    const sample = got[0] as Received;
    assert.throws(() => verified(secret, { ...sample, body: sample.body.replace('"workflow.run"', '"workflow.ran"') }), 'a tampered body is refused');
    assert.throws(() => verified(`whsec_${randomBytes(32).toString('base64')}`, sample), 'another secret is refused');

    const del = await unschedule(c, 'ship');
    assert.equal(del.status, 200, show(del));
    // The schedule is gone from the store; that a deleted schedule never runs or delivers again,
    // however long the clock runs on, is pinned on a hand-moved clock (tests/unit/workflow/scheduler.test.ts).
    assert.equal((await runsPage(c, 'ship')).status, 404, 'no schedule, so no runs');
  });

  test('500, 500, then 200: the same webhook-id three times, about 1 s then 5 s apart; delivered, 3 attempts', { timeout: 120_000 }, async () => {
    const c = server.client();
    const path = hookPath('flaky');
    receiver.on(path, failFirst(2));
    assert.equal((await c.createRole('r')).status, 201);
    assert.equal((await c.grant('r', 'flaky')).status, 201);
    assert.equal((await c.addMember('u', 'r')).status, 201);
    const secret = await scheduled(c, 'flaky', 86400, receiver.url(path));
    const { run, seen } = await settled(c, 'flaky', EVENT_TIMEOUT_MS);
    assert.deepEqual(run.delivery, { status: 'delivered', attempts: 3, last_status: 200 });
    assert.deepEqual(run.added, ['u']);
    const got = expectAttemptsOf(path, secret, 'flaky', run);
    assert.deepEqual(
      got.map((r) => r.answered),
      [500, 500, 200],
    );
    const [first, second] = gaps(got) as [number, number];
    console.log(`retries after ${first.toFixed(2)} s and ${second.toFixed(2)} s`);
    // Not sooner than the schedule says, and growing; how much later a busy machine makes them is printed.
    assert.ok(first >= 0.5, `first retry after ${first} s, about 1 s`);
    assert.ok(second >= 3.5 && second > first, `second retry after ${second} s, about 5 s (the first after ${first} s)`);
    assert.ok(
      seen.some((d) => d.status === 'pending' && d.attempts === 2 && d.last_status === 500),
      `pending after two failures: ${JSON.stringify(seen)}`,
    );
  });

  test('a receiver always failing: 4 attempts about 1 s, 5 s and 25 s apart, then failed with last_status 500', { timeout: 240_000 }, async () => {
    const c = server.client();
    const path = hookPath('down');
    receiver.on(path, answer(500));
    const secret = await scheduled(c, 'doomed', 86400, receiver.url(path));
    // About 31 s of retries, waited for with room to spare.
    const { run, seen } = await settled(c, 'doomed', 120_000);
    assert.deepEqual(run.delivery, { status: 'failed', attempts: 4, last_status: 500 });
    assert.deepEqual({ users_count: run.users_count, added: run.added }, { users_count: 0, added: [] }, 'a workflow nobody holds');
    const got = expectAttemptsOf(path, secret, 'doomed', run);
    assert.equal(got.length, 4, '1 attempt and 3 retries');
    const g = gaps(got);
    console.log(`retries after ${g.map((x) => x.toFixed(2)).join(' s, ')} s`);
    const [g0, g1, g2] = [g[0] ?? 0, g[1] ?? 0, g[2] ?? 0];
    // Not sooner than the schedule says, and growing; how much later a busy machine makes them is printed.
    assert.ok(g0 >= 0.5, `first retry after ${g0} s, about 1 s`);
    assert.ok(g1 >= 3.5 && g1 > g0, `second retry after ${g1} s, about 5 s (the first after ${g0} s)`);
    assert.ok(g2 >= 20 && g2 > g1, `third retry after ${g2} s, about 25 s (the second after ${g1} s)`);
    assert.ok(
      seen.some((d) => d.status === 'pending' && d.attempts === 3 && d.last_status === 500),
      `pending while retrying: ${JSON.stringify(seen)}`,
    );
    // That a failed delivery is never claimed again is pinned on a hand-moved clock
    // (tests/unit/workflow/scheduler.test.ts); here, the four attempts are all that came.
    assert.equal(receiver.received(path).length, 4, 'no attempt after failed');
    assert.deepEqual((await runs(c, 'doomed'))[0]?.delivery, run.delivery, 'failed stays failed');
  });

  test('an answer later than 5 s is a failed attempt (no status), retried', { timeout: 120_000 }, async () => {
    const c = server.client();
    const path = hookPath('slow');
    receiver.on(path, (attempt) => (attempt === 1 ? { status: 200, delayMs: 7000 } : { status: 200 }));
    const secret = await scheduled(c, 'slow', 86400, receiver.url(path));
    const { run, seen } = await settled(c, 'slow', EVENT_TIMEOUT_MS);
    assert.deepEqual(run.delivery, { status: 'delivered', attempts: 2, last_status: 200 });
    const got = expectAttemptsOf(path, secret, 'slow', run);
    assert.equal(got.length, 2);
    const [gap] = gaps(got) as [number];
    console.log(`retry ${gap.toFixed(2)} s after the slow attempt`);
    assert.ok(gap >= 5.5, `the retry ${gap} s after the first attempt: the 5 s limit, then about 1 s`);
    assert.ok(
      seen.some((d) => d.status === 'pending' && d.attempts === 1 && d.last_status === null),
      `no status came in time: ${JSON.stringify(seen)}`,
    );
  });

  test('a 302 is not followed and counts as a failure, retried until the schedule is deleted', { timeout: 120_000 }, async () => {
    const c = server.client();
    const path = hookPath('moved');
    const target = hookPath('moved-target');
    receiver.on(path, () => ({ status: 302, location: receiver.url(target) }));
    const secret = await scheduled(c, 'moved', 86400, receiver.url(path));
    const list = await waitForRuns(c, 'moved', 'two attempts', EVENT_TIMEOUT_MS, (l) => (l[0]?.delivery.attempts ?? 0) >= 2);
    const run = list[0] as RunItem;
    assert.deepEqual(run.delivery, { status: 'pending', attempts: 2, last_status: 302 }, 'a redirect is a failed attempt, retried');
    expectAttemptsOf(path, secret, 'moved', run);
    assert.deepEqual(receiver.received(target), [], 'the redirect was not followed');
    // DELETE removes the schedule with its runs; that no retry follows, however long the clock
    // runs on, is pinned on a hand-moved clock (tests/unit/workflow/scheduler.test.ts).
    const del = await unschedule(c, 'moved');
    assert.equal(del.status, 200, show(del));
    assert.equal((await runsPage(c, 'moved')).status, 404, 'no schedule, so no runs');
  });

  for (const how of ['SIGTERM', 'SIGKILL'] as const) {
    test(`a delivery failing across a restart (${how}) resumes with the same webhook-id, attempts counted across it`, { timeout: 240_000 }, async () => {
      const tmp = tempDir('rbac-webhook-');
      const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
      const path = hookPath(`restart-${how}`);
      let healthy = false;
      receiver.on(path, () => ({ status: healthy ? 200 : 500 }));
      const key = randomUUID();
      let srv = await startServer({ sqlitePath, env: settings() });
      try {
        const secret = await scheduled(srv.client(key), 'resumed', 86400, receiver.url(path));
        // The failed first attempt is recorded on the run before the service goes.
        await waitForRuns(srv.client(key), 'resumed', 'a failed first attempt', EVENT_TIMEOUT_MS, (l) => (l[0]?.delivery.attempts ?? 0) >= 1);
        if (how === 'SIGTERM') assert.equal(await srv.stop(), 0, `exit code after SIGTERM\n${srv.output().slice(-1500)}`);
        else await crash(srv);
        const earlier = receiver.received(path);
        const down = Date.now();
        healthy = true;
        srv = await startServer({ sqlitePath, env: settings() });
        const up = Date.now();
        const { run } = await settled(srv.client(key), 'resumed', 60_000);
        const got = expectAttemptsOf(path, secret, 'resumed', run);
        const t0 = got[0]?.at ?? 0;
        console.log(
          `${how}: attempts at ${got.map((r) => ((r.at - t0) / 1000).toFixed(2)).join(', ')} s; stopped at ${((down - t0) / 1000).toFixed(2)} s, listening again at ${((up - t0) / 1000).toFixed(2)} s`,
        );
        assert.ok(got.length > earlier.length, 'an attempt after the restart');
        assert.deepEqual(
          got.map((r) => r.answered),
          [...earlier.map(() => 500), 200],
          'failures before the restart, success after',
        );
        assert.deepEqual(
          run.delivery,
          { status: 'delivered', attempts: got.length, last_status: 200 },
          `attempts across the restart (${earlier.length} before it)`,
        );
        assert.equal(await srv.stop(), 0, `exit code after SIGTERM\n${srv.output().slice(-1500)}`);
      } finally {
        await srv.kill();
        tmp.cleanup();
      }
    });
  }
});
