// WriteCohorts: the writes of one client that arrive while its previous cohort is being committed
// and acknowledged wait, then start together; a lone write never waits; clients do not wait for
// each other.
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { WriteCohorts } from '../../../src/worker/cohorts.ts';

/** Enters and records when the caller was let in. */
function enter(c: WriteCohorts, key: string, started: string[], name: string): Promise<void> {
  const wait = c.enter(key);
  if (wait === undefined) {
    started.push(name);
    return Promise.resolve();
  }
  return wait.then(() => void started.push(name));
}

test('a write with nothing in flight starts at once, and the client is forgotten when it leaves', () => {
  const c = new WriteCohorts();
  assert.equal(c.enter('a'), undefined);
  assert.equal(c.pending('a'), 1);
  c.leave('a');
  assert.equal(c.pending('a'), 0);
  assert.equal(c.enter('a'), undefined, 'the next lone write starts at once too');
  c.leave('a');
});

test('writes of the same turn join the running cohort; later ones wait for all of it to leave', async () => {
  const c = new WriteCohorts();
  const started: string[] = [];
  await Promise.all([enter(c, 'a', started, 'w1'), enter(c, 'a', started, 'w2')]);
  assert.deepEqual(started, ['w1', 'w2'], 'same turn: one cohort');
  await nextTurn();
  const w3 = enter(c, 'a', started, 'w3');
  const w4 = enter(c, 'a', started, 'w4');
  await nextTurn();
  assert.deepEqual(started, ['w1', 'w2'], 'the cohort is closed after its turn: w3 and w4 wait');
  assert.equal(c.pending('a'), 4);
  c.leave('a');
  await nextTurn();
  assert.deepEqual(started, ['w1', 'w2'], 'w2 has not left yet');
  c.leave('a');
  await Promise.all([w3, w4]);
  assert.deepEqual(started, ['w1', 'w2', 'w3', 'w4'], 'the waiting writes start together');
  const w5 = enter(c, 'a', started, 'w5');
  assert.deepEqual(started, ['w1', 'w2', 'w3', 'w4', 'w5'], 'the new cohort is open for the rest of its turn');
  await w5;
  await nextTurn();
  const w6 = enter(c, 'a', started, 'w6');
  for (let i = 0; i < 3; i++) c.leave('a');
  await w6;
  assert.deepEqual(started.at(-1), 'w6');
  c.leave('a');
  assert.equal(c.pending('a'), 0);
});

test('another client does not wait for a busy one', async () => {
  const c = new WriteCohorts();
  assert.equal(c.enter('a'), undefined);
  await nextTurn();
  assert.notEqual(c.enter('a'), undefined, 'a is busy');
  assert.equal(c.enter('b'), undefined, 'b is not');
  c.leave('b');
  c.leave('a');
  c.leave('a');
  assert.equal(c.pending('a'), 0);
});

test('while busy, a client\'s cohorts start at most every spacingMs; when not, at once', async () => {
  let busy = true;
  const spacingMs = 40;
  const c = new WriteCohorts({ busy: () => busy, spacingMs });
  const t0 = performance.now();
  assert.equal(c.enter('a'), undefined, 'the first write of an idle client starts at once, busy or not');
  await nextTurn();
  const w2 = c.enter('a');
  assert.notEqual(w2, undefined);
  c.leave('a');
  await w2;
  const waited = performance.now() - t0;
  assert.ok(waited >= spacingMs - 1, `the next cohort waited for the spacing (${waited.toFixed(1)} ms)`);
  await nextTurn();
  c.leave('a');
  // Idle again, but within the spacing of the last start: a new write waits for it too.
  const t1 = performance.now();
  const w3 = c.enter('a');
  assert.notEqual(w3, undefined, 'within the spacing, even an idle client waits');
  await w3;
  assert.ok(performance.now() - t1 >= 1);
  await nextTurn();
  c.leave('a');
  // Not busy: a waiting cohort starts as soon as the running one leaves.
  busy = false;
  await new Promise((r) => setTimeout(r, spacingMs + 5));
  assert.equal(c.pending('a'), 0);
  assert.equal(c.enter('a'), undefined);
  await nextTurn();
  const w4 = c.enter('a');
  const t2 = performance.now();
  c.leave('a');
  await w4;
  assert.ok(performance.now() - t2 < spacingMs / 2, 'no spacing when not busy');
  await nextTurn();
  c.leave('a');
  assert.equal(c.pending('a'), 0);
});
