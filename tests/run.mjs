// Runs the test suite: an explicit list of files (a file that is not listed does not run, and a
// listed file that is missing fails the run), through node:test with the tsx loader.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const files = [
  'tests/unit/authz/graph.test.ts',
  'tests/e2e/config.test.ts',
  'tests/unit/imports.test.ts',
  'tests/integration/sqlite-store.test.ts',
  'tests/e2e/routes.test.ts',
  'tests/e2e/bad-input.test.ts',
  'tests/e2e/property.test.ts',
  'tests/e2e/durability.test.ts',
  'tests/e2e/cluster.test.ts',
];

const only = process.argv.slice(2);
const selected = only.length > 0 ? only : files;
const missing = selected.filter((f) => !existsSync(f));
if (missing.length > 0) {
  console.error(`missing test files: ${missing.join(', ')}`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...selected],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
