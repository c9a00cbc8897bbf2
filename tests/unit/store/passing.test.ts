// The generic hop: a store in front of another writes only the calls it changes; every other
// call of every port reaches `pass` by name with its arguments, untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALL_STORE_METHODS, STORE_METHODS, type StoreCalls, type StoreMethod } from '../../../src/store/port.ts';
import { PassingStore } from '../../../src/store/wrappers/passing.ts';

class Recording extends PassingStore {
  readonly seen: Array<[StoreMethod, readonly unknown[]]> = [];
  protected pass(method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
    this.seen.push([method, args]);
    return Promise.resolve(method);
  }
  override ping(): Promise<void> {
    this.seen.push(['ping', ['own']]);
    return Promise.resolve();
  }
}

test('every call but the ones a subclass writes goes to pass, by name, with its arguments', async () => {
  const r = new Recording();
  for (const method of ALL_STORE_METHODS) {
    const call = r[method] as (...args: unknown[]) => Promise<unknown>;
    const value = await call.call(r, method, 1, [2]);
    if (method !== 'ping') assert.equal(value, method, `${method} answers what pass answered`);
  }
  assert.deepEqual(
    r.seen,
    ALL_STORE_METHODS.map((m) => [m, m === 'ping' ? ['own'] : [m, 1, [2]]]),
  );
});

test('the method lists name each method once, by role', () => {
  assert.equal(new Set(ALL_STORE_METHODS).size, ALL_STORE_METHODS.length);
  assert.deepEqual(Object.keys(STORE_METHODS), ['tenant', 'audit', 'workflow', 'meta']);
  const calls: Array<keyof StoreCalls> = ['load', 'writeMany', 'audit', 'claimDeliveries', 'cursorSecret'];
  for (const m of calls) assert.ok(ALL_STORE_METHODS.includes(m), m);
});
