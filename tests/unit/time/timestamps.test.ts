// Wire timestamps run on an injected clock: six fractional digits from the monotonic reading, the
// wall clock followed when it steps (NTP) once more than a second of monotonic time has passed,
// and the text and byte forms alike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TIMESTAMP_LENGTH, WireTimestamps } from '../../../src/time/index.ts';
import { ManualClock } from '../../helpers/clock.ts';

const START = Date.UTC(2030, 0, 1);

function timestamps(): { wire: WireTimestamps; clock: ManualClock; mono: { now: number } } {
  const clock = new ManualClock(START);
  const mono = { now: 5_000 };
  return { wire: new WireTimestamps(clock, () => mono.now), clock, mono };
}

test('a timestamp is the anchored wall time with six fractional digits, as text and as bytes', () => {
  const { wire, mono } = timestamps();
  assert.equal(wire.text(), '2030-01-01T00:00:00.000000');
  mono.now += 12.3456;
  assert.equal(wire.text(), '2030-01-01T00:00:00.012345');
  const bytes = new Uint8Array(TIMESTAMP_LENGTH + 2);
  wire.write(bytes, 1, mono.now + 0.001);
  assert.equal(Buffer.from(bytes.subarray(1, 1 + TIMESTAMP_LENGTH)).toString('latin1'), '2030-01-01T00:00:00.012346');
});

test('a step of the wall clock is followed once more than a second of monotonic time has passed', async () => {
  const { wire, clock, mono } = timestamps();
  await clock.advance(60_000); // the wall clock stepped a minute ahead; no monotonic time passed
  mono.now += 500;
  assert.equal(wire.text(), '2030-01-01T00:00:00.500000', 'within the second: still on the anchor');
  mono.now += 600;
  assert.equal(wire.text(), '2030-01-01T00:01:00.000000', 'then on the wall clock again');
});
