import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/index.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { ROOT, tempDir } from '../helpers/server.ts';

const T = 'a'.repeat(64);

test('a write commits the change, revision + 1 and a changelog row together; refusals change nothing', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const store = new SqliteStore(join(dir, 'db.sqlite3'));
  t.after(() => store.close());

  assert.deepEqual(await store.load(T), { revision: 0, roles: [], grants: [], memberships: [] });
  const missing = await store.write(T, { op: 'permission.grant', role: 'admin', permission: 'read' });
  assert.equal(missing.ok, false);
  assert.equal(missing.revision, 0);

  assert.equal((await store.write(T, { op: 'role.create', role: 'admin', description: 'A' })).revision, 1);
  assert.equal((await store.write(T, { op: 'permission.grant', role: 'admin', permission: 'read' })).revision, 2);
  assert.equal((await store.write(T, { op: 'membership.add', user: 'alice', role: 'admin' })).revision, 3);
  const dup = await store.write(T, { op: 'membership.add', user: 'alice', role: 'admin' });
  assert.deepEqual(dup.ok ? undefined : dup.error.code, 'ERR_AUTHZ_MEMBERSHIP_EXISTS');
  assert.equal(dup.revision, 3);
  assert.equal(await store.revision(T), 3);

  const del = await store.write(T, { op: 'role.delete', role: 'admin' });
  assert.ok(del.ok);
  assert.equal(del.revision, 4);
  assert.equal(del.permissionsRemoved, 1);
  assert.equal(del.membershipsRemoved, 1);
  assert.deepEqual(await store.load(T), { revision: 4, roles: [], grants: [], memberships: [] });

  const db = new Database(join(dir, 'db.sqlite3'), { readonly: true });
  t.after(() => db.close());
  const log = db.prepare('SELECT revision, op FROM changelog ORDER BY revision').all();
  assert.deepEqual(log, [
    { revision: 1, op: 'role.create' },
    { revision: 2, op: 'permission.grant' },
    { revision: 3, op: 'membership.add' },
    { revision: 4, op: 'role.delete' },
  ]);
});

test('tenants are isolated in the store', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const store = new SqliteStore(join(dir, 'db.sqlite3'));
  t.after(() => store.close());
  const other = 'b'.repeat(64);
  await store.write(T, { op: 'role.create', role: 'admin', description: '' });
  const refused = await store.write(other, { op: 'role.delete', role: 'admin' });
  assert.equal(refused.ok, false);
  assert.equal((await store.load(other)).roles.length, 0);
  assert.equal((await store.load(T)).roles.length, 1);
});

test('processes starting together on a new file apply each migration once', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const file = join(dir, 'nested', 'db.sqlite3');
  const script = `import { SqliteStore } from './src/store/sqlite/index.ts';
    const s = new SqliteStore(process.argv[1]);
    await s.write('c'.repeat(64), { op: 'role.create', role: 'r' + process.pid, description: '' });
    await s.close();`;
  const runs = Array.from({ length: 4 }, () =>
    new Promise<number | null>((resolve) => {
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, file], { cwd: ROOT, stdio: 'inherit' });
      p.on('exit', resolve);
    }),
  );
  assert.deepEqual(await Promise.all(runs), [0, 0, 0, 0]);
  const db = new Database(file, { readonly: true });
  t.after(() => db.close());
  const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
  assert.deepEqual(versions, MIGRATIONS.map((m) => m.version));
  assert.equal(db.prepare('SELECT revision FROM clients').pluck().get(), 4);
  assert.equal(db.prepare('SELECT count(*) FROM changelog').pluck().get(), 4);
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
});

test('reopening keeps the data and the cursor secret', async (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  const file = join(dir, 'db.sqlite3');
  const a = new SqliteStore(file);
  await a.write(T, { op: 'role.create', role: 'admin', description: 'kept' });
  const secret = await a.cursorSecret();
  await a.close();
  const b = new SqliteStore(file);
  t.after(() => b.close());
  assert.deepEqual((await b.load(T)).roles, [['admin', 'kept']]);
  assert.deepEqual(await b.cursorSecret(), secret);
  assert.equal(secret.length, 32);
});
