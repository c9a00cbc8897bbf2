import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./retained-bytes.child.ts', import.meta.url));

test('the cache estimate of a graph is the memory it retains, within 10% (built from a snapshot, from changes, and both)', () => {
  // A child with --expose-gc: the heap can only be measured after a full collection.
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  const rows = run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { label: string; estimate: number; retained: number });
  assert.equal(rows.length, 3);
  for (const { label, estimate, retained } of rows) {
    const ratio = estimate / retained;
    assert.ok(ratio > 0.9 && ratio < 1.1, `${label}: estimate ${estimate} B, retained ${retained} B (ratio ${ratio.toFixed(3)})`);
  }
});
