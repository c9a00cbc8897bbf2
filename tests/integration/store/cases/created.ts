/**
 * `tenantsSince`, the query behind the client index (loaded at start, then the clients created
 * since, every revalidation period), on SQLite and PostgreSQL alike: every tenant that wrote is
 * in the first answer, every tenant created later is in a later one, whatever order the
 * creating transactions commit in.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import { openStore, type StoreSettings } from '../../../../src/store/index.ts';
import type { Store } from '../../../../src/store/port.ts';
import { postgresBackend, postgresUrlOf, sqliteBackend, writeOne, type StoreBackend } from '../../../helpers/store-backends.ts';
import { randomTenant } from '../../../helpers/tenants.ts';

const ROLE = { op: 'role.create', role: 'r', description: '' } as const;

function created(backend: StoreBackend): void {
  describe(`tenantsSince: ${backend.name}`, async () => {
    const skip = await backend.skip();
    let settings: StoreSettings;
    let store: Store;
    before(async () => {
      if (skip !== false) return;
      settings = await backend.fresh();
      store = openStore(settings);
    });
    after(async () => {
      if (skip !== false) return;
      await store.close();
      await backend.cleanup();
    });
    const it = (name: string, fn: () => Promise<void>): void => void test(name, { skip }, fn);

    it('lists every tenant that wrote, then those created after the cursor; a deleted-down tenant stays', async () => {
      const empty = await store.tenantsSince(undefined);
      assert.deepEqual(empty.tenants, []);
      const [a, b, c] = [randomTenant(), randomTenant(), randomTenant()];
      for (const t of [a, b]) assert.ok((await writeOne(store, t, ROLE)).ok);
      assert.ok((await writeOne(store, a, { op: 'role.delete', role: 'r' })).ok, 'a is deleted down to nothing');
      const first = await store.tenantsSince(undefined);
      assert.deepEqual(new Set(first.tenants), new Set([a, b]));
      const again = await store.tenantsSince(empty.cursor);
      assert.deepEqual(new Set(again.tenants), new Set([a, b]), 'from the empty database\'s cursor: both');
      const none = await store.tenantsSince(first.cursor);
      assert.ok(!none.tenants.includes(c));
      assert.ok((await writeOne(store, c, ROLE)).ok);
      const later = await store.tenantsSince(none.cursor);
      assert.ok(later.tenants.includes(c), 'the tenant created after the cursor is listed');
      // Older ones may come again (on PostgreSQL while any older transaction of the server runs):
      // the port allows it, the index adds a tenant once. SQLite's cursor is exact.
      if (backend.name === 'sqlite') assert.deepEqual(later.tenants, [c]);
    });

    it('a tenant that never wrote is not listed', async () => {
      const t = randomTenant();
      await store.load(t);
      await store.revision(t);
      assert.ok(!(await store.tenantsSince(undefined)).tenants.includes(t));
    });
  });
}

created(sqliteBackend());
created(postgresBackend());

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
      const [early, late] = [randomTenant(), randomTenant()];
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
