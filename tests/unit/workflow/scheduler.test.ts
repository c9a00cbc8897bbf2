// The workflow scheduler on a clock the test moves (tests/helpers/clock.ts), against a real SQLite
// store in a temporary folder: due schedules run at the clock's time, one leader per database,
// missed time is not replayed, ticks never overlap, and stop lets deliveries finish briefly and
// gives the lease up. No test here sleeps.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditRecord } from '../../../src/audit/record.ts';
import type { Change } from '../../../src/authz/changes.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import type { Logger } from '../../../src/log/index.ts';
import { openStore } from '../../../src/store/index.ts';
import type { BoundaryCommitted, Store } from '../../../src/store/port.ts';
import { timestampAt } from '../../../src/time/index.ts';
import type { DeliveryJob, DeliveryUpdate, RunEntry } from '../../../src/workflow/records.ts';
import { Scheduler, type SchedulerOptions } from '../../../src/workflow/scheduler.ts';
import { ManualClock, settle } from '../../helpers/clock.ts';
import { randomTenant } from '../../helpers/tenants.ts';

const TICK_MS = 250;
/** The lease; renewed every quarter of it, which is one tick here. */
const LEASE_MS = 1000;
const MINUTE = 60_000;
/** How long stop() lets deliveries in flight record their outcome. */
const STOP_GRACE_MS = 2000;

type SchedulerStore = SchedulerOptions['store'];

