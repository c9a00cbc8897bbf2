/**
 * The runner's explicit list (tests/run.mjs) is complete: a *.test.ts file it does not name would
 * never run, and nothing would say so. `--check-list` compares the list with the files on disk;
 * naming a file after it counts that file as present, which shows the check can fail.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../../support/launcher.ts';

function checkList(...pretend: string[]): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, ['tests/run.mjs', '--check-list', ...pretend], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test('every *.test.ts file under tests/ is in the list of tests/run.mjs, and every listed file exists', () => {
  const r = checkList();
  assert.equal(r.status, 0, r.output);
});

test('a *.test.ts file missing from the list fails the check, named', () => {
  const r = checkList('tests/unit/not-in-the-list.test.ts');
  assert.equal(r.status, 1, r.output);
  assert.match(r.output, /tests\/unit\/not-in-the-list\.test\.ts/);
});
