/**
 * Workflow runs (docs/api.md §6 `GET /api/workflow/runs/{workflow}`, §10), black-box against the
 * real service with AUTH_WORKFLOW_MIN_INTERVAL_SECONDS=1: the first run right after creation lists
 * every holder as added; each later run's added/removed follow the grants, revokes, membership
 * changes and role deletions made since the run before (checked against a model of the client,
 * at the revision each run read); replacing a schedule keeps its runs and diffs against the last
 * one; runs are newest first and paged without duplicates, also while new runs keep coming; runs
 * missed while the service was stopped are not replayed.
 * Webhook deliveries are in workflow-webhooks.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Change } from '../../src/authz/changes.ts';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import {
  atMs,
  expectNewestFirst,
  expectRunShape,
  runAtLeast,
  runs,
  runsPage,
  schedule,
  scheduled,
  unschedule,
  waitForRuns,
  walkRuns,
  type RunItem,
} from '../helpers/workflows.ts';
import { RbacModel } from '../../support/rbac-model.ts';
import { show } from '../helpers/show.ts';
import { EVENT_TIMEOUT_MS, sleep } from '../helpers/wait.ts';

let server: RunningServer;

before(async () => {
  server = await startServer({ env: { AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1' } });
  // The scheduler starts once the workers listen, with a store thread of its own: on a loaded
  // machine it may lead a second or two after /ready. One throwaway schedule's first run says it
  // leads, so that the first run's lag reported below measures the schedule, not the start-up.
  const warm = server.client(randomUUID());
  await scheduled(warm, 'warm-up', 3600);
  await waitForRuns(warm, 'warm-up', 'the scheduler to lead', EVENT_TIMEOUT_MS, (l) => l.length > 0);
  assert.equal((await unschedule(warm, 'warm-up')).status, 200);
});

after(async () => {
  const code = await server?.stop();
  assert.equal(code, 0, `exit code after SIGTERM\n${server?.output().slice(-1500)}`);
});

/** The client's roles as the tests changed them (the reference model), and who held the workflow after each revision. */
class Recorder {
  readonly model = new RbacModel();
  /** After each write, in order: its revision and the holders of the workflow from then on. */
  readonly history: Array<{ revision: number; holders: string[] }> = [{ revision: 0, holders: [] }];

  constructor(
    readonly c: RbacClient,
    readonly workflow: string,
  ) {}

  /** Sends one write, checks its status and records the change it made; returns its revision. */
  async write(send: (c: RbacClient) => Promise<ApiResult<{ revision: number }>>, status: number, change: Change): Promise<number> {
    const res = await send(this.c);
    assert.equal(res.status, status, show(res));
    const revision = res.data?.revision as number;
    assert.equal(typeof revision, 'number', show(res));
    this.model.apply(change);
    this.history.push({ revision, holders: this.holders() });
    return revision;
  }

  createRole = (role: string): Promise<number> => this.write((c) => c.createRole(role), 201, { op: 'role.create', role, description: '' });
  deleteRole = (role: string): Promise<number> => this.write((c) => c.deleteRole(role), 200, { op: 'role.delete', role });
  grant = (role: string, permission: string): Promise<number> =>
    this.write((c) => c.grant(role, permission), 201, { op: 'permission.grant', role, permission });
  revoke = (role: string, permission: string): Promise<number> =>
    this.write((c) => c.revoke(role, permission), 200, { op: 'permission.revoke', role, permission });
  add = (user: string, role: string): Promise<number> => this.write((c) => c.addMember(user, role), 201, { op: 'membership.add', user, role });
  remove = (user: string, role: string): Promise<number> => this.write((c) => c.removeMember(user, role), 200, { op: 'membership.remove', user, role });

  holders(): string[] {
    return this.model.userNamesWith(this.workflow);
  }

  /** Who held the workflow at `revision`. */
  holdersAt(revision: number): string[] {
    return [...this.history].reverse().find((h) => h.revision <= revision)?.holders ?? [];
  }

  /** Every run, oldest first, against the model: users_count, added and removed since the run before. */
  check(list: readonly RunItem[]): void {
    let previous: string[] = [];
    for (const run of [...list].reverse()) {
      const now = this.holdersAt(run.revision);
      const what = `run at ${run.run_at} (revision ${run.revision}): ${JSON.stringify(run)}; expected holders ${JSON.stringify(now)} after ${JSON.stringify(previous)}`;
      assert.equal(run.users_count, now.length, `users_count of the ${what}`);
      assert.deepEqual(
        run.added,
        now.filter((u) => !previous.includes(u)),
        `added of the ${what}`,
      );
      assert.deepEqual(
        run.removed,
        previous.filter((u) => !now.includes(u)),
        `removed of the ${what}`,
      );
      previous = now;
    }
  }
}