/** A SQLite store in a folder of its own, closed and removed after the test. */
function sqliteStore(t: TestContext): Store {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-scheduler-'));
  const store = openStore({ type: 'sqlite', sqlitePath: join(dir, 'rbac.sqlite3') });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

/** The scheduler's calls of `store`, with `override`s in place of some. */
function schedulerStore(store: Store, override: Partial<SchedulerStore> = {}): SchedulerStore {
  return {
    takeLease: (...a) => store.takeLease(...a),
    releaseLease: (...a) => store.releaseLease(...a),
    dueSchedules: (...a) => store.dueSchedules(...a),
    runSchedule: (...a) => store.runSchedule(...a),
    claimDeliveries: (...a) => store.claimDeliveries(...a),
    recordDelivery: (...a) => store.recordDelivery(...a),
    commitBoundaries: (...a) => store.commitBoundaries(...a),
    ...override,
  };
}

const delivered = (job: DeliveryJob): Promise<DeliveryUpdate> =>
  Promise.resolve({ runId: job.run.id, status: 'delivered', attempts: 1, lastStatus: 204, nextAttemptAtMs: null });

/** A scheduler named `owner` on `clock`, with what it reports and logs. */
function scheduler(store: SchedulerStore, clock: ManualClock, owner: string, deliver = delivered) {
  const seen = {
    ran: [] as boolean[],
    leading: [] as boolean[],
    delivered: [] as DeliveryUpdate[],
    boundaries: [] as BoundaryCommitted[],
    logged: [] as string[],
  };
  const record =
    (level: string) =>
    (msg: string): void =>
      void seen.logged.push(`${level} ${msg}`);
  const log: Logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error'), enabled: () => true };
  let ids = 0;
  const s = new Scheduler({
    store,
    deliver,
    owner,
    leaseMs: LEASE_MS,
    tickMs: TICK_MS,
    newWebhookId: () => `msg_${owner}_${++ids}`,
    log,
    events: {
      ran: (_, ok) => seen.ran.push(ok),
      delivered: (u) => seen.delivered.push(u),
      leading: (l) => seen.leading.push(l),
      boundaries: (committed) => seen.boundaries.push(...committed),
    },
    clock,
  });
  return { s, seen };
}

const auditRow = (t: TenantId): AuditRecord => ({
  tenant: t,
  at: '2030-01-01T00:00:00.000000',
  action: 'workflow.schedule',
  resource: '/api/workflow/schedule/deploy',
  status: 201,
  credential: 'key:0123456789ab',
  requestId: 'r1',
  ip: '::1',
});

/** A client with alice holding `deploy`, and a schedule of it due at `dueMs`. */
async function scheduled(store: Store, dueMs: number, webhookUrl: string | null = null): Promise<TenantId> {
  const t = randomTenant();
  const changes: Change[] = [
    { op: 'role.create', role: 'ops', description: '' },
    { op: 'permission.grant', role: 'ops', permission: 'deploy' },
    { op: 'membership.add', role: 'ops', user: 'alice' },
  ];
  const settled = await store.writeMany(changes.map((change) => ({ tenant: t, changes: [change] })));
  assert.ok(settled.every((s) => s.ok && s.value.ok));
  await store.putSchedule({ tenant: t, workflow: 'deploy', intervalSeconds: 60, webhookUrl, webhookSecret: 'whsec_dGVzdA==' }, dueMs, auditRow(t));
  return t;
}

const runsOf = async (store: Store, t: TenantId): Promise<RunEntry[]> => (await store.runs(t, 'deploy', undefined, 100)) ?? [];

test('a due schedule runs at the first tick after it is due, then once per interval, at the times of the clock', async (t) => {
  const clock = new ManualClock();
  const T0 = clock.now();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, T0);
  const { s, seen } = scheduler(schedulerStore(store), clock, 'a');
  s.start();
  await clock.advance(0);
  assert.equal(s.leader, true, 'the lease is taken at start');
  assert.deepEqual(await runsOf(store, tenant), [], 'no tick yet');
  await clock.advance(TICK_MS);
  const [first] = await runsOf(store, tenant);
  assert.equal(first?.runAt, timestampAt(T0 + TICK_MS), 'run at the tick, by the clock');
  assert.deepEqual([first?.added, first?.usersCount], [['alice'], 1]);
  await clock.advanceTo(T0 + MINUTE - 1);
  assert.equal((await runsOf(store, tenant)).length, 1, 'not again before the interval');
  await clock.advance(1);
  const runs = await runsOf(store, tenant);
  assert.deepEqual(
    runs.map((r) => r.runAt),
    [timestampAt(T0 + MINUTE), timestampAt(T0 + TICK_MS)],
  );
  assert.deepEqual([runs[0]?.added, runs[0]?.removed], [[], []], 'nothing changed since');
  assert.deepEqual(seen.ran, [true, true]);
  assert.deepEqual(seen.leading, [true]);
  assert.deepEqual(seen.boundaries, [], 'no edge has a window: no boundary to commit');
  assert.deepEqual(seen.logged, ['info workflow scheduler leads']);
});

test('one leader per database; a leader that loses the database stands by, and another takes over once its lease has expired, not before', async (t) => {
  const clock = new ManualClock();
  const T0 = clock.now();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, T0);
  let down = false;
  const flaky = schedulerStore(store, { takeLease: (...a) => (down ? Promise.reject(new Error('connection refused')) : store.takeLease(...a)) });
  const a = scheduler(flaky, clock, 'a');
  const b = scheduler(schedulerStore(store), clock, 'b');
  a.s.start();
  b.s.start();
  await clock.advance(0);
  assert.deepEqual([a.s.leader, b.s.leader], [true, false]);
  await clock.advance(TICK_MS);
  assert.equal((await runsOf(store, tenant)).length, 1);
  assert.deepEqual([a.seen.ran, b.seen.ran], [[true], []], 'only the leader runs');
  // a renewed its lease at T0 + TICK_MS, so it holds until T0 + TICK_MS + LEASE_MS whatever happens to it.
  down = true;
  await clock.advance(LEASE_MS / 4);
  assert.equal(a.s.leader, false, 'unsure of its lease: it stands by');
  assert.ok(a.seen.logged.includes('warn workflow scheduler cannot reach the database'), a.seen.logged.join('\n'));
  await clock.advanceTo(T0 + TICK_MS + LEASE_MS);
  assert.equal(b.s.leader, false, 'the lease has not expired yet');
  await clock.advance(LEASE_MS / 4);
  assert.equal(b.s.leader, true, 'taken over at the first renewal after it expired');
  assert.deepEqual(b.seen.leading, [true]);
});

