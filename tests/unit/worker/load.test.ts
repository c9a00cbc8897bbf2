// The worker's load gauge: write cohorts are spaced only while checks keep the event loop busy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checksBusy, loadGauge } from '../../../src/worker/load.ts';

test('busy with checks: the loop works more than half the time and reads outnumber writes ten to one', () => {
  assert.equal(checksBusy({ utilisation: 0.7, reads: 5_000, writes: 40 }), true, 'a check load with a few writes');
  assert.equal(checksBusy({ utilisation: 0.7, reads: 5_000, writes: 0 }), true, 'checks alone');
  assert.equal(checksBusy({ utilisation: 0.3, reads: 5_000, writes: 40 }), false, 'a loop idle most of the time');
  assert.equal(checksBusy({ utilisation: 0.9, reads: 400, writes: 200 }), false, 'a loop kept busy by writes');
  assert.equal(checksBusy({ utilisation: 0.9, reads: 2_000, writes: 200 }), true, 'ten reads per write is still checks');
});

test('the gauge judges each period from the loop and the counters', async () => {
  let reads = 0;
  let writes = 0;
  const gauge = loadGauge({ reads: () => reads, writes: () => writes }, 20);
  try {
    assert.equal(gauge.checksBusy, false, 'nothing judged yet');
    // Keep the loop busy for a few periods while reads pile up: busy with checks.
    const until = performance.now() + 120;
    while (performance.now() < until) {
      reads += 100;
      await new Promise((r) => setImmediate(r));
      const spin = performance.now() + 2;
      while (performance.now() < spin);
    }
    assert.equal(gauge.checksBusy, true, 'a busy loop serving reads');
    // The same busy loop serving as many writes as reads: not a check load.
    const until2 = performance.now() + 120;
    while (performance.now() < until2) {
      reads += 100;
      writes += 100;
      await new Promise((r) => setImmediate(r));
      const spin = performance.now() + 2;
      while (performance.now() < spin);
    }
    assert.equal(gauge.checksBusy, false, 'a busy loop serving writes');
    // Idle: not busy, whatever the counters say.
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(gauge.checksBusy, false, 'an idle loop');
  } finally {
    gauge.stop();
  }
});
