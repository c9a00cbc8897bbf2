import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Change, WriteOutcome } from '../../../src/authz/changes.ts';
import { AppError } from '../../../src/errors/index.ts';
import { CircuitBreaker, type BreakerState } from '../../../src/store/wrappers/breaker.ts';
import type { Store, PendingWrite, WriteSettled } from '../../../src/store/port.ts';
import { fromWire, toWire } from '../../../src/errors/index.ts';
import { CircuitOpenError, ResilientStore } from '../../../src/store/wrappers/resilient.ts';
import { backoffMs, withRetry } from '../../../src/store/wrappers/retry.ts';
import { tenantId } from '../../helpers/tenants.ts';
import { imageOfSnapshot } from '../../../src/authz/graph-image.ts';

const T = tenantId('t');

const FAST = { attempts: 3, baseMs: 1, maxMs: 2 };
const down = (): AppError => new AppError('ERR_STORE_UNAVAILABLE', 'connection refused');

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

test('backoff doubles up to the cap and is jittered below it', () => {
  const p = { attempts: 5, baseMs: 50, maxMs: 300 };
  assert.equal(
    backoffMs(p, 1, () => 0.999),
    49,
  );
  assert.equal(
    backoffMs(p, 2, () => 0.999),
    99,
  );
  assert.equal(
    backoffMs(p, 3, () => 0.999),
    199,
  );
  assert.equal(
    backoffMs(p, 4, () => 0.999),
    299,
  );
  assert.equal(
    backoffMs(p, 9, () => 0.999),
    299,
  );
  assert.equal(
    backoffMs(p, 3, () => 0),
    0,
  );
});

test('withRetry retries only what it is told to, at most `attempts` times', async () => {
  let calls = 0;
  await assert.rejects(
    withRetry(
      async () => {
        calls++;
        throw down();
      },
      () => true,
      FAST,
    ),
    /connection refused/,
  );
  assert.equal(calls, 3);
  calls = 0;
  await assert.rejects(
    withRetry(
      async () => {
        calls++;
        throw new Error('bug');
      },
      () => false,
      FAST,
    ),
    /bug/,
  );
  assert.equal(calls, 1);
  calls = 0;
  assert.equal(
    await withRetry(
      async () => (++calls < 3 ? Promise.reject(down()) : 'ok'),
      () => true,
      FAST,
    ),
    'ok',
  );
  assert.equal(calls, 3);
});

test('the breaker opens after the threshold, refuses during the cool-down, then lets one probe through', () => {
  const c = clock();
  const seen: BreakerState[] = [];
  const b = new CircuitBreaker({ threshold: 3, cooldownMs: 500, now: c.now, onChange: (s) => seen.push(s) });
  for (let i = 0; i < 2; i++) {
    assert.ok(b.tryAcquire());
    b.failure();
  }
  assert.equal(b.state, 'closed');
  assert.ok(b.tryAcquire());
  b.success(); // a success resets the count of consecutive failures
  for (let i = 0; i < 3; i++) {
    assert.ok(b.tryAcquire());
    b.failure();
  }
  assert.equal(b.state, 'open');
  assert.equal(b.tryAcquire(), false);
  assert.equal(b.retryAfterMs, 500);
  c.advance(499);
  assert.equal(b.tryAcquire(), false);
  c.advance(1);
  assert.equal(b.state, 'half-open');
  assert.ok(b.tryAcquire(), 'the probe');
  assert.equal(b.tryAcquire(), false, 'only one probe at a time');
  b.failure();
  assert.equal(b.state, 'open', 'a failed probe re-opens at once');
  c.advance(500);
  assert.ok(b.tryAcquire());
  b.success();
  assert.equal(b.state, 'closed');
  assert.deepEqual(seen, ['open', 'half-open', 'open', 'half-open', 'closed']);
});

