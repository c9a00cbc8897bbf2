// The generic thread hop (src/pool/): a store call goes to a piscina thread as its method's name
// and arguments, runs on the adapter there, and comes back as the adapter's value, or as the
// catalogued error it failed with. Against a real SQLite store in a temporary folder, compared
// with the same store opened directly on the same file.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { AuditRecord } from '../../../src/audit/record.ts';
import type { Change } from '../../../src/authz/changes.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { AppError } from '../../../src/errors/index.ts';
import { PooledStore } from '../../../src/pool/index.ts';
import { openStore, type StoreSettings } from '../../../src/store/index.ts';
import type { Store } from '../../../src/store/port.ts';
import { prepared } from '../../../src/store/sqlite/prepared.ts';
import { randomTenant } from '../../helpers/tenants.ts';
import { TenantGraph } from '../../../src/authz/graph.ts';
import { graphOfSnapshot } from '../../helpers/graphs.ts';

const T0 = Date.UTC(2030, 0, 1);

/** A database file of its own, the pool over it (one thread) and the store opened directly on it. */
function stores(t: TestContext): { settings: StoreSettings; pooled: PooledStore; direct: Store; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-hop-'));
  const path = join(dir, 'rbac.sqlite3');
  const settings: StoreSettings = { type: 'sqlite', sqlitePath: path };
  const pooled = new PooledStore(settings, 1);
  const direct = openStore(settings);
  t.after(async () => {
    await pooled.close();
    await direct.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { settings, pooled, direct, path };
}

const audit = (tenant: TenantId, action: string): AuditRecord => ({
  tenant,
  at: '2030-01-01T00:00:00.000000',
  action,
  resource: '/api/x',
  status: 201,
  credential: 'key:0123456789ab',
  requestId: 'r1',
  ip: '::1',
});

test('a store call reaches the adapter in a thread with its arguments, and answers what the adapter answers', async (t) => {
  const { pooled, direct } = stores(t);
  const tenant = randomTenant();
  const changes: Change[] = [
    { op: 'role.create', role: 'ops', description: 'Ops ✓' },
    { op: 'permission.grant', role: 'ops', permission: 'deploy' },
    { op: 'membership.add', role: 'ops', user: 'alice' },
    { op: 'membership.add', role: 'ops', user: 'bob' },
    { op: 'membership.add', role: 'nobody', user: 'carol' },
  ];
  const settled = await pooled.writeMany(
    changes.map((change) => ({
      tenant,
      changes: [change],
      audit: { action: change.op, resource: '/api/x', status: 201, credential: 'key:0123456789ab', requestId: 'r', ip: '::1' },
    })),
  );
  assert.deepEqual(
    settled.map((s) => s.ok && (s.value.ok ? s.value.revision : s.value.error.code)),
    [1, 2, 3, 4, 'ERR_AUTHZ_ROLE_NOT_FOUND'],
    'a refusal crosses as a value, not an error',
  );
  // Arguments: since 1, at most 2, of this tenant.
  assert.deepEqual(
    (await pooled.changes(tenant, 1, 2)).map((c) => c.revision),
    [2, 3],
  );
  assert.deepEqual(await pooled.changes(tenant, 1, 2), await direct.changes(tenant, 1, 2));
  assert.deepEqual(await pooled.load(tenant), await direct.load(tenant));
  // The graph built in the thread arrives as its buffers (copied when small): the same graph as packed here.
  const moved = TenantGraph.fromImage(await pooled.loadGraph(tenant));
  const here = graphOfSnapshot(await direct.load(tenant));
  assert.equal(moved.revision, here.revision);
  assert.equal(moved.estimatedBytes, here.estimatedBytes);
  assert.deepEqual(moved.members('ops'), ['alice', 'bob']);
  assert.deepEqual(moved.whichUsersCan('deploy'), here.whichUsersCan('deploy'));
  assert.equal(moved.description('ops'), 'Ops ✓');
  assert.equal(moved.check('alice', 'deploy'), true);
  assert.equal(moved.check('carol', 'deploy'), false);
  assert.deepEqual(await pooled.revisions([tenant, randomTenant()]), [[tenant, 4]]);
  assert.equal(await pooled.revision(tenant), 4);
  await pooled.appendAudit([audit(tenant, 'check')]);
  assert.deepEqual(await pooled.audit(tenant, undefined, 2), await direct.audit(tenant, undefined, 2));
  assert.equal((await direct.audit(tenant, undefined, 10)).length, 5, 'four writes and the row appended, in the database');

  await pooled.putSchedule(
    { tenant, workflow: 'deploy', intervalSeconds: 60, webhookUrl: null, webhookSecret: 'whsec_dGVzdA==' },
    T0,
    audit(tenant, 'workflow.schedule'),
  );
  assert.deepEqual(await direct.schedules(tenant), await pooled.schedules(tenant));
  assert.equal(await pooled.takeLease('thread', T0, 1000), true);
  assert.equal(await direct.takeLease('other', T0, 1000), false, 'the lease taken in the thread is in the database');
  const due = await pooled.dueSchedules(T0, 10);
  assert.deepEqual(due, [{ tenant, workflow: 'deploy' }]);
  const run = await pooled.runSchedule({ tenant, workflow: 'deploy' }, T0, 'msg_1');
  assert.deepEqual([run?.added, run?.usersCount], [['alice', 'bob'], 2]);
  assert.deepEqual(await pooled.runs(tenant, 'deploy', undefined, 10), await direct.runs(tenant, 'deploy', undefined, 10));
  assert.equal(await pooled.deleteSchedule(tenant, 'deploy', audit(tenant, 'workflow.unschedule')), true);
  assert.equal(await pooled.deleteSchedule(tenant, 'deploy', audit(tenant, 'workflow.unschedule')), false, 'a boolean answer crosses as it is');

  const secret = await pooled.cursorSecret();
  assert.ok(Buffer.isBuffer(secret), 'a byte string comes back a Buffer, as the port answers it');
  assert.deepEqual(secret, await direct.cursorSecret());
  assert.equal(await pooled.ping(), undefined);
});

test('a failure in the thread comes back as the catalogued AppError it was there: code, status, retryable and message', async (t) => {
  const { pooled, settings, path } = stores(t);
  const tenant = randomTenant();
  await pooled.writeMany([{ tenant, changes: [{ op: 'role.create', role: 'ops', description: '' }] }]);

  // The thread refuses to open a plaintext database with a key: every call fails with that.
  const keyed = new PooledStore({ ...settings, encryptionKey: 'another key' }, 1);
  t.after(() => keyed.close());
  const mismatch = await keyed.ping().then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(mismatch instanceof AppError, `an AppError: ${String(mismatch)}`);
  assert.deepEqual([mismatch.code, mismatch.status, mismatch.retryable], ['ERR_STORE_ENCRYPTION_MISMATCH', 500, false]);
  assert.match(mismatch.message, /holds plaintext data/);

  // A plain Error of the adapter is catalogued in the thread as ERR_INTERNAL, its message kept.
  const db = new Database(path);
  prepared(db, `DELETE FROM meta WHERE key = 'cursor_secret'`).run();
  db.close();
  const missing = await pooled.cursorSecret().then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(missing instanceof AppError, `an AppError: ${String(missing)}`);
  assert.deepEqual([missing.code, missing.status, missing.message], ['ERR_INTERNAL', 500, 'cursor secret missing from meta']);
});
