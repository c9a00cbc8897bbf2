/**
 * What only the PostgreSQL adapter has: its failures are catalogued, the transient ones say so (an
 * unreachable server, a lock held past statement_timeout, connections the server terminates), and
 * a client created by a transaction that commits late is still listed after the cursor taken
 * meanwhile. Skipped with a printed reason when the server is not reachable, failed instead under
 * AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { AppError } from '../../../src/errors/index.ts';
import { openStore, type StoreSettings } from '../../../src/store/index.ts';
import type { Store } from '../../../src/store/port.ts';
import { postgresSkipReason } from '../../helpers/postgres.ts';
import { freePort } from '../../helpers/server.ts';
import { postgresBackend, postgresUrlOf, writeOne } from '../../helpers/store-backends.ts';
import { randomTenant as tenant } from '../../helpers/tenants.ts';

const ROLE = { op: 'role.create', role: 'r', description: '' } as const;
import { isTransient } from '../../helpers/transient.ts';

describe('PostgreSQL only: failures are catalogued, transient ones say so', async () => {
  const skip = await postgresSkipReason();
  const backend = postgresBackend();
  after(() => backend.cleanup());
  const fresh = async (statementTimeoutMs = 10_000): Promise<{ settings: StoreSettings; store: Store; admin: pg.Client }> => {
    const settings = await backend.fresh();
    const url = postgresUrlOf(settings);
    const tuned: StoreSettings = { type: 'postgresql', postgresql: { url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs } };
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const store = openStore(tuned);
    after(async () => {
      await store.close();
      await admin.end();
    });
    return { settings: tuned, store, admin };
  };
  const expectTransient = (err: unknown): true => {
    assert.ok(err instanceof AppError, `an AppError, not ${String(err)}`);
    assert.equal(err.code, 'ERR_STORE_UNAVAILABLE');
    assert.equal(err.status, 503);
    assert.ok(isTransient(err) && isTransient({ code: err.code, message: err.message }));
    assert.doesNotMatch(err.message, /127\.0\.0\.1|ECONN|SELECT|UPDATE|postgres/i, 'no host, driver code or SQL');
    return true;
  };

  test('an unreachable server is ERR_STORE_UNAVAILABLE', { skip }, async () => {
    const port = await freePort();
    const store = openStore({
      type: 'postgresql',
      postgresql: { url: `postgresql://postgres@127.0.0.1:${port}/x`, poolMax: 1, connectTimeoutMs: 1000, statementTimeoutMs: 1000 },
    });
    after(() => store.close());
    await assert.rejects(store.load(tenant()), expectTransient);
    await assert.rejects(writeOne(store, tenant(), { op: 'role.create', role: 'r', description: '' }), expectTransient);
  });

  test('a lock held past statement_timeout fails the write transiently; nothing of it commits', { skip }, async () => {
    const { store, admin } = await fresh(300);
    const t = tenant();
    assert.equal((await writeOne(store, t, { op: 'role.create', role: 'r', description: '' })).revision, 1);
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM clients WHERE hash = $1 FOR UPDATE', [t]);
    // The lock is held until after this: without the statement timeout the write would wait for it (and the test time out).
    await assert.rejects(writeOne(store, t, { op: 'permission.grant', role: 'r', permission: 'p' }), expectTransient);
    await admin.query('ROLLBACK');
    assert.equal((await writeOne(store, t, { op: 'permission.grant', role: 'r', permission: 'p' })).revision, 2);
    assert.deepEqual(
      (await store.changes(t, 0, 10)).map((r) => r.revision),
      [1, 2],
    );
  });

  test('connections the server terminates fail transiently at worst, and the store recovers', { skip }, async () => {
    const { settings, store, admin } = await fresh();
    const t = tenant();
    await Promise.all([store.load(t), store.load(t), writeOne(store, t, { op: 'role.create', role: 'r', description: '' })]);
    const dbName = new URL(postgresUrlOf(settings)).pathname.slice(1);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName]);
    let answered = 0;
    for (let i = 0; i < 6 && answered < 2; i++) {
      try {
        assert.equal((await store.load(t)).revision, 1);
        answered++;
      } catch (err) {
        expectTransient(err);
      }
    }
    assert.equal(answered, 2, 'answers again after the dead connections are gone');
  });
});

describe('tenantsSince: postgresql, commit order', async () => {
  const backend = postgresBackend();
  const skip = await backend.skip();
  after(() => backend.cleanup());

  test('a creation that commits after a later one is still listed after the cursor that passed the later one', { skip }, async () => {
    const settings = await backend.fresh();
    const store = openStore(settings);
    const slow = new pg.Client({ connectionString: postgresUrlOf(settings) });
    try {
      await store.tenantsSince(undefined); // migrated
      const [early, late] = [tenant(), tenant()];
      await slow.connect();
      // `early` is created first, by a transaction that stays open…
      await slow.query('BEGIN');
      await slow.query('INSERT INTO clients (hash, revision) VALUES ($1, 1)', [early]);
      // …while `late` is created and committed.
      assert.ok((await writeOne(store, late, ROLE)).ok);
      const seen = await store.tenantsSince('0');
      assert.ok(seen.tenants.includes(late));
      assert.ok(!seen.tenants.includes(early), 'not committed yet');
      await slow.query('COMMIT');
      const next = await store.tenantsSince(seen.cursor);
      assert.ok(next.tenants.includes(early as TenantId), 'committed after the cursor was taken: listed from that cursor');
    } finally {
      await slow.end().catch(() => undefined);
      await store.close();
    }
  });
});
