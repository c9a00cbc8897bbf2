/**
 * What only the SQLite adapter has: a file (and its folders) created in WAL mode, and a batch that
 * is one transaction in which a write that throws is undone alone.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import type { Change } from '../../../src/authz/changes.ts';
import { openStore } from '../../../src/store/index.ts';
import { sqliteBackend, sqlitePathOf, writeOne } from '../../helpers/store-backends.ts';
import { randomTenant as tenant } from '../../helpers/tenants.ts';

describe('SQLite only', () => {
  test('the file and its folders are created, in WAL mode', async (t) => {
    const backend = sqliteBackend();
    t.after(() => backend.cleanup());
    const s = await backend.fresh();
    const store = openStore(s);
    await writeOne(store, tenant(), { op: 'role.create', role: 'r', description: '' });
    await store.close();
    const db = new Database(sqlitePathOf(s), { readonly: true });
    t.after(() => db.close());
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  });

  test('a batch is one transaction, yet a write that throws in it is undone alone', async (t) => {
    const backend = sqliteBackend();
    t.after(() => backend.cleanup());
    const store = openStore(await backend.fresh());
    t.after(() => store.close());
    const a = tenant();
    // A role that is not a string cannot be bound: the statement throws inside the batch.
    const bad = { op: 'role.create', role: { not: 'a string' }, description: '' } as unknown as Change;
    const settled = await store.writeMany([
      { tenant: a, changes: [{ op: 'role.create', role: 'r', description: '' }] },
      { tenant: a, changes: [bad] },
      { tenant: a, changes: [{ op: 'permission.grant', role: 'r', permission: 'p' }] },
    ]);
    assert.deepEqual(
      settled.map((s) => s.ok && s.value.ok && s.value.revision),
      [1, false, 2],
    );
    const failed = settled[1];
    assert.ok(failed !== undefined && !failed.ok && failed.error.code === 'ERR_INTERNAL', JSON.stringify(failed));
    assert.deepEqual(
      (await store.changes(a, 0, 10)).map((c) => c.change.op),
      ['role.create', 'permission.grant'],
    );
    assert.deepEqual(await store.load(a), { revision: 2, roles: [['r', '']], grants: [['r', 'p']], memberships: [], windows: [] });
  });
});
