/**
 * One set of cases for every store adapter (DESIGN.md, "one store conformance suite"): SQLite and
 * PostgreSQL must give the same outcomes, revisions and changelog for the same writes, keep them
 * right under concurrency from several stores and processes, record audit rows and workflow runs
 * alike and list the clients created since a cursor. The cases are in cases/, one file per topic;
 * this runner runs every topic on each adapter. What only one adapter has is in sqlite-only and
 * postgres-only. PostgreSQL cases skip with a printed reason when the server is not reachable,
 * and fail instead under AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { postgresBackend, sqliteBackend } from '../../helpers/store-backends.ts';
import { storeTopic, type Topic } from '../../helpers/store-suite.ts';
import { auditCases } from './cases/audit.ts';
import { createdCases } from './cases/created.ts';
import { databasesCases } from './cases/databases.ts';
import { workflowCases } from './cases/workflow.ts';
import { outcomes, writesCases } from './cases/writes.ts';
import { windowsCases } from './cases/windows.ts';
import { tokensCases } from './cases/tokens.ts';

const TOPICS: readonly Topic[] = [
  { title: 'writes and the changelog', cases: writesCases },
  { title: 'databases: reopening, migrations, concurrent stores and processes', cases: databasesCases },
  { title: 'audit rows and field encryption', cases: auditCases },
  { title: 'workflow schedules and runs', cases: workflowCases },
  { title: 'tenantsSince', cases: createdCases },
  { title: 'write requests, If-Match, windows and their boundaries', cases: windowsCases },
  { title: 'issued tokens and their revocation', cases: tokensCases },
];

for (const backend of [sqliteBackend(), postgresBackend()]) {
  describe(`store conformance: ${backend.name}`, async () => {
    const skip = await backend.skip();
    after(() => backend.cleanup());
    for (const topic of TOPICS) storeTopic(backend, skip, topic);
  });
}

test('SQLite and PostgreSQL answer the same script with the same outcomes', (t) => {
  const [sqlite, postgres] = [outcomes.get('sqlite'), outcomes.get('postgresql')];
  if (sqlite === undefined || postgres === undefined) return t.skip('one backend did not run');
  assert.deepEqual(postgres, sqlite);
});
