// Runs the test suite: an explicit list of files (a file that is not listed does not run, and a
// listed file that is missing fails the run), through node:test with the tsx loader.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { reportLeaks, scanLeaks } from './security/leaks.mjs';

// A test still running after this fails, so that a hang ends the run instead of holding it (and
// CI) open; the slowest tests take a few minutes on a loaded machine.
const TEST_TIMEOUT_MS = 15 * 60_000;

// The black-box contract of the routes (docs/api.md), by resource, and the bad input suites: the
// runs again on PostgreSQL and on node:http below take every part of them.
const routeContract = [
  'tests/contract/meta.test.ts',
  'tests/contract/clients.test.ts',
  'tests/contract/roles.test.ts',
  'tests/contract/permissions.test.ts',
  'tests/contract/users.test.ts',
  'tests/contract/checks.test.ts',
  'tests/contract/lists.test.ts',
  'tests/contract/names.test.ts',
  'tests/contract/windows.test.ts',
  'tests/contract/batches.test.ts',
  'tests/contract/dry-run.test.ts',
  'tests/contract/preconditions.test.ts',
  'tests/contract/export-import.test.ts',
];
const badInput = ['tests/contract/bad-names.test.ts', 'tests/contract/bad-bodies.test.ts', 'tests/contract/bad-queries.test.ts'];

// Multi-process mode, by topic (tests/cluster/): the run again on node:http takes every part.
const clusterModes = [
  'tests/cluster/consistency.test.ts',
  'tests/cluster/worker-failure.test.ts',
  'tests/cluster/shutdown.test.ts',
  'tests/cluster/change-feed.test.ts',
];

const files = [
  'tests/unit/authz/graph.test.ts',
  'tests/unit/authz/windows.test.ts',
  'tests/unit/authz/write-rules.test.ts',
  'tests/unit/authz/preview.test.ts',
  'tests/unit/authz/resources.test.ts',
  'tests/unit/authz/holders.test.ts',
  'tests/unit/authz/compact-graph.test.ts',
  'tests/unit/authz/estimate.test.ts',
  'tests/unit/authz/names.test.ts',
  'tests/unit/authz/grouped-memberships.test.ts',
  'tests/unit/errors/catalogue.test.ts',
  'tests/unit/time/timestamps.test.ts',
  'tests/unit/time/instant.test.ts',
  'tests/unit/config/load.test.ts',
  'tests/unit/config/cpus.test.ts',
  'tests/unit/http/router.test.ts',
  'tests/unit/http/openapi.test.ts',
  'tests/unit/http/credentials.test.ts',
  'tests/unit/http/revoked-tokens.test.ts',
  'tests/unit/http/path-names.test.ts',
  'tests/unit/http/reply.test.ts',
  'tests/unit/http/name-json.test.ts',
  'tests/unit/http/window.test.ts',
  'tests/unit/http/writes.test.ts',
  'tests/unit/http/if-match.test.ts',
  'tests/unit/http/change-schemas.test.ts',
  'tests/unit/client/generated-types.test.ts',
  'tests/unit/log/logger.test.ts',
  'tests/regressions/credentials-lru.test.ts',
  'tests/regressions/exit-before-disconnect.test.ts',
  'tests/regressions/raw-answer-bytes.test.ts',
  'tests/regressions/authzen-unknown-client-cache-hit.test.ts',
  'tests/regressions/write-without-hydration.test.ts',
  'tests/unit/cache/reorder.test.ts',
  'tests/unit/cache/client-index.test.ts',
  'tests/ops/config.test.ts',
  'tests/ops/engine.test.ts',
  'tests/ops/start.test.ts',
  'tests/ops/deploy.test.ts',
  'tests/ops/deploy-ops.test.ts',
  'tests/ops/deploy-kubernetes.test.ts',
  'tests/ops/deploy-compose.test.ts',
  'tests/ops/cli.test.ts',
  'tests/ops/cli-transfer.test.ts',
  'tests/ops/backup-restore.test.ts',
  'tests/unit/imports.test.ts',
  'tests/unit/trace/tracer.test.ts',
  'tests/unit/run-list.test.ts',
  'tests/unit/store/transient.test.ts',
  'tests/unit/store/delegating.test.ts',
  'tests/unit/worker/write-pipeline.test.ts',
  'tests/unit/worker/ipc.test.ts',
  'tests/unit/primary/hub.test.ts',
  'tests/unit/primary/supervisor.test.ts',
  'tests/unit/invalidation/ipc.test.ts',
  'tests/integration/store/conformance.test.ts',
  'tests/integration/store/sqlite-only.test.ts',
  'tests/integration/store/postgres-only.test.ts',
  'tests/integration/store/upgrade.test.ts',
  ...routeContract,
  ...badInput,
  'tests/features/property.test.ts',
  'tests/features/property-windows.test.ts',
  'tests/features/boundaries.test.ts',
  'tests/ops/bench.test.ts',
  'tests/ops/bench-clients.test.ts',
  'tests/cluster/durability.test.ts',
  ...clusterModes,
  'tests/unit/store/resilience.test.ts',
  'tests/cluster/instances.test.ts',
  'tests/cluster/token-revocation.test.ts',
  'tests/cluster/boundaries-instances.test.ts',
  'tests/cluster/haproxy.test.ts',
  'tests/features/unknown-clients.test.ts',
  'tests/features/client-timed.test.ts',
  'tests/cluster/outage.test.ts',
  'tests/ops/operations.test.ts',
  'tests/ops/pretty-logs.test.ts',
  'tests/ops/traces.test.ts',
  'tests/ops/metrics.test.ts',
  'tests/ops/prometheus.test.ts',
  'tests/unit/metrics/retained.test.ts',
  'tests/unit/crypto/field-cipher.test.ts',
  'tests/unit/workflow/webhook.test.ts',
  'tests/unit/workflow/allowed-hosts.test.ts',
  'tests/unit/workflow/scheduler.test.ts',
  'tests/unit/pool/hop.test.ts',
  'tests/features/tokens.test.ts',
  'tests/features/token-scopes.test.ts',
  'tests/features/token-secrets.test.ts',
  'tests/features/token-rotation.test.ts',
  'tests/features/token-revocation.test.ts',
  'tests/features/audit.test.ts',
  'tests/features/audit-retention.test.ts',
  'tests/regressions/audit-order.test.ts',
  'tests/features/workflows.test.ts',
  'tests/features/workflow-runs.test.ts',
  'tests/features/workflow-webhooks.test.ts',
  'tests/features/workflow-instances.test.ts',
  'tests/features/encryption.test.ts',
  'tests/features/key-rotation.test.ts',
  'tests/security/transport.test.ts',
  'tests/security/cors-browser.test.ts',
  'tests/features/console.test.ts',
  'tests/features/console-scale.test.ts',
  'tests/security/fuzz.test.ts',
  'tests/features/authzen-search.test.ts',
  'tests/features/authzen-rules.test.ts',
  'tests/features/authzen-interop.test.ts',
  'tests/features/client-package.test.ts',
  'tests/features/openapi-sdk.test.ts',
];

