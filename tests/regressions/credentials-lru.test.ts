// The memo of credentials forgets the least recently used header past its bound: a key in steady
// use stays remembered while 100,000 others pass (it used to be dropped whole, with every other
// client's key, each time the memo filled).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Credentials } from '../../src/http/input/credentials.ts';

test('a key used steadily stays remembered while 100,000 others pass', () => {
  const credentials = new Credentials(undefined);
  const steady = `Bearer ${randomUUID()}`;
  const principal = credentials.known(steady);
  assert.ok(principal !== undefined);
  for (let i = 0; i < 100_000; i++) {
    credentials.known(`Bearer ${randomUUID()}`);
    if (i % 1_000 === 0) assert.equal(credentials.known(steady), principal, `forgotten after ${i} other keys`);
  }
  assert.equal(credentials.known(steady), principal, 'the same principal object: remembered, not worked out again');
});

test('a key not used again is the one forgotten', () => {
  const credentials = new Credentials(undefined);
  const once = `Bearer ${randomUUID()}`;
  const first = credentials.known(once);
  for (let i = 0; i < 100_000; i++) credentials.known(`Bearer ${randomUUID()}`);
  assert.notEqual(credentials.known(once), first, 'worked out again: it was the least recently used');
});