test('missed time: a schedule overdue by many intervals runs once, then on its interval grid; a tick still running when the next falls due makes that one a no-op', async (t) => {
  const clock = new ManualClock();
  const T0 = clock.now();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, T0);
  await clock.advance(10 * MINUTE + 20_000); // nothing runs meanwhile
  let asked = 0;
  let gate: Promise<void> | undefined;
  const gated = schedulerStore(store, {
    dueSchedules: async (...a) => {
      asked++;
      await gate;
      return store.dueSchedules(...a);
    },
  });
  const { s } = scheduler(gated, clock, 'a');
  const started = clock.now();
  s.start();
  await clock.advance(TICK_MS);
  assert.deepEqual(
    (await runsOf(store, tenant)).map((r) => r.runAt),
    [timestampAt(started + TICK_MS)],
    'ten missed runs are one run',
  );
  await clock.advanceTo(T0 + 11 * MINUTE - 1);
  assert.equal((await runsOf(store, tenant)).length, 1, 'the next run is on the grid of the due time, not an interval after the late run');
  await clock.advance(1);
  assert.equal((await runsOf(store, tenant))[0]?.runAt, timestampAt(T0 + 11 * MINUTE));

  let open = (): void => undefined;
  gate = new Promise((resolve) => (open = resolve));
  const before = asked;
  await clock.advance(TICK_MS);
  assert.equal(asked, before + 1, 'a tick started and waits on the database');
  await clock.advance(4 * TICK_MS);
  assert.equal(asked, before + 1, 'the ticks due meanwhile did nothing');
  open();
  gate = undefined;
  await settle();
  await clock.advance(TICK_MS);
  assert.equal(asked, before + 2, 'ticking goes on once it is done');
});

test('deliveries: a run with a webhook is claimed and delivered with its webhook id, and the outcome recorded on the run', async (t) => {
  const clock = new ManualClock();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, clock.now(), 'https://hooks.example.com/rbac');
  const jobs: DeliveryJob[] = [];
  const { s, seen } = scheduler(schedulerStore(store), clock, 'a', (job) => {
    jobs.push(job);
    return delivered(job);
  });
  s.start();
  await clock.advance(TICK_MS);
  assert.deepEqual(
    jobs.map((j) => [j.webhookId, j.webhookUrl, j.tenant]),
    [['msg_a_1', 'https://hooks.example.com/rbac', tenant]],
  );
  assert.deepEqual((await runsOf(store, tenant))[0]?.delivery, { status: 'delivered', attempts: 1, lastStatus: 204 });
  assert.deepEqual(
    seen.delivered.map((u) => u.status),
    ['delivered'],
  );
});

test('stop: no tick after it, a delivery in flight gets a 2 s grace on the clock, and the lease is given up at once', async (t) => {
  const clock = new ManualClock();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, clock.now(), 'https://hooks.example.com/rbac');
  let asked = 0;
  const counting = schedulerStore(store, { dueSchedules: (...a) => (asked++, store.dueSchedules(...a)) });
  const hanging: DeliveryJob[] = [];
  const a = scheduler(counting, clock, 'a', (job) => new Promise<DeliveryUpdate>(() => void hanging.push(job)));
  a.s.start();
  await clock.advance(TICK_MS);
  assert.equal(hanging.length, 1, 'a delivery is in flight');
  let stopped = false;
  const stopping = a.s.stop().then(() => (stopped = true));
  const askedAtStop = asked;
  await clock.advance(STOP_GRACE_MS - 1);
  assert.equal(stopped, false, 'waiting for the delivery');
  assert.equal(asked, askedAtStop, 'no tick after stop');
  await clock.advance(1);
  await stopping;
  assert.equal(stopped, true, 'the grace is over');
  assert.deepEqual([a.s.leader, a.seen.leading], [false, [true, false]]);
  assert.equal((await runsOf(store, tenant))[0]?.delivery.status, 'pending', 'its outcome never came: the claim will lapse and it is tried again');
  const b = scheduler(schedulerStore(store), clock, 'b');
  b.s.start();
  await clock.advance(0);
  assert.equal(b.s.leader, true, 'the lease was given up: no waiting for it to expire');
  await b.s.stop();
});