// Run a second time with every server on its own fresh PostgreSQL database: the black-box HTTP
// suite must hold whatever the store. Skipped (said so) when PostgreSQL is not reachable, failed
// instead under AUTH_TEST_REQUIRE_SERVICES=1. One file on PostgreSQL by hand:
// AUTH_TEST_DATABASE=postgresql node tests/run.mjs tests/contract/meta.test.ts
const onPostgres = [
  ...routeContract,
  ...badInput,
  'tests/features/property-windows.test.ts',
  'tests/features/authzen-rules.test.ts',
  'tests/features/authzen-search.test.ts',
  'tests/features/authzen-interop.test.ts',
];

// And again on the other HTTP engine: the default here (`auto`) is uWebSockets.js where its
// native build loads; these suites then run on node:http, so that any difference between the
// engines is a failing test. One file on one engine by hand:
// AUTH_TEST_HTTP_ENGINE=node node tests/run.mjs tests/contract/meta.test.ts
const onOtherEngine = [
  ...routeContract,
  ...badInput,
  'tests/features/property-windows.test.ts',
  ...clusterModes,
  'tests/cluster/durability.test.ts',
  'tests/ops/start.test.ts',
  'tests/features/authzen-rules.test.ts',
  'tests/features/authzen-search.test.ts',
  'tests/features/authzen-interop.test.ts',
];

// Every test file is listed above: one that is not would never run, silently. And every listed
// file exists. `node tests/run.mjs --check-list` checks only that (tests/unit/run-list.test.ts);
// the files named after the flag count as present too, so that the check can be seen to fail.
const checkOnly = process.argv[2] === '--check-list';
const args = process.argv.slice(checkOnly ? 3 : 2);
const onDisk = [
  ...readdirSync('tests', { recursive: true, encoding: 'utf8' }).map((f) => `tests/${f.split(sep).join('/')}`),
  ...(checkOnly ? args : []),
].filter((f) => f.endsWith('.test.ts'));
const unlisted = onDisk.filter((f) => !files.includes(f));
if (unlisted.length > 0) {
  console.error(`test files missing from the list in tests/run.mjs: ${unlisted.join(', ')}`);
  process.exit(1);
}

