/**
 * The workflow routes (docs/api.md §6, §16), black-box against the real service: who can run a
 * workflow, creating, replacing, listing and deleting schedules, every refusal of a schedule body
 * (interval bounds against AUTH_WORKFLOW_MIN_INTERVAL_SECONDS, webhook hosts against
 * AUTH_WEBHOOK_ALLOWED_HOSTS), isolation between clients, the client's revision left alone, the
 * audit rows `workflow.schedule` / `workflow.unschedule`, read tokens and the OpenAPI document.
 * Runs and deliveries are in workflow-runs.test.ts and workflow-webhooks.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { RbacClient, type ApiResult, type AuditRow } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from '../helpers/contract.ts';
import { keyCredential, rid, waitForRows } from '../helpers/audit.ts';
import { decodeJwt } from '../helpers/jwt.ts';
import { rememberSecret, startServer, type RunningServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';
import { canRun, runs, runsPage, schedule, scheduled, schedules, unschedule, usersPage, waitForRuns, type ScheduleItem } from '../helpers/workflows.ts';
import { show } from '../helpers/show.ts';
import { EVENT_TIMEOUT_MS, sleep } from '../helpers/wait.ts';

const JWT_SECRET = randomBytes(36).toString('base64url');

let receiver: Receiver;
/** Minimum interval 1 s, webhooks allowed to the receiver only, tokens on. */
let server: RunningServer;
/** The default-like settings: minimum interval 10 s and no webhook host allowed. */
let strict: RunningServer;

before(async () => {
  receiver = await startReceiver();
  const started = await Promise.allSettled([
    startServer({ env: { AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '1', AUTH_WEBHOOK_ALLOWED_HOSTS: receiver.host, AUTH_JWT_SECRET_KEY: JWT_SECRET } }),
    startServer({ env: { AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: '10' } }),
  ]);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    for (const s of started) if (s.status === 'fulfilled') await s.value.kill();
    throw failed.reason;
  }
  [server, strict] = started.map((s) => (s as PromiseFulfilledResult<RunningServer>).value) as [RunningServer, RunningServer];
});

after(async () => {
  const codes = await Promise.all([server, strict].map((s) => s?.stop()));
  await receiver?.close();
  assert.deepEqual(codes, [0, 0], `exit codes after SIGTERM\n${server?.output().slice(-1500)}\n${strict?.output().slice(-1000)}`);
});

/** An error envelope of `status` whose `error` matches `pattern`. */
function expectError(res: ApiResult<unknown>, status: number, pattern: RegExp, what: string): void {
  assert.equal(res.status, status, `${what}: ${show(res)}`);
  const body = res.body as { success?: unknown; code?: unknown; message?: unknown; timestamp?: unknown } | undefined;
  assert.equal(body?.success, false, `${what}: ${show(res)}`);
  assert.equal(body?.code, status, `${what}: code`);
  assert.equal(body?.message, STATUS_TEXT[status] ?? 'Forbidden', `${what}: message`);
  assert.match(String(body?.timestamp), TIMESTAMP_RE);
  assert.match(res.error ?? '', pattern, `${what}: error names the offending item: ${show(res)}`);
}

async function listed(c: RbacClient): Promise<ScheduleItem[]> {
  const res = await schedules(c);
  assert.equal(res.status, 200, show(res));
  return res.data as ScheduleItem[];
}

/** A client whose roles give `workflow` to Bob, Zed, _u, alice and bob (alice twice), not carol. */
async function populated(workflow: string): Promise<RbacClient> {
  const c = server.client();
  const writes: Array<() => Promise<ApiResult<unknown>>> = [
    () => c.createRole('dev'),
    () => c.createRole('ops'),
    () => c.createRole('guests'),
    () => c.grant('dev', workflow),
    () => c.grant('ops', workflow),
    () => c.grant('guests', 'read'),
    ...['bob', 'alice', 'Zed'].map((u) => () => c.addMember(u, 'dev')),
    ...['alice', '_u', 'Bob'].map((u) => () => c.addMember(u, 'ops')),
    () => c.addMember('carol', 'guests'),
  ];
  for (const write of writes) {
    const res = await write();
    assert.equal(res.status, 201, show(res));
  }
  return c;
}

