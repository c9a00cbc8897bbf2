// The worker's one dispatcher of its primary's messages: each message of the protocol reaches
// exactly one handler, and anything else reaches none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dispatch, type PrimaryHandlers } from '../../../src/worker/ipc.ts';

function recorder(): { calls: string[]; handlers: PrimaryHandlers } {
  const calls: string[] = [];
  return {
    calls,
    handlers: {
      change: (m) => calls.push(`change ${m.t}`),
      redis: (subscribed) => calls.push(`redis ${subscribed}`),
      drain: () => calls.push('drain'),
      shutdown: () => calls.push('shutdown'),
      metrics: (id) => calls.push(`metrics ${id}`),
      disconnected: () => calls.push('disconnected'),
    },
  };
}

test('every message of the primary goes to its one handler', () => {
  const cases: Array<[unknown, string]> = [
    [{ t: 'welcome' }, 'change welcome'],
    [{ t: 'apply', id: 1, msgs: [] }, 'change apply'],
    [{ t: 'settled', id: 1 }, 'change settled'],
    [{ t: 'redis', subscribed: true }, 'redis true'],
    [{ t: 'redis', subscribed: false }, 'redis false'],
    [{ t: 'drain' }, 'drain'],
    [{ t: 'shutdown' }, 'shutdown'],
    [{ t: 'metrics', id: 12 }, 'metrics 12'],
  ];
  for (const [m, expected] of cases) {
    const { calls, handlers } = recorder();
    dispatch(m, handlers);
    assert.deepEqual(calls, [expected], JSON.stringify(m));
  }
});

test('what is not a message of the protocol is ignored', () => {
  const { calls, handlers } = recorder();
  for (const m of [undefined, null, 'shutdown', 42, {}, { t: 1 }, { t: 'unknown' }]) dispatch(m, handlers);
  assert.deepEqual(calls, []);
});