const only = checkOnly ? [] : args;
const selected = only.length > 0 ? only : files;
const missing = [...selected, ...onPostgres, ...onOtherEngine].filter((f) => !existsSync(f));
if (missing.length > 0) {
  console.error(`missing test files: ${missing.join(', ')}`);
  process.exit(1);
}
const notInTheList = [...onPostgres, ...onOtherEngine].filter((f) => !files.includes(f));
if (notInTheList.length > 0) {
  console.error(`files run again on PostgreSQL or node:http but not in the list: ${notInTheList.join(', ')}`);
  process.exit(1);
}
if (checkOnly) {
  console.log(`${files.length} test files, all listed and present`);
  process.exit(0);
}

function run(list, env = {}) {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-reporter=spec', ...list],
    {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    },
  );
  return result.status ?? 1;
}

/** Undefined when something listens at the test PostgreSQL's address, else why not. */
function postgresUnreachable() {
  const url = new URL(process.env.AUTH_TEST_POSTGRESQL_URL ?? 'postgresql://postgres@127.0.0.1:5432/test');
  const where = `${url.hostname}:${url.port || 5432}`;
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port || 5432) });
    const done = (reason) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(3000, () => done(`PostgreSQL is not reachable at ${where} (timeout)`));
    socket.on('connect', () => done(undefined));
    socket.on('error', (err) => done(`PostgreSQL is not reachable at ${where} (${err.code ?? err.message})`));
  });
}

// Every server the tests start saves its output here, with the secrets it was given
// (tests/helpers/leak-record.ts), for the leak scan after the last run. A folder given in
// RBAC_TEST_OUTPUT_DIR is used and kept; the run's own is removed unless the scan finds a leak.
const givenOutputDir = process.env.RBAC_TEST_OUTPUT_DIR;
const outputDir = givenOutputDir || mkdtempSync(join(tmpdir(), 'rbac-test-output-'));
mkdirSync(outputDir, { recursive: true });
process.env.RBAC_TEST_OUTPUT_DIR = outputDir;

// The servers the tests start run the compiled service (support/launcher.ts TEST_ENTRY):
// built here once, instead of tsx compiling src/ in every server process the suites start.
if (process.env.AUTH_TEST_ENTRY === undefined) {
  // The TypeScript half of `npm run build` (no npm needed: the Debian 13 root has node alone); the
  // console's bundle is built by its tests.
  const built = spawnSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (built.status !== 0) {
    console.error('tsc -p tsconfig.build.json failed: the servers the tests start run its output');
    process.exit(1);
  }
  chmodSync(join('dist', 'cli', 'main.js'), 0o755); // the package bin, as `npm run build` leaves it
  process.env.AUTH_TEST_ENTRY = 'dist/main.js';
}
console.log(`# servers run ${process.env.AUTH_TEST_ENTRY}`);

let status = run(selected);
if (only.length === 0 && process.env.AUTH_TEST_HTTP_ENGINE === undefined) {
  console.log(`\n# the HTTP suites again, on node:http: ${onOtherEngine.join(' ')}\n`);
  status = run(onOtherEngine, { AUTH_TEST_HTTP_ENGINE: 'node' }) || status;
}
if (only.length === 0) {
  const reason = await postgresUnreachable();
  if (reason === undefined) {
    console.log(`\n# the HTTP suite again, on PostgreSQL: ${onPostgres.join(' ')}\n`);
    status = run(onPostgres, { AUTH_TEST_DATABASE: 'postgresql' }) || status;
  } else if (process.env.AUTH_TEST_REQUIRE_SERVICES === '1') {
    console.error(`${reason} (AUTH_TEST_REQUIRE_SERVICES=1): the PostgreSQL run fails`);
    status = 1;
  } else {
    console.log(`skipped: the HTTP suite on PostgreSQL: ${reason}`);
  }
}

// The leak scan: no server output of this run holds a key, token or secret (docs/operations.md §1, docs/api.md §3).
console.log(`\n# leak scan of the servers' output: ${outputDir}\n`);
let leakStatus;
try {
  leakStatus = reportLeaks(scanLeaks(outputDir));
} catch (err) {
  console.error(`leak scan failed: ${err instanceof Error ? err.message : String(err)}`);
  leakStatus = 1;
}
if (leakStatus === 0 && !givenOutputDir) rmSync(outputDir, { recursive: true, force: true });
else if (leakStatus !== 0) console.error(`(outputs kept in ${outputDir})`);
status = leakStatus || status;
process.exit(status);