describe('workflow routes', { concurrency: true }, () => {
  test('GET /api/workflow/users/{workflow}: every holder once, by code point, paged; can_run', async () => {
    const c = await populated('deploy:prod');
    const all = await usersPage(c, 'deploy:prod');
    assert.equal(all.status, 200, show(all));
    assert.deepEqual(all.data, [{ user: 'Bob' }, { user: 'Zed' }, { user: '_u' }, { user: 'alice' }, { user: 'bob' }]);
    assert.equal(all.nextCursor, undefined, 'no limit: the whole list');

    const pages: string[][] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 5; i++) {
      const page = await usersPage(c, 'deploy:prod', cursor === undefined ? { limit: 2 } : { limit: 2, cursor });
      assert.equal(page.status, 200, show(page));
      pages.push((page.data ?? []).map((u) => u.user));
      if (page.nextCursor === undefined) break;
      cursor = page.nextCursor;
    }
    assert.deepEqual(pages, [['Bob', 'Zed'], ['_u', 'alice'], ['bob']], 'pages of 2 with next_cursor on each cut page');
    const nobody = await usersPage(c, 'unheard-of');
    assert.equal(nobody.status, 200, show(nobody));
    assert.deepEqual(nobody.data, [], 'a workflow nobody holds: []');

    for (const [user, expected] of [
      ['alice', true],
      ['_u', true],
      ['carol', false],
      ['ghost', false],
    ] as const) {
      const res = await canRun(c, user, 'deploy:prod');
      assert.equal(res.status, 200, show(res));
      assert.deepEqual(res.data, { can_run: expected }, `can_run ${user}`);
    }
    assert.deepEqual((await canRun(c, 'carol', 'read')).data, { can_run: true }, 'any permission is a workflow');
    expectError(await usersPage(c, 'bad name'), 400, /workflow/, 'a bad workflow name');
  });

  test('POST schedule: 201 with a new secret each time; replacing changes the listed interval; GET schedules', async () => {
    const c = server.client();
    assert.deepEqual(await listed(c), [], 'a new client has no schedule');
    const plain = await schedule(c, 'zeta', { interval_seconds: 60 });
    assert.equal(plain.status, 201, show(plain));
    assert.equal((plain.body as { success?: unknown; code?: unknown }).code, 201);
    assert.equal((plain.body as { success?: unknown }).success, true);
    const first = await scheduled(c, 'alpha', 1, receiver.url('/hook/routes-alpha'));
    const again = await scheduled(c, 'alpha', 300, receiver.url('/hook/routes-alpha'));
    assert.notEqual(again, first, 'replacing answers a new secret');
    const noHook = await scheduled(c, 'Beta', 120);
    assert.ok(![first, again].includes(noHook), 'secrets are not reused across schedules');
    assert.equal(plain.data?.webhook_url, null, 'no webhook: webhook_url null');

    const list = await listed(c);
    assert.deepEqual(
      list.map((s) => [s.workflow, s.interval_seconds, s.webhook_url]),
      [
        ['Beta', 120, null],
        ['alpha', 300, receiver.url('/hook/routes-alpha')],
        ['zeta', 60, null],
      ],
      'one entry per workflow, by code point, the replacement interval',
    );
    for (const s of list) {
      assert.deepEqual(Object.keys(s).sort(), ['interval_seconds', 'last_run_at', 'webhook_url', 'workflow']);
      assert.ok(s.last_run_at === null || TIMESTAMP_RE.test(s.last_run_at), JSON.stringify(s));
    }
    // Every schedule runs at once on creation: last_run_at is filled long before any of their
    // intervals (a minute or more) could have passed.
    const deadline = Date.now() + EVENT_TIMEOUT_MS;
    let latest = list;
    while (latest.some((s) => s.last_run_at === null) && Date.now() < deadline) {
      await sleep(100);
      latest = await listed(c);
    }
    assert.ok(
      latest.every((s) => s.last_run_at !== null),
      `last_run_at after the first runs: ${JSON.stringify(latest)}`,
    );
    // The newest run and the list read between two identical reads of the runs: no run in between.
    for (let tries = 0; ; tries++) {
      const newest = (await runs(c, 'alpha'))[0];
      const shown = (await listed(c)).find((s) => s.workflow === 'alpha');
      if (newest?.run_at !== (await runs(c, 'alpha'))[0]?.run_at && tries < 10) continue;
      assert.equal(shown?.last_run_at, newest?.run_at, 'last_run_at is the newest run');
      break;
    }
  });

  test('schedule bodies refused with 400, nothing created', async () => {
    const c = server.client();
    const elsewhere = `127.0.0.1:${receiver.port === 65535 ? 65534 : receiver.port + 1}`;
    const cases: Array<[string, unknown, RegExp]> = [
      ['interval 0', { interval_seconds: 0 }, /interval_seconds/],
      ['interval -5', { interval_seconds: -5 }, /interval_seconds/],
      ['interval 86401', { interval_seconds: 86401 }, /interval_seconds/],
      ['interval 1.5', { interval_seconds: 1.5 }, /interval_seconds/],
      ['interval as text', { interval_seconds: '60' }, /interval_seconds/],
      ['interval null', { interval_seconds: null }, /interval_seconds/],
      ['interval missing', { webhook_url: receiver.url('/x') }, /interval_seconds/],
      ['an unknown key', { interval_seconds: 60, every: 60 }, /every/],
      ['host not listed', { interval_seconds: 60, webhook_url: 'http://example.com/hook' }, /webhook_url/],
      ['listed host, other port', { interval_seconds: 60, webhook_url: `http://${elsewhere}/hook` }, /webhook_url/],
      ['listed host, default port', { interval_seconds: 60, webhook_url: 'http://127.0.0.1/hook' }, /webhook_url/],
      ['another name of the host', { interval_seconds: 60, webhook_url: `http://localhost:${receiver.port}/hook` }, /webhook_url/],
      ['not a URL', { interval_seconds: 60, webhook_url: 'not a url' }, /webhook_url/],
      ['URL not a string', { interval_seconds: 60, webhook_url: 42 }, /webhook_url/],
    ];
    for (const [what, body, pattern] of cases) expectError(await schedule(c, 'w', body), 400, pattern, what);
    expectError(await c.request('POST', '/api/workflow/schedule/w'), 400, /interval_seconds/, 'no body');
    expectError(await schedule(c, 'bad name', { interval_seconds: 60 }), 400, /workflow/, 'a bad workflow name');
    assert.deepEqual(await listed(c), [], 'no refused body created a schedule');
    // The bounds themselves are accepted.
    await scheduled(c, 'lowest', 1);
    await scheduled(c, 'highest', 86400);
  });

  test('AUTH_WORKFLOW_MIN_INTERVAL_SECONDS=10 refuses 5 and takes 10; no allowed host refuses every webhook', async () => {
    const c = strict.client();
    expectError(await schedule(c, 'w', { interval_seconds: 5 }), 400, /interval_seconds/, 'below the minimum');
    expectError(await schedule(c, 'w', { interval_seconds: 9 }), 400, /interval_seconds/, 'one below the minimum');
    expectError(
      await schedule(c, 'w', { interval_seconds: 10, webhook_url: receiver.url('/never') }),
      400,
      /webhook_url/,
      'webhooks without AUTH_WEBHOOK_ALLOWED_HOSTS',
    );
    assert.deepEqual(await listed(c), []);
    await scheduled(c, 'w', 10);
    assert.deepEqual(
      (await listed(c)).map((s) => [s.workflow, s.interval_seconds]),
      [['w', 10]],
    );
    assert.deepEqual(receiver.received('/never'), [], 'nothing delivered to a refused URL');
  });

  test('DELETE schedule: 200 {workflow}, then 404; its runs are gone; the others stay', async () => {
    const c = server.client();
    await scheduled(c, 'gone', 1);
    await scheduled(c, 'kept', 60);
    await waitForRuns(c, 'gone', 'the first run', EVENT_TIMEOUT_MS, (l) => l.length > 0);
    const del = await unschedule(c, 'gone');
    assert.equal(del.status, 200, show(del));
    assert.deepEqual(del.data, { workflow: 'gone' });
    expectError(await unschedule(c, 'gone'), 404, /gone/, 'a second DELETE');
    expectError(await runsPage(c, 'gone'), 404, /gone/, 'runs of a deleted schedule');
    expectError(await unschedule(c, 'never'), 404, /never/, 'DELETE of a schedule never made');
    assert.deepEqual(
      (await listed(c)).map((s) => s.workflow),
      ['kept'],
    );
    // Scheduling it again starts afresh: the old runs are not back.
    await scheduled(c, 'gone', 60);
    const fresh = await waitForRuns(c, 'gone', 'the new first run', EVENT_TIMEOUT_MS, (l) => l.length > 0);
    // A moment for anything else to show: the old runs, were they kept, are listed at once; the
    // next run of this one is a minute away.
    await sleep(300);
    assert.equal((await runs(c, 'gone')).length, 1, `one run, not the deleted ones: ${JSON.stringify(fresh)}`);
  });

  test('another client sees none of it: empty list, runs 404, DELETE 404, its own schedule apart', async () => {
    const owner = server.client();
    await scheduled(owner, 'shared-name', 1);
    await waitForRuns(owner, 'shared-name', 'the first run', EVENT_TIMEOUT_MS, (l) => l.length > 0);
    const other = server.client();
    assert.deepEqual(await listed(other), []);
    expectError(await runsPage(other, 'shared-name'), 404, /shared-name/, "another client's runs");
    expectError(await unschedule(other, 'shared-name'), 404, /shared-name/, "another client's schedule");
    await scheduled(other, 'shared-name', 3600);
    assert.deepEqual(
      (await listed(owner)).map((s) => s.interval_seconds),
      [1],
      "the other client's schedule does not replace the owner's",
    );
    assert.deepEqual(
      (await listed(other)).map((s) => s.interval_seconds),
      [3600],
    );
  });

  test("scheduling, runs and deleting leave the client's revision and changelog alone", async () => {
    const c = server.client();
    assert.equal((await c.createRole('r')).status, 201);
    assert.equal((await c.grant('r', 'wf')).status, 201);
    assert.equal((await c.addMember('u', 'r')).status, 201);
    const changes = async (): Promise<unknown> => {
      const res = await c.request('GET', '/api/changes?since=0');
      assert.equal(res.status, 200, show(res));
      return res.data;
    };
    const log = await changes();
    const made = await schedule(c, 'wf', { interval_seconds: 1 });
    assert.equal(made.status, 201, show(made));
    assert.equal(made.revision, 3, 'X-Authz-Revision of the 201');
    const ran = await waitForRuns(c, 'wf', 'two runs', EVENT_TIMEOUT_MS, (l) => l.length >= 2);
    assert.equal(ran[0]?.revision, 3, 'a run reads the revision, it does not make one');
    const listedRes = await schedules(c);
    assert.equal(listedRes.revision, 3);
    assert.equal((await runsPage(c, 'wf')).revision, 3);
    const del = await unschedule(c, 'wf');
    assert.equal(del.status, 200, show(del));
    assert.equal(del.revision, 3, 'X-Authz-Revision of the DELETE');
    assert.equal((await c.hasPermission('u', 'wf')).revision, 3);
    assert.deepEqual(await changes(), log, 'no change recorded');
  });
});