/** A store whose calls fail while `failing` is set, counting the calls that reached it. */
function flakyStore(): { store: Store; failing: { on: boolean; error: () => AppError }; calls: { n: number } } {
  const failing = { on: false, error: down };
  const calls = { n: 0 };
  const hit = async <T>(v: T): Promise<T> => {
    calls.n++;
    if (failing.on) throw failing.error();
    return v;
  };
  const committed: WriteOutcome = { ok: true, revision: 1, changes: [{ op: 'role.create', role: 'r', description: '' }], effects: [{}] };
  const store: Store = {
    load: () => hit({ revision: 0, roles: [], grants: [], memberships: [], windows: [] } as never),
    loadGraph: () => hit(imageOfSnapshot({ revision: 0, roles: [], grants: [], memberships: [], windows: [] })),
    revision: () => hit(0),
    revisions: () => hit([]),
    tenantsSince: () => hit({ tenants: [], revisions: [], cursor: '0' }),
    writeMany: (ws) => hit(ws.map((): WriteSettled => ({ ok: true, value: committed }))),
    commitBoundaries: () => hit([]),
    exportPage: () => hit({ revision: 0, rows: [] }),
    importData: () => hit({ ok: true, revision: 0, changed: false, roles: 0, permissions: 0, memberships: 0, added: 0, removed: 0 } as const),
    changes: () => hit([]),
    appendAudit: () => hit(undefined),
    audit: () => hit([]),
    pruneAudit: () => hit(0),
    cursorSecret: () => hit(Buffer.alloc(32)),
    ping: () => hit(undefined),
    claimEncryption: (mark) => hit(mark),
    close: async () => undefined,
    putSchedule: () => hit(undefined),
    deleteSchedule: () => hit(true),
    schedules: () => hit([]),
    runs: () => hit(undefined),
    takeLease: () => hit(true),
    releaseLease: () => hit(undefined),
    dueSchedules: () => hit([]),
    runSchedule: () => hit(undefined),
    claimDeliveries: () => hit([]),
    recordDelivery: () => hit(undefined),
    recordToken: () => hit(undefined),
    revokeToken: () => hit(undefined),
    revokedTokens: () => hit([]),
    pruneTokens: () => hit(0),
  };
  return { store, failing, calls };
}

test('ResilientStore: transient failures are retried, the circuit opens and fails fast, then recovers', async () => {
  const c = clock();
  const { store, failing, calls } = flakyStore();
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 4, cooldownMs: 1000, now: c.now }), FAST);
  failing.on = true;
  await assert.rejects(r.revision(T), /connection refused/);
  assert.equal(calls.n, 3, 'three attempts');
  assert.equal(r.circuitOpen, false);
  await assert.rejects(r.writeMany([{ tenant: T, changes: [{ op: 'role.delete', role: 'r' }] }]), /connection refused/);
  assert.equal(calls.n, 4, 'the fourth failure opened the circuit: no further retry');
  assert.equal(r.circuitOpen, true);
  await assert.rejects(r.load(T), (err: unknown) => err instanceof CircuitOpenError && err.status === 503);
  assert.equal(calls.n, 4, 'refused without touching the database');
  failing.on = false;
  c.advance(1000);
  assert.equal(await r.revision(T), 0, 'the probe succeeds');
  assert.equal(r.circuitOpen, false);
  assert.equal(calls.n, 5);
});

test('ResilientStore: a failure during commit is not retried; other errors do not open the circuit', async () => {
  const { store, failing, calls } = flakyStore();
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 2, cooldownMs: 1000 }), FAST);
  failing.on = true;
  failing.error = () => new AppError('ERR_STORE_COMMIT_UNKNOWN', 'connection lost during commit');
  await assert.rejects(r.writeMany([{ tenant: T, changes: [{ op: 'role.delete', role: 'r' }] }]), /during commit/);
  assert.equal(calls.n, 1, 'never retried: the write may have committed');
  failing.error = () => new AppError('ERR_INTERNAL', 'a bug');
  for (let i = 0; i < 5; i++) await assert.rejects(r.revision(T), /a bug/);
  assert.equal(calls.n, 6);
  assert.equal(r.circuitOpen, false, 'bugs are not outages');
});

test('ResilientStore: workflow calls are retried when nothing committed, never when the commit is unknown', async () => {
  const { store, failing, calls } = flakyStore();
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 10, cooldownMs: 1000 }), FAST);
  const due = { tenant: T, workflow: 'w' };
  failing.on = true;
  await assert.rejects(r.runSchedule(due, 0, 'msg_1'), /connection refused/);
  assert.equal(calls.n, 3, 'a run that failed before committing is tried again');
  failing.error = () => new AppError('ERR_STORE_COMMIT_UNKNOWN', 'connection lost during commit');
  await assert.rejects(r.claimDeliveries(0, 1000, 10), /during commit/);
  assert.equal(calls.n, 4, 'a claim that may have committed is not');
  failing.on = false;
  assert.equal(await r.takeLease('me', 0, 1000), true);
  assert.deepEqual(await r.dueSchedules(0, 10), []);
});