describe('runs', { concurrency: true }, () => {
  test('the first run comes at once, not after the interval, and lists every holder as added', async () => {
    const m = new Recorder(server.client(), 'release');
    await m.createRole('dev');
    await m.createRole('ops');
    await m.grant('dev', 'release');
    await m.grant('ops', 'release');
    for (const u of ['zoe', 'Ann', 'bob']) await m.add(u, 'dev');
    const last = await m.add('bob', 'ops');
    const sent = Date.now();
    await scheduled(m.c, 'release', 3600);
    const answered = Date.now();
    // An hour's interval: a first run that waited for it would never come within the wait.
    const list = await waitForRuns(m.c, 'release', 'the first run', EVENT_TIMEOUT_MS, (l) => l.length > 0);
    const seen = Date.now();
    const first = list[0] as RunItem;
    expectRunShape(first);
    assert.deepEqual(
      { revision: first.revision, users_count: first.users_count, added: first.added, removed: first.removed },
      {
        revision: last,
        users_count: 3,
        added: ['Ann', 'bob', 'zoe'],
        removed: [],
      },
    );
    assert.deepEqual(first.delivery, { status: 'none', attempts: 0, last_status: null }, 'no webhook: delivery none');
    const lag = atMs(first.run_at) - answered;
    console.log(`first run: run_at ${lag} ms after the 201, listed ${seen - answered} ms after it`);
    // The clock is the machine's, shared with the service; a little slack for a busy machine.
    assert.ok(atMs(first.run_at) >= sent - 50, `run_at ${first.run_at} before the request was sent`);
  });

  test('added and removed follow grants, revokes, memberships and a role deletion; replacing keeps the runs', { timeout: 300_000 }, async () => {
    const m = new Recorder(server.client(), 'deploy');
    await m.createRole('dev');
    await m.createRole('ops');
    await m.grant('dev', 'deploy');
    for (const u of ['alice', 'bob']) await m.add(u, 'dev');
    for (const u of ['carol', 'alice']) await m.add(u, 'ops');
    const made = await schedule(m.c, 'deploy', { interval_seconds: 1 });
    assert.equal(made.status, 201, show(made));
    const initial = await runAtLeast(m.c, 'deploy', m.history.at(-1)?.revision ?? 0);
    assert.deepEqual(initial.added, ['alice', 'bob']);

    const steps: Array<[string, () => Promise<number>, { added: string[]; removed: string[] }]> = [
      ['grant to a second role', () => m.grant('ops', 'deploy'), { added: ['carol'], removed: [] }],
      ['revoke from the first role (alice keeps it through ops)', () => m.revoke('dev', 'deploy'), { added: [], removed: ['bob'] }],
      ['add a member', () => m.add('dave', 'ops'), { added: ['dave'], removed: [] }],
      ['remove a member', () => m.remove('carol', 'ops'), { added: [], removed: ['carol'] }],
      ['delete the role', () => m.deleteRole('ops'), { added: [], removed: ['alice', 'dave'] }],
      ['grant back to a role with members', () => m.grant('dev', 'deploy'), { added: ['alice', 'bob'], removed: [] }],
    ];
    for (const [i, [what, write, want]] of steps.entries()) {
      if (i === 3) {
        // Replaced halfway: the runs stay, and the next diff is against the last run, not empty.
        const replaced = await schedule(m.c, 'deploy', { interval_seconds: 2 });
        assert.equal(replaced.status, 201, show(replaced));
        const count0 = (await runs(m.c, 'deploy')).length;
        await waitForRuns(m.c, 'deploy', 'a run after the replacement', EVENT_TIMEOUT_MS, (l) => l.length > count0);
      }
      const revision = await write();
      const run = await runAtLeast(m.c, 'deploy', revision);
      // One write between two runs: that run shows exactly its change.
      assert.deepEqual({ added: run.added, removed: run.removed }, want, `${what}: ${JSON.stringify(run)}`);
    }
    // Runs keep coming without changes: empty diffs.
    const count = (await runs(m.c, 'deploy')).length;
    const list = await waitForRuns(m.c, 'deploy', 'two more runs', EVENT_TIMEOUT_MS, (l) => l.length >= count + 2);
    for (const run of list) expectRunShape(run);
    expectNewestFirst(list);
    m.check(list);
    assert.ok(
      list.slice(0, 2).every((r) => r.added.length === 0 && r.removed.length === 0),
      `no change, no diff: ${JSON.stringify(list.slice(0, 2))}`,
    );
    assert.ok(
      list.every((r) => r.delivery.status === 'none'),
      'no webhook: every delivery none',
    );
    assert.ok(list.length >= steps.length + 4, `${list.length} runs kept across the replacement`);
  });

  test('runs paged with limit and next_cursor: newest first, no duplicates, while runs come and once frozen', { timeout: 180_000 }, async () => {
    const c = server.client();
    assert.equal((await c.createRole('r')).status, 201);
    assert.equal((await c.grant('r', 'paged')).status, 201);
    await scheduled(c, 'paged', 1);
    const early = await waitForRuns(c, 'paged', 'five runs', EVENT_TIMEOUT_MS, (l) => l.length >= 5);

    // While new runs arrive: each page continues below the last one, whatever came on top meanwhile.
    const live: RunItem[] = [];
    let cursor: string | undefined;
    let newest = early[0]?.run_at;
    for (let pages = 0; pages < 50; pages++) {
      const res = await runsPage(c, 'paged', cursor === undefined ? { limit: 2 } : { limit: 2, cursor });
      assert.equal(res.status, 200, show(res));
      live.push(...(res.data ?? []));
      if (res.nextCursor === undefined) break;
      cursor = res.nextCursor;
      // A new run on top before the next page.
      newest = (await waitForRuns(c, 'paged', 'a new run on top', EVENT_TIMEOUT_MS, (l) => l[0]?.run_at !== newest))[0]?.run_at;
    }
    assert.equal(new Set(live.map((r) => r.run_at)).size, live.length, `no run twice: ${live.map((r) => r.run_at).join(' ')}`);
    expectNewestFirst(live);
    for (const r of early)
      assert.ok(
        live.some((x) => x.run_at === r.run_at),
        `run ${r.run_at} listed before the walk is on a page`,
      );

    // A cursor is bound to its client and its route's path parameters.
    const first = await runsPage(c, 'paged', { limit: 1 });
    await scheduled(c, 'other', 3600);
    assert.equal((await runsPage(c, 'other', { limit: 1, cursor: first.nextCursor as string })).status, 400, "another workflow's cursor");
    const stranger = server.client();
    await scheduled(stranger, 'paged', 3600);
    assert.equal((await runsPage(stranger, 'paged', { limit: 1, cursor: first.nextCursor as string })).status, 400, "another client's cursor");

    // Frozen: a day's interval. A run of the old 1 s schedule may still land while the pages are
    // walked (the new schedule runs once at once); then the list changed under the walk, and it is
    // walked again, without waiting for quiet.
    await scheduled(c, 'paged', 86400);
    for (let attempt = 1; ; attempt++) {
      const all = await runs(c, 'paged');
      expectNewestFirst(all);
      const walks = [];
      for (const limit of [1, 3, all.length]) walks.push({ limit, ...(await walkRuns(c, 'paged', limit)) });
      if ((await runs(c, 'paged')).length !== all.length && attempt < 20) continue;
      for (const { limit, runs: walked, sizes } of walks) {
        assert.deepEqual(walked, all, `pages of ${limit} are the whole list, in order`);
        const expected = Array.from({ length: Math.ceil(all.length / limit) }, (_, i) => Math.min(limit, all.length - limit * i));
        assert.deepEqual(sizes, expected, `page sizes with limit ${limit}`);
      }
      break;
    }
    assert.equal((await runsPage(c, 'paged', { limit: 0 })).status, 400, 'limit 0');
  });

  test('runs missed while the service is stopped are not replayed: one late run, then on time', { timeout: 180_000 }, async () => {
    const tmp = tempDir('rbac-runs-');
    const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
    const env = { AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1' };
    const key = randomUUID();
    let srv = await startServer({ sqlitePath, env });
    try {
      await scheduled(srv.client(key), 'cron', 2);
      await waitForRuns(srv.client(key), 'cron', 'two runs', EVENT_TIMEOUT_MS, (l) => l.length >= 2);
      assert.equal(await srv.stop(), 0, `exit code after SIGTERM\n${srv.output().slice(-1500)}`);
      const down = Date.now();
      // Time while nothing runs: three or four runs fall due, so that a replay would bunch up
      // at least three of them (two could pass the spacing check below).
      await sleep(7000);
      const restarting = Date.now();
      srv = await startServer({ sqlitePath, env });
      // The overdue run and two more: the spacing after the overdue one can be seen.
      const list = await waitForRuns(
        srv.client(key),
        'cron',
        'three runs after the restart',
        EVENT_TIMEOUT_MS,
        (l) => l.filter((r) => atMs(r.run_at) > down).length >= 3,
      );
      const elapsed = (Date.now() - restarting) / 1000;
      expectNewestFirst(list);
      const late = list.filter((r) => atMs(r.run_at) > down).reverse();
      const times = late.map((r) => ((atMs(r.run_at) - restarting) / 1000).toFixed(2));
      console.log(`runs after the restart, seconds from the restart: ${times.join(' ')}`);
      assert.ok(
        late.every((r) => atMs(r.run_at) >= restarting),
        `no run while stopped: ${times.join(' ')}`,
      );
      // One overdue run, then one per 2 s on the grid (a start-up slowed by load leaves more time).
      const most = Math.floor(elapsed / 2) + 2;
      assert.ok(
        late.length >= 2 && late.length <= most,
        `${late.length} runs in the ${elapsed.toFixed(1)} s after the restart, at most ${most}: ${times.join(' ')}`,
      );
      // After the one overdue run, the next runs keep the interval: a replay would bunch them up.
      // (How late a busy machine runs them is in the times printed above.)
      const spacing = late.slice(1).map((r, i) => (atMs(r.run_at) - atMs((late[i] as RunItem).run_at)) / 1000);
      for (const g of spacing.slice(1)) assert.ok(g >= 1.5, `runs after the overdue one spaced ${g} s apart: ${times.join(' ')}`);
      assert.equal(await srv.stop(), 0, `exit code after SIGTERM\n${srv.output().slice(-1500)}`);
    } finally {
      await srv.kill();
      tmp.cleanup();
    }
  });
});
