/**
 * Migration 7 on a database written before it (docs/api.md §12): edges stay permanent, changelog
 * rows keep their revisions as the first row of each, and writes of many changes, windows and
 * boundaries work on the upgraded schema. On SQLite (whose changelog is copied into a new table)
 * and PostgreSQL (whose key is changed in place); PostgreSQL skips with a printed reason when the
 * server is not reachable.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { MIGRATIONS } from '../../../src/store/migrations.ts';
import { openStore, type StoreSettings } from '../../../src/store/index.ts';
import type { Store } from '../../../src/store/port.ts';
import { prepared } from '../../../src/store/sqlite/prepared.ts';
import { createTestDatabase, postgresSkipReason } from '../../helpers/postgres.ts';
import { tempDir } from '../../helpers/server.ts';
import { randomTenant } from '../../helpers/tenants.ts';

const BEFORE = MIGRATIONS.filter((m) => m.version <= 6);
const T = randomTenant();
const AT = '2026-01-01T00:00:00.000000';

/** The rows a version-6 database holds: a role with a grant and a member, three changelog rows. */
const DATA = [
  `INSERT INTO clients (hash, revision) VALUES ('${T}', 3)`,
  `INSERT INTO roles (client_id, role, description) SELECT id, 'r', ${'$DESC'} FROM clients`,
  `INSERT INTO grants (client_id, role, permission) SELECT id, 'r', 'p' FROM clients`,
  `INSERT INTO memberships (client_id, role, "user") SELECT id, 'r', 'u' FROM clients`,
  `INSERT INTO changelog (client_id, revision, op, role, description, at) SELECT id, 1, 'role.create', 'r', ${'$DESC'}, '${AT}' FROM clients`,
  `INSERT INTO changelog (client_id, revision, op, role, permission, at) SELECT id, 2, 'permission.grant', 'r', 'p', '${AT}' FROM clients`,
  `INSERT INTO changelog (client_id, revision, op, role, "user", at) SELECT id, 3, 'membership.add', 'r', 'u', '${AT}' FROM clients`,
];

async function checkUpgraded(store: Store): Promise<void> {
  const snap = await store.load(T);
  assert.deepEqual(snap, { revision: 3, roles: [['r', 'old']], grants: [['r', 'p']], memberships: [['u', 'r']], windows: [] });
  assert.deepEqual(
    (await store.changes(T, 0, 10)).map((r) => [r.revision, r.change]),
    [
      [1, { op: 'role.create', role: 'r', description: 'old' }],
      [2, { op: 'permission.grant', role: 'r', permission: 'p' }],
      [3, { op: 'membership.add', user: 'u', role: 'r' }],
    ],
  );
  const expiresAt = Date.now() * 1000 + 3_600_000_000;
  const [settled] = await store.writeMany([
    {
      tenant: T,
      changes: [
        { op: 'permission.window', role: 'r', permission: 'p', expiresAt },
        { op: 'membership.add', user: 'v', role: 'r' },
      ],
    },
  ]);
  assert.ok(settled?.ok && settled.value.ok && settled.value.revision === 4);
  assert.deepEqual(
    (await store.changes(T, 3, 10)).map((r) => r.change.op),
    ['permission.window', 'membership.add'],
  );
  assert.deepEqual(
    (await store.commitBoundaries(expiresAt, 10)).map((b) => [b.revision, b.change.op]),
    [[5, 'permission.expire']],
  );
}

describe('migration 7 on a version-6 database', () => {
  test('SQLite', async () => {
    const dir = tempDir('rbac-upgrade-');
    after(() => dir.cleanup());
    const path = join(dir.dir, 'rbac.sqlite3');
    const db = new Database(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
    for (const m of BEFORE) {
      for (const sql of m.sqlite) db.exec(sql);
      prepared(db, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, AT);
    }
    for (const sql of DATA) db.exec(sql.replaceAll('$DESC', `'old'`));
    db.close();
    const store = openStore({ type: 'sqlite', sqlitePath: path });
    try {
      await checkUpgraded(store);
    } finally {
      await store.close();
    }
  });

  test('PostgreSQL', async (t) => {
    const skip = await postgresSkipReason();
    if (skip !== false) return t.skip(skip);
    const made = await createTestDatabase();
    after(() => made.drop());
    const c = new pg.Client({ connectionString: made.url });
    await c.connect();
    try {
      await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      for (const m of BEFORE) {
        for (const sql of m.postgresql) await c.query(sql);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, AT]);
      }
      for (const sql of DATA) await c.query(sql.replaceAll('$DESC', `convert_to('old', 'UTF8')`));
    } finally {
      await c.end();
    }
    const settings: StoreSettings = { type: 'postgresql', postgresql: { url: made.url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs: 10_000 } };
    const store = openStore(settings);
    try {
      await checkUpgraded(store);
    } finally {
      await store.close();
    }
  });
});
