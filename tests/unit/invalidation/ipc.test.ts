// The IPC bus, worker side, over a fake channel that records what would go to the primary: the
// primary's messages are handed to `receive` as the worker's dispatcher does. No process, no clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ipcBus, type IpcChannel } from '../../../src/invalidation/ipc.ts';
import type { ChangeMessage, ChangeToPrimary } from '../../../src/invalidation/messages.ts';
import { tenantId } from '../../helpers/tenants.ts';

function channel(): IpcChannel & { sent: ChangeToPrimary[]; connected: boolean } {
  const c = {
    sent: [] as ChangeToPrimary[],
    connected: true,
    send: (m: ChangeToPrimary): boolean => c.connected && c.sent.push(m) > 0,
  };
  return c;
}

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** Whether `p` has settled by now. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await flush();
  return done;
}

const change = (revision: number): ChangeMessage => ({ v: 1, tenant: tenantId('ipc-test'), revision });

test('join says hello and resolves once the primary welcomes the worker', async () => {
  const c = channel();
  const bus = ipcBus(c);
  const joined = bus.join();
  assert.deepEqual(c.sent, [{ t: 'hello' }]);
  assert.equal(await isSettled(joined), false, 'not counted among the receivers yet');
  bus.receive({ t: 'welcome' });
  assert.equal(await isSettled(joined), true);
});

test('join resolves at once without a primary', async () => {
  const c = channel();
  c.connected = false;
  assert.equal(await isSettled(ipcBus(c).join()), true);
});

test('publish sends the batch as one change and resolves on its own settled', async () => {
  const c = channel();
  const bus = ipcBus(c);
  const first = bus.publish([change(1), change(2)]);
  const second = bus.publish([change(3)]);
  assert.equal(c.sent.length, 2);
  const [a, b] = c.sent;
  assert.ok(a?.t === 'change' && b?.t === 'change');
  assert.deepEqual(a.msgs, [change(1), change(2)]);
  assert.notEqual(a.id, b.id);
  bus.receive({ t: 'settled', id: b.id });
  assert.equal(await isSettled(first), false, "another publish's settled does not release this one");
  assert.equal(await isSettled(second), true);
  bus.receive({ t: 'settled', id: a.id });
  assert.equal(await isSettled(first), true);
});

test('publish resolves at once when the primary is gone: the change is committed, nobody is left to tell', async () => {
  const c = channel();
  c.connected = false;
  assert.equal(await isSettled(ipcBus(c).publish([change(1)])), true);
});

test('apply runs the handler on every change and acknowledges once all settled, failures included', async () => {
  const c = channel();
  const bus = ipcBus(c);
  const seen: number[] = [];
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  bus.subscribe((msg) => {
    const revision = 'revision' in msg ? msg.revision : 0;
    seen.push(revision);
    if (revision === 1) return held;
    return Promise.reject(new Error('could not apply'));
  });
  bus.receive({ t: 'apply', id: 4, msgs: [change(1), change(2)] });
  assert.deepEqual(seen, [1, 2]);
  await flush();
  assert.deepEqual(c.sent, [], 'no acknowledgement while a change is still being applied');
  release();
  await flush();
  assert.deepEqual(c.sent, [{ t: 'ack', id: 4 }], 'acknowledged though one failed: the handler drops what it could not update');
});

test('apply before anyone subscribed is acknowledged', async () => {
  const c = channel();
  ipcBus(c).receive({ t: 'apply', id: 1, msgs: [change(1)] });
  await flush();
  assert.deepEqual(c.sent, [{ t: 'ack', id: 1 }]);
});

test('the primary gone releases every publish waiting for settled', async () => {
  const c = channel();
  const bus = ipcBus(c);
  const waiting = [bus.publish([change(1)]), bus.publish([change(2)])];
  bus.disconnected();
  for (const p of waiting) assert.equal(await isSettled(p), true);
});

test('close releases what waits and ignores later messages', async () => {
  const c = channel();
  const bus = ipcBus(c);
  const waiting = bus.publish([change(1)]);
  let applied = 0;
  bus.subscribe(async () => {
    applied++;
  });
  await bus.close();
  assert.equal(await isSettled(waiting), true);
  bus.receive({ t: 'apply', id: 2, msgs: [change(2)] });
  await flush();
  assert.equal(applied, 0);
  assert.equal(c.sent.filter((m) => m.t === 'ack').length, 0);
});
