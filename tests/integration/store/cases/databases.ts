/**
 * Databases at the store port: reopening keeps the data and the cursor secret; stores and
 * processes starting together on a new database apply each migration once; concurrent writers
 * on several stores get unique, gapless revisions.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { openStore } from '../../../../src/store/index.ts';
import { MIGRATIONS } from '../../../../src/store/migrations.ts';
import { ROOT } from '../../../helpers/server.ts';
import { writeOne } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant as tenant } from '../../../helpers/tenants.ts';

export function databasesCases(topic: StoreTopic): void {
  const { backend, it, open } = topic;

  it('reopening keeps the data and the cursor secret; another database has another secret', async () => {
    const s = await backend.fresh();
    const a = openStore(s);
    const t = tenant();
    await writeOne(a, t, { op: 'role.create', role: 'admin', description: 'kept' });
    const secret = await a.cursorSecret();
    await a.close();
    const b = open(s);
    assert.deepEqual(await b.cursorSecret(), secret);
    assert.equal(secret.length, 32);
    assert.deepEqual((await b.load(t)).roles, [['admin', 'kept']]);
    assert.notDeepEqual(await topic.store.cursorSecret(), secret);
  });

  it('stores opening one new database together apply each migration once', async () => {
    const s = await backend.fresh();
    const stores = Array.from({ length: 4 }, () => open(s));
    const secrets = await Promise.all(stores.map((st) => st.cursorSecret()));
    for (const x of secrets) assert.deepEqual(x, secrets[0]);
    assert.deepEqual(
      await backend.versions(s),
      MIGRATIONS.map((m) => m.version),
    );
    assert.deepEqual(await Promise.all(stores.map((st) => st.revision(tenant()))), [0, 0, 0, 0]);
  });

  it('concurrent writers on several stores get unique, gapless revisions', async () => {
    const t = tenant();
    const stores = [topic.store, ...Array.from({ length: 3 }, () => open())];
    const writes = stores.flatMap((st, i) => [
      ...Array.from({ length: 25 }, (_, j) => writeOne(st, t, { op: 'role.create', role: `s${i}r${j}`, description: '' })),
      writeOne(st, t, { op: 'role.create', role: 'contested', description: `from ${i}` }),
    ]);
    const results = await Promise.all(writes);
    const committed = results.filter((r) => r.ok);
    assert.equal(committed.length, 101, 'every distinct role once, the contested one once');
    for (const r of results) if (!r.ok) assert.equal(r.error.code, 'ERR_AUTHZ_ROLE_EXISTS');
    assert.deepEqual(
      committed.map((r) => r.revision).sort((x, y) => x - y),
      Array.from({ length: 101 }, (_, i) => i + 1),
    );
    const log = await topic.store.changes(t, 0, 1000);
    assert.deepEqual(
      log.map((r) => r.revision),
      Array.from({ length: 101 }, (_, i) => i + 1),
    );
    for (const r of committed) assert.deepEqual(log[r.revision - 1]?.change, r.changes[0], `revision ${r.revision} is the write that got it`);
    const snap = await topic.store.load(t);
    assert.equal(snap.revision, 101);
    assert.equal(snap.roles.length, 101);
  });

  it('processes starting together on a new database migrate once and write gaplessly', async () => {
    const s = await backend.fresh();
    const t = tenant();
    const script = `import { openStore } from './src/store/index.ts';
      const s = openStore(JSON.parse(process.argv[1]));
      for (let i = 0; i < 10; i++) {
        const [o] = await s.writeMany([{ tenant: process.argv[2], changes: [{ op: 'role.create', role: 'p' + process.pid + '_' + i, description: '' }] }]);
        if (!o.ok || !o.value.ok) process.exit(3);
      }
      process.stdout.write((await s.cursorSecret()).toString('hex'));
      await s.close();`;
    const runs = Array.from(
      { length: 4 },
      () =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(s), t], {
            cwd: ROOT,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          p.stdout.on('data', (c: Buffer) => (out += c.toString()));
          p.on('exit', (code) => resolve({ code, out }));
        }),
    );
    const done = await Promise.all(runs);
    assert.deepEqual(
      done.map((d) => d.code),
      [0, 0, 0, 0],
    );
    assert.deepEqual(
      await backend.versions(s),
      MIGRATIONS.map((m) => m.version),
    );
    const check = open(s);
    const secret = (await check.cursorSecret()).toString('hex');
    assert.deepEqual(
      done.map((d) => d.out),
      [secret, secret, secret, secret],
    );
    assert.equal(await check.revision(t), 40);
    assert.deepEqual(
      (await check.changes(t, 0, 100)).map((r) => r.revision),
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
  });
}