// ---- audit and credentials ----------------------------------------------------------------------

function expectRow(
  rows: readonly AuditRow[],
  requestId: string,
  want: { action: string; resource: string; status: number; credential: string },
  revision: number,
): void {
  const found = rows.filter((r) => r.request_id === requestId);
  assert.equal(found.length, 1, `one row for ${requestId}: ${JSON.stringify(found)}`);
  const row = found[0] as AuditRow;
  assert.deepEqual({ action: row.action, resource: row.resource, status: row.status, credential: row.credential }, want, JSON.stringify(row));
  assert.match(row.timestamp, TIMESTAMP_RE);
  assert.equal(row.ip, '127.0.0.1');
  // A schedule makes no revision: a row may only carry the client's current, unchanged one.
  if (row.status >= 300) assert.equal(row.revision, undefined, `no revision on a failure: ${JSON.stringify(row)}`);
  else assert.ok(row.revision === undefined || row.revision === revision, `revision ${row.revision} of a schedule row; the client is at ${revision}`);
}

test('audit: workflow.schedule and workflow.unschedule rows for successes, 400s and 404s', async () => {
  const key = randomUUID();
  const c = server.client(key);
  const cred = keyCredential(key);
  const path = '/api/workflow/schedule/deploy%3Aprod';
  const ids = { made: rid('made'), badInterval: rid('bad-interval'), badHost: rid('bad-host'), removed: rid('removed'), missing: rid('missing') };
  assert.equal((await schedule(c, 'deploy:prod', { interval_seconds: 30 }, { requestId: ids.made })).status, 201);
  assert.equal((await schedule(c, 'deploy:prod', { interval_seconds: 0 }, { requestId: ids.badInterval })).status, 400);
  assert.equal((await schedule(c, 'deploy:prod', { interval_seconds: 30, webhook_url: 'http://example.com/' }, { requestId: ids.badHost })).status, 400);
  assert.equal((await unschedule(c, 'deploy:prod', { requestId: ids.removed })).status, 200);
  assert.equal((await unschedule(c, 'deploy:prod', { requestId: ids.missing })).status, 404);
  const rows = await waitForRows(c, Object.values(ids));
  assert.equal(rows.length, 5, `exactly these rows: ${JSON.stringify(rows)}`);
  expectRow(rows, ids.made, { action: 'workflow.schedule', resource: path, status: 201, credential: cred }, 0);
  expectRow(rows, ids.badInterval, { action: 'workflow.schedule', resource: path, status: 400, credential: cred }, 0);
  expectRow(rows, ids.badHost, { action: 'workflow.schedule', resource: path, status: 400, credential: cred }, 0);
  expectRow(rows, ids.removed, { action: 'workflow.unschedule', resource: path, status: 200, credential: cred }, 0);
  expectRow(rows, ids.missing, { action: 'workflow.unschedule', resource: path, status: 404, credential: cred }, 0);
  assert.ok(!JSON.stringify(rows).includes('whsec_'), 'no row holds a webhook secret');
});