test('a deleted schedule runs no more, however long the clock runs on', async (t) => {
  const clock = new ManualClock();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, clock.now());
  // What the scheduler runs, seen where it asks the store: the store's lists would hide a run of a
  // schedule that no longer exists.
  let runsAsked = 0;
  const counting = schedulerStore(store, { runSchedule: (...a) => (runsAsked++, store.runSchedule(...a)) });
  const { s } = scheduler(counting, clock, 'a');
  s.start();
  t.after(() => s.stop());
  await clock.advance(TICK_MS);
  assert.equal((await runsOf(store, tenant)).length, 1, 'it ran once');
  assert.equal(runsAsked, 1);
  assert.equal(await store.deleteSchedule(tenant, 'deploy', auditRow(tenant)), true);
  await clock.advance(10 * MINUTE);
  assert.equal(runsAsked, 1, 'not run again: ten intervals passed');
  assert.deepEqual(await store.dueSchedules(clock.now(), 100), [], 'nothing is due');
});

test('a delivery that failed for good is never claimed again', async (t) => {
  const clock = new ManualClock();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, clock.now(), 'https://hooks.example.com/rbac');
  const attempts: DeliveryJob[] = [];
  const failing = (job: DeliveryJob): Promise<DeliveryUpdate> => {
    attempts.push(job);
    return Promise.resolve({ runId: job.run.id, status: 'failed', attempts: 4, lastStatus: 500, nextAttemptAtMs: null });
  };
  // An interval of a day: the one run is the only delivery there can be.
  await store.putSchedule(
    { tenant, workflow: 'deploy', intervalSeconds: 86_400, webhookUrl: 'https://hooks.example.com/rbac', webhookSecret: 'whsec_dGVzdA==' },
    clock.now(),
    auditRow(tenant),
  );
  const { s } = scheduler(schedulerStore(store), clock, 'a', failing);
  s.start();
  t.after(() => s.stop());
  await clock.advance(TICK_MS);
  assert.equal(attempts.length, 1, 'delivered once, and it failed');
  await clock.advance(10 * MINUTE);
  assert.equal(attempts.length, 1, 'no attempt after failed');
  assert.deepEqual((await runsOf(store, tenant))[0]?.delivery, { status: 'failed', attempts: 4, lastStatus: 500 });
});

test('deleting a schedule stops the retries of its pending delivery', async (t) => {
  const clock = new ManualClock();
  const store = sqliteStore(t);
  const tenant = await scheduled(store, clock.now(), 'https://hooks.example.com/rbac');
  const attempts: DeliveryJob[] = [];
  const retryLater = (job: DeliveryJob): Promise<DeliveryUpdate> => {
    attempts.push(job);
    return Promise.resolve({ runId: job.run.id, status: 'pending', attempts: attempts.length, lastStatus: 302, nextAttemptAtMs: clock.now() + 5000 });
  };
  const { s } = scheduler(schedulerStore(store), clock, 'a', retryLater);
  s.start();
  t.after(() => s.stop());
  await clock.advance(TICK_MS);
  await clock.advance(5000);
  assert.equal(attempts.length, 2, 'a pending delivery is tried again when its retry falls due');
  assert.equal(await store.deleteSchedule(tenant, 'deploy', auditRow(tenant)), true);
  await clock.advance(10 * MINUTE);
  assert.equal(attempts.length, 2, 'no retry once the schedule is deleted');
});
