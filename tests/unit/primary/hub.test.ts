// The primary's change hub with fake workers that record what they are sent: which workers get a
// change, when its origin hears `settled`, and what happens to a worker that does not
// acknowledge (the ack timeout runs on node:test's mocked clock, so nothing waits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:cluster';
import type { ChangeMessage } from '../../../src/invalidation/messages.ts';
import type { ToWorker } from '../../../src/ipc/protocol.ts';
import { createLogger } from '../../../src/log/index.ts';
import { ChangeHub } from '../../../src/primary/hub.ts';
import { ManualClock } from '../../helpers/clock.ts';
import { tenantId } from '../../helpers/tenants.ts';

interface FakeWorker {
  readonly worker: Worker;
  readonly sent: ToWorker[];
  readonly kills: string[];
  connected: boolean;
}

function fakeWorker(id: number): FakeWorker {
  const fake: FakeWorker = { sent: [], kills: [], connected: true, worker: undefined as unknown as Worker };
  const worker = {
    id,
    isConnected: () => fake.connected,
    send: (m: ToWorker) => fake.sent.push(m) > 0,
    process: { pid: 1000 + id, kill: (signal: string) => fake.kills.push(signal) > 0 },
  };
  return Object.assign(fake, { worker: worker as unknown as Worker });
}

const ACK_TIMEOUT_MS = 2000;
const hub = (clock = new ManualClock()): ChangeHub => new ChangeHub(ACK_TIMEOUT_MS, createLogger('silent'), clock);
const msgs: readonly ChangeMessage[] = [{ v: 1, tenant: tenantId('hub-test'), revision: 1, changes: [{ op: 'permission.grant', role: 'r', permission: 'p' }] }];
const applies = (w: FakeWorker): ToWorker[] => w.sent.filter((m) => m.t === 'apply');
const settled = (w: FakeWorker): ToWorker[] => w.sent.filter((m) => m.t === 'settled');

/** A hub with `n` joined workers (ids 1..n), their `welcome` cleared. */
function joined(n: number, clock = new ManualClock()): { h: ChangeHub; ws: FakeWorker[] } {
  const h = hub(clock);
  const ws = Array.from({ length: n }, (_, i) => fakeWorker(i + 1));
  for (const w of ws) {
    h.join(w.worker);
    assert.deepEqual(w.sent, [{ t: 'welcome' }], 'a joining worker is welcomed');
    w.sent.length = 0;
  }
  return { h, ws };
}

test('a change goes to every other joined worker, and its origin hears settled once all acknowledged', () => {
  const { h, ws } = joined(3);
  const [a, b, c] = ws as [FakeWorker, FakeWorker, FakeWorker];
  h.change(a.worker, 7, msgs);
  assert.deepEqual(applies(a), [], 'the origin applied it already');
  const [toB] = applies(b);
  assert.ok(toB?.t === 'apply');
  assert.deepEqual(toB.msgs, msgs);
  assert.deepEqual(applies(c), [{ t: 'apply', id: toB.id, msgs }], 'one fan-out id for every receiver');
  h.ack(b.worker, toB.id);
  assert.deepEqual(settled(a), [], 'one receiver has not acknowledged yet');
  h.ack(b.worker, toB.id);
  h.ack(c.worker, toB.id);
  assert.deepEqual(settled(a), [{ t: 'settled', id: 7 }], 'settled once, with the id the origin gave');
  h.ack(c.worker, toB.id);
  assert.equal(settled(a).length, 1, 'a late duplicate acknowledgement settles nothing more');
});

test('a change with no other worker to tell settles at once', () => {
  const { h, ws } = joined(1);
  h.change(ws[0]?.worker, 3, msgs);
  assert.deepEqual(ws[0]?.sent, [{ t: 'settled', id: 3 }]);
});

test('a worker that is not connected is neither sent the change nor waited for', () => {
  const { h, ws } = joined(3);
  const [a, b, c] = ws as [FakeWorker, FakeWorker, FakeWorker];
  c.connected = false;
  h.change(a.worker, 1, msgs);
  assert.deepEqual(applies(c), []);
  const [toB] = applies(b);
  assert.ok(toB?.t === 'apply');
  h.ack(b.worker, toB.id);
  assert.deepEqual(settled(a), [{ t: 'settled', id: 1 }]);
});

test('a change from another instance goes to every worker and waits for nobody', async () => {
  const clock = new ManualClock();
  const { h, ws } = joined(2, clock);
  h.change(undefined, 0, msgs);
  for (const w of ws) assert.equal(applies(w).length, 1);
  assert.equal(clock.pending, 0, 'no timeout is set');
  await clock.advance(ACK_TIMEOUT_MS * 2);
  for (const w of ws) assert.deepEqual(w.kills, [], 'no acknowledgement is awaited, so nobody is replaced');
  for (const w of ws) assert.deepEqual(settled(w), []);
});

test('a receiver that leaves is no longer waited for', () => {
  const { h, ws } = joined(3);
  const [a, b, c] = ws as [FakeWorker, FakeWorker, FakeWorker];
  h.change(a.worker, 5, msgs);
  const [toB] = applies(b);
  assert.ok(toB?.t === 'apply');
  h.ack(b.worker, toB.id);
  h.leave(c.worker.id);
  assert.deepEqual(settled(a), [{ t: 'settled', id: 5 }]);
  h.change(a.worker, 6, msgs);
  assert.deepEqual(applies(c), [{ t: 'apply', id: toB.id, msgs }], 'a worker that left gets no further change');
});

test('a receiver that does not acknowledge in time is killed, and the origin then settles', async () => {
  const clock = new ManualClock();
  const { h, ws } = joined(3, clock);
  const [a, b, c] = ws as [FakeWorker, FakeWorker, FakeWorker];
  h.change(a.worker, 9, msgs);
  const [toB] = applies(b);
  assert.ok(toB?.t === 'apply');
  h.ack(b.worker, toB.id);
  await clock.advance(ACK_TIMEOUT_MS - 1);
  assert.deepEqual(c.kills, [], 'not before the timeout');
  assert.deepEqual(settled(a), []);
  await clock.advance(1);
  assert.deepEqual(c.kills, ['SIGKILL'], 'the laggard is killed (the supervisor replaces it)');
  assert.deepEqual(b.kills, [], 'a worker that acknowledged is kept');
  assert.deepEqual(settled(a), [{ t: 'settled', id: 9 }]);
});

test('a change settled in time leaves no timer to kill anyone later', async () => {
  const clock = new ManualClock();
  const { h, ws } = joined(2, clock);
  const [a, b] = ws as [FakeWorker, FakeWorker];
  h.change(a.worker, 1, msgs);
  const [toB] = applies(b);
  assert.ok(toB?.t === 'apply');
  h.ack(b.worker, toB.id);
  assert.equal(clock.pending, 0, 'the timeout was cancelled');
  await clock.advance(ACK_TIMEOUT_MS * 2);
  assert.deepEqual(b.kills, []);
  assert.equal(settled(a).length, 1);
});

test('broadcast reaches every joined worker, and a send that throws is survived', () => {
  const { h, ws } = joined(2);
  const broken = fakeWorker(3);
  h.join(broken.worker);
  (broken.worker as unknown as { send: () => never }).send = () => {
    throw new Error('channel closed');
  };
  h.broadcast({ t: 'redis', subscribed: true });
  for (const w of ws) assert.deepEqual(w.sent, [{ t: 'redis', subscribed: true }]);
});