test('a read token: 403 on POST and DELETE schedule (audited), every workflow GET answered', async () => {
  const key = randomUUID();
  const c = server.client(key);
  await scheduled(c, 'wf', 60);
  const minted = await c.issueToken({ scope: 'read' });
  assert.equal(minted.status, 201, show(minted));
  const token = minted.data?.token as string;
  rememberSecret(token, 'token');
  const reader = new RbacClient({ baseUrl: server.baseUrl, key: token });
  const denied = rid('read-token-schedules');
  expectError(await schedule(reader, 'wf', { interval_seconds: 5 }, { requestId: denied }), 403, /./, 'POST schedule with a read token');
  expectError(await unschedule(reader, 'wf'), 403, /./, 'DELETE schedule with a read token');
  const seen = await schedules(reader);
  assert.equal(seen.status, 200, show(seen));
  // Without last_run_at: the schedule's first run may land between the two reads.
  const stable = (list: typeof seen.data) => list?.map(({ workflow, interval_seconds, webhook_url }) => ({ workflow, interval_seconds, webhook_url }));
  assert.deepEqual(stable(seen.data), stable(await listed(c)), "the read token lists its client's schedules");
  assert.deepEqual(
    seen.data?.map((s) => s.interval_seconds),
    [60],
    'the refused POST changed nothing',
  );
  assert.equal((await runsPage(reader, 'wf')).status, 200);
  assert.equal((await usersPage(reader, 'wf')).status, 200);
  assert.equal((await canRun(reader, 'u', 'wf')).status, 200);
  const rows = await waitForRows(c, [denied]);
  expectRow(
    rows,
    denied,
    { action: 'workflow.schedule', resource: '/api/workflow/schedule/wf', status: 403, credential: `token:${String(decodeJwt(token).payload.jti)}` },
    0,
  );
});

test('/openapi.json lists the six workflow operations', async () => {
  const res = await fetch(`${server.baseUrl}/openapi.json`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as { paths?: Record<string, Record<string, unknown>> };
  const expected: Record<string, string[]> = {
    '/api/workflow/users/{workflow}': ['get'],
    '/api/workflow/user/{user}/can_run/{workflow}': ['get'],
    '/api/workflow/schedule/{workflow}': ['post', 'delete'],
    '/api/workflow/schedules': ['get'],
    '/api/workflow/runs/{workflow}': ['get'],
  };
  for (const [path, methods] of Object.entries(expected)) {
    const item = doc.paths?.[path];
    assert.ok(item !== undefined, `openapi paths lack ${path}: ${Object.keys(doc.paths ?? {}).join(' ')}`);
    for (const m of methods) assert.ok(m in item, `openapi ${path} lacks ${m}`);
  }
});