/** A batch store whose writes settle as `plan` says, call by call: each call takes the next plan. */
function scriptedBatches(plans: Array<(w: PendingWrite) => WriteSettled>): { store: Store; seen: string[][] } {
  const seen: string[][] = [];
  const base = flakyStore().store;
  let call = 0;
  const store: Store = {
    ...base,
    writeMany: async (ws) => {
      seen.push(ws.map((w) => (w.changes[0] as Change).role));
      const plan = plans[Math.min(call++, plans.length - 1)] as (w: PendingWrite) => WriteSettled;
      return ws.map(plan);
    },
  };
  return { store, seen };
}

const ok = (w: PendingWrite): WriteSettled => ({ ok: true, value: { ok: true, revision: 1, changes: w.changes, effects: w.changes.map(() => ({})) } });
const failWith = (code: 'ERR_STORE_UNAVAILABLE' | 'ERR_STORE_COMMIT_UNKNOWN') => (): WriteSettled => ({ ok: false, error: toWire(new AppError(code, 'down')) });
const batch = (...roles: string[]): PendingWrite[] => roles.map((role) => ({ tenant: T, changes: [{ op: 'role.create', role, description: '' }] }));

test('ResilientStore.writeMany is one attempt; mayRetryWrite tells its caller what may be tried again, and retryWait counts the retry', async () => {
  const { store, seen } = scriptedBatches([(w) => ((w.changes[0] as Change).role === 'b' ? failWith('ERR_STORE_UNAVAILABLE')() : ok(w)), ok]);
  let retries = 0;
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 10, cooldownMs: 1000 }), FAST, () => retries++);
  const settled = await r.writeMany(batch('a', 'b', 'c'));
  assert.deepEqual(seen, [['a', 'b', 'c']], 'no retry inside the call: the caller holds a commit slot');
  assert.deepEqual(
    settled.map((s) => s.ok),
    [true, false, true],
  );
  const failed = settled[1] as Extract<WriteSettled, { ok: false }>;
  assert.equal(r.mayRetryWrite(fromWire(failed.error), 1), true, 'nothing committed: may be tried again');
  assert.equal(r.mayRetryWrite(fromWire(failed.error), FAST.attempts), false, 'no attempt left');
  assert.equal(r.mayRetryWrite(new AppError('ERR_STORE_COMMIT_UNKNOWN', 'cut off'), 1), false, 'may have committed');
  assert.equal(r.mayRetryWrite(new CircuitOpenError(10), 1), false);
  await r.retryWait(1);
  assert.equal(retries, 1);
});

test('ResilientStore.mayRetryWrite: never while the circuit is open', async () => {
  const { store } = scriptedBatches([failWith('ERR_STORE_UNAVAILABLE')]);
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 1, cooldownMs: 60_000 }), FAST);
  const [first] = await r.writeMany(batch('a'));
  assert.equal(r.circuitOpen, true);
  assert.equal(r.mayRetryWrite(fromWire((first as Extract<WriteSettled, { ok: false }>).error), 1), false);
});

test('ResilientStore.writeMany: a commit that may have happened is never tried again', async () => {
  const { store, seen } = scriptedBatches([failWith('ERR_STORE_COMMIT_UNKNOWN')]);
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 10, cooldownMs: 1000 }), FAST);
  const settled = await r.writeMany(batch('a', 'b'));
  assert.deepEqual(seen, [['a', 'b']]);
  assert.ok(settled.every((s) => !s.ok && s.error.code === 'ERR_STORE_COMMIT_UNKNOWN'));
});

test('ResilientStore.writeMany: an open circuit refuses the batch without touching the database', async () => {
  const { store, seen } = scriptedBatches([failWith('ERR_STORE_UNAVAILABLE')]);
  const r = new ResilientStore(store, new CircuitBreaker({ threshold: 1, cooldownMs: 60_000 }), FAST);
  const first = await r.writeMany(batch('a'));
  assert.equal(first[0]?.ok, false);
  assert.equal(r.circuitOpen, true, 'the failed batch opened the circuit');
  await assert.rejects(r.writeMany(batch('b')), (err: unknown) => err instanceof CircuitOpenError);
  assert.deepEqual(seen, [['a']]);
});
