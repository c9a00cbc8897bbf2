/**
 * One set of cases for every store adapter (DESIGN.md, "one store conformance suite"): SQLite and
 * PostgreSQL must give the same outcomes, revisions and changelog for the same writes, and keep
 * them right under concurrency from several stores and processes. What only one adapter has is
 * at the end, in its own small block. PostgreSQL cases skip with a printed reason when the server
 * is not reachable, and fail instead under AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Change, ChangeRecord, WriteOutcome } from '../../../src/authz/changes.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { AppError } from '../../../src/errors/index.ts';
import { openStore, type StoreSettings } from '../../../src/store/index.ts';
import { MIGRATIONS } from '../../../src/store/migrations.ts';
import type { Store } from '../../../src/store/port.ts';
import { postgresSkipReason } from '../../helpers/postgres.ts';
import { freePort, ROOT } from '../../helpers/server.ts';
import { postgresBackend, postgresUrlOf, sqliteBackend, sqlitePathOf, writeOne, type StoreBackend } from '../../helpers/store-backends.ts';
import { randomTenant } from '../../helpers/tenants.ts';
import { isTransient } from '../../helpers/transient.ts';
// The other topics of the suite, registering their cases as they load.
import './cases/audit.ts';
import './cases/created.ts';
import './cases/workflow.ts';

const tenant = randomTenant;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/;

/** Expected outcome: the revision a write commits at, or the refusal's code and the unchanged revision. */
type Expect = number | readonly [code: string, revision: number];

/** Every change kind, applied and refused, on one tenant. */
const SCRIPT: ReadonlyArray<readonly [Change, Expect]> = [
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'permission.revoke', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'membership.remove', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'role.delete', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]],
  [{ op: 'role.create', role: 'admin', description: 'Administrators' }, 1],
  [{ op: 'role.create', role: 'admin', description: 'again' }, ['ERR_AUTHZ_ROLE_EXISTS', 1]],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, 2],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_GRANT_EXISTS', 2]],
  [{ op: 'permission.revoke', role: 'admin', permission: 'write' }, ['ERR_AUTHZ_GRANT_NOT_FOUND', 2]],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, 3],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, ['ERR_AUTHZ_MEMBERSHIP_EXISTS', 3]],
  [{ op: 'membership.remove', user: 'bob', role: 'admin' }, ['ERR_AUTHZ_MEMBERSHIP_NOT_FOUND', 3]],
  [{ op: 'permission.grant', role: 'admin', permission: 'write' }, 4],
  [{ op: 'permission.revoke', role: 'admin', permission: 'write' }, 5],
  [{ op: 'membership.add', user: 'bob', role: 'admin' }, 6],
  [{ op: 'membership.remove', user: 'bob', role: 'admin' }, 7],
  [{ op: 'role.create', role: 'Admin', description: '' }, 8],
  [{ op: 'role.delete', role: 'admin' }, 9],
  [{ op: 'role.delete', role: 'admin' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 9]],
  [{ op: 'permission.grant', role: 'admin', permission: 'read' }, ['ERR_AUTHZ_ROLE_NOT_FOUND', 9]],
  [{ op: 'role.create', role: 'admin', description: '' }, 10],
  [{ op: 'membership.add', user: 'alice', role: 'admin' }, 11],
];

const DESCRIPTIONS = ['', 'Ünïcødé — ✓', '😀'.repeat(1024), 'x'.repeat(1024), 'line1\nline2 "quoted" \\ \'single\' </script> \u0000 end', '  spaced  '];

/** Outcomes of SCRIPT per backend, compared with each other at the end. */
const outcomes = new Map<string, WriteOutcome[]>();

async function runScript(store: Store, t: TenantId): Promise<WriteOutcome[]> {
  const seen: WriteOutcome[] = [];
  for (const [change, expect] of SCRIPT) {
    const outcome = await writeOne(store, t, change);
    seen.push(outcome);
    const what = JSON.stringify(change);
    if (typeof expect === 'number') {
      assert.ok(outcome.ok, `${what} commits`);
      assert.equal(outcome.revision, expect, `${what} commits at ${expect}`);
      assert.deepEqual(outcome.change, change);
    } else {
      assert.ok(!outcome.ok, `${what} is refused`);
      assert.equal(outcome.error.code, expect[0], what);
      assert.match(outcome.error.message, new RegExp(`'${change.role}'`), `${what}: the message names the role`);
      assert.equal(outcome.revision, expect[1], `${what}: refused at the current revision`);
    }
    assert.equal(await store.revision(t), typeof expect === 'number' ? expect : expect[1]);
  }
  return seen;
}

function conformance(backend: StoreBackend): void {
  describe(`store conformance: ${backend.name}`, async () => {
    const skip = await backend.skip();
    let settings: StoreSettings;
    let store: Store;
    const opened: Store[] = [];
    const open = (s: StoreSettings = settings): Store => {
      const st = openStore(s);
      opened.push(st);
      return st;
    };

    before(async () => {
      if (skip !== false) return;
      settings = await backend.fresh();
      store = open();
    });
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
      await backend.cleanup();
    });
    const it = (name: string, fn: () => Promise<void>): void => void test(name, { skip }, fn);

    it('an unknown tenant is empty at revision 0', async () => {
      const t = tenant();
      assert.deepEqual(await store.load(t), { revision: 0, roles: [], grants: [], memberships: [] });
      assert.equal(await store.revision(t), 0);
      assert.deepEqual(await store.changes(t, 0, 100), []);
      assert.deepEqual(await store.revisions([t]), []);
      assert.deepEqual(await store.revisions([]), []);
    });

    it('writeMany: a batch settles each write as one write at a time would, in order per tenant', async () => {
      const [a, b] = [tenant(), tenant()];
      // The script on two tenants, interleaved, as one batch.
      const writes = SCRIPT.flatMap(([change]) => [
        { tenant: a, change },
        { tenant: b, change },
      ]);
      const settled = await store.writeMany(writes);
      assert.equal(settled.length, writes.length);
      settled.forEach((s, i) => {
        const [change, expect] = SCRIPT[Math.floor(i / 2)] as (typeof SCRIPT)[number];
        const what = `${JSON.stringify(change)} on tenant ${i % 2 === 0 ? 'a' : 'b'}`;
        assert.ok(s.ok, `${what}: settled as a value, not a failure`);
        if (typeof expect === 'number') {
          assert.ok(s.value.ok, `${what} commits`);
          assert.equal(s.value.revision, expect, `${what} commits at ${expect}`);
        } else {
          assert.ok(!s.value.ok, `${what} is refused`);
          assert.equal(s.value.error.code, expect[0], what);
          assert.equal(s.value.revision, expect[1], what);
        }
      });
      for (const t of [a, b]) {
        assert.equal(await store.revision(t), 11);
        assert.deepEqual((await store.changes(t, 0, 100)).map((c) => c.revision), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      }
      assert.deepEqual(await store.load(a), await store.load(b));
      assert.deepEqual(await store.writeMany([]), []);
    });

    it('every change kind commits or is refused as a value; revision + 1 per write, unchanged on refusal', async () => {
      const t = tenant();
      outcomes.set(backend.name, await runScript(store, t));
      assert.deepEqual(await store.load(t), {
        revision: 11,
        roles: [['Admin', ''], ['admin', '']],
        grants: [],
        memberships: [['alice', 'admin']],
      });
    });

    it('the changelog holds every committed change, in order, and nothing refused', async () => {
      const t = tenant();
      await runScript(store, t);
      const committed = SCRIPT.filter(([, e]) => typeof e === 'number').map(([c]) => c);
      const log = await store.changes(t, 0, 1000);
      assert.deepEqual(log.map((r) => r.revision), committed.map((_, i) => i + 1));
      assert.deepEqual(log.map((r) => r.change), committed);
      for (const r of log) assert.match(r.at, TIMESTAMP);
      assert.deepEqual([...log.map((r) => r.at)].sort(), log.map((r) => r.at), 'commit times do not go back');
    });

    it('changes(since, limit) pages through the changelog', async () => {
      const t = tenant();
      await runScript(store, t);
      const revs = async (since: number, limit: number): Promise<number[]> => (await store.changes(t, since, limit)).map((r) => r.revision);
      assert.deepEqual(await revs(0, 4), [1, 2, 3, 4]);
      assert.deepEqual(await revs(4, 4), [5, 6, 7, 8]);
      assert.deepEqual(await revs(8, 4), [9, 10, 11]);
      assert.deepEqual(await revs(11, 4), []);
      assert.deepEqual(await revs(100, 4), []);
      assert.deepEqual(await revs(10, 1), [11]);
      assert.deepEqual(await store.changes(tenant(), 0, 10), []);
    });

    it('deleting a role removes its grants and memberships in the same write', async () => {
      const t = tenant();
      for (const c of [
        { op: 'role.create', role: 'r1', description: 'one' },
        { op: 'role.create', role: 'r2', description: 'two' },
        { op: 'permission.grant', role: 'r1', permission: 'p1' },
        { op: 'permission.grant', role: 'r1', permission: 'p2' },
        { op: 'permission.grant', role: 'r2', permission: 'p1' },
        { op: 'membership.add', user: 'alice', role: 'r1' },
        { op: 'membership.add', user: 'alice', role: 'r2' },
        { op: 'membership.add', user: 'bob', role: 'r1' },
      ] as const) {
        assert.ok((await writeOne(store, t, c)).ok);
      }
      assert.deepEqual(await writeOne(store, t, { op: 'role.delete', role: 'r1' }), {
        ok: true,
        revision: 9,
        change: { op: 'role.delete', role: 'r1' },
        permissionsRemoved: 2,
        membershipsRemoved: 2,
      });
      assert.deepEqual(await store.load(t), { revision: 9, roles: [['r2', 'two']], grants: [['r2', 'p1']], memberships: [['alice', 'r2']] });
      assert.deepEqual((await store.changes(t, 8, 10)).map((r) => r.change), [{ op: 'role.delete', role: 'r1' }]);
      const empty = await writeOne(store, t, { op: 'role.create', role: 'r3', description: '' });
      const del = await writeOne(store, t, { op: 'role.delete', role: 'r3' });
      assert.deepEqual(del.ok ? [del.revision, del.permissionsRemoved, del.membershipsRemoved] : del, [11, 0, 0]);
      assert.equal(empty.revision, 10);
    });

    it('tenants are isolated: roles, refusals, revisions', async () => {
      const [a, b] = [tenant(), tenant()];
      await writeOne(store, a, { op: 'role.create', role: 'admin', description: '' });
      await writeOne(store, a, { op: 'permission.grant', role: 'admin', permission: 'read' });
      const refused = await writeOne(store, b, { op: 'role.delete', role: 'admin' });
      assert.deepEqual(refused.ok ? undefined : [refused.error.code, refused.revision], ['ERR_AUTHZ_ROLE_NOT_FOUND', 0]);
      assert.equal((await writeOne(store, b, { op: 'role.create', role: 'admin', description: 'b' })).revision, 1);
      assert.equal((await writeOne(store, b, { op: 'membership.add', user: 'u', role: 'admin' })).revision, 2);
      assert.deepEqual(await store.load(a), { revision: 2, roles: [['admin', '']], grants: [['admin', 'read']], memberships: [] });
      assert.deepEqual(await store.load(b), { revision: 2, roles: [['admin', 'b']], grants: [], memberships: [['u', 'admin']] });
      assert.deepEqual((await store.revisions([a, b, tenant()])).sort(), [[a, 2], [b, 2]].sort());
      assert.deepEqual((await store.changes(b, 0, 10)).map((r) => r.change.op), ['role.create', 'membership.add']);
    });

    it('names and descriptions come back exactly as written', async () => {
      const t = tenant();
      const names = ['L'.repeat(128), 'x|y', 'a.b:c@d+e_f-g', 'Z', '_', 'a'];
      for (const [i, description] of DESCRIPTIONS.entries()) {
        assert.ok((await writeOne(store, t, { op: 'role.create', role: `r${i}`, description })).ok);
      }
      for (const n of names) {
        assert.ok((await writeOne(store, t, { op: 'permission.grant', role: 'r0', permission: n })).ok);
        assert.ok((await writeOne(store, t, { op: 'membership.add', user: n, role: 'r1' })).ok);
      }
      const snap = await store.load(t);
      assert.deepEqual(snap.roles, DESCRIPTIONS.map((d, i) => [`r${i}`, d]));
      const binary = [...names].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      assert.deepEqual(snap.grants, binary.map((n) => ['r0', n]), 'in key order, by code point');
      assert.deepEqual(snap.memberships, binary.map((n) => [n, 'r1']));
      const created = (await store.changes(t, 0, DESCRIPTIONS.length)).map((r: ChangeRecord) => (r.change.op === 'role.create' ? r.change.description : undefined));
      assert.deepEqual(created, DESCRIPTIONS);
    });

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
      assert.notDeepEqual(await store.cursorSecret(), secret);
    });

    it('stores opening one new database together apply each migration once', async () => {
      const s = await backend.fresh();
      const stores = Array.from({ length: 4 }, () => open(s));
      const secrets = await Promise.all(stores.map((st) => st.cursorSecret()));
      for (const x of secrets) assert.deepEqual(x, secrets[0]);
      assert.deepEqual(await backend.versions(s), MIGRATIONS.map((m) => m.version));
      assert.deepEqual(await Promise.all(stores.map((st) => st.revision(tenant()))), [0, 0, 0, 0]);
    });

    it('concurrent writers on several stores get unique, gapless revisions', async () => {
      const t = tenant();
      const stores = [store, ...Array.from({ length: 3 }, () => open())];
      const writes = stores.flatMap((st, i) => [
        ...Array.from({ length: 25 }, (_, j) => writeOne(st, t, { op: 'role.create', role: `s${i}r${j}`, description: '' })),
        writeOne(st, t, { op: 'role.create', role: 'contested', description: `from ${i}` }),
      ]);
      const results = await Promise.all(writes);
      const committed = results.filter((r) => r.ok);
      assert.equal(committed.length, 101, 'every distinct role once, the contested one once');
      for (const r of results) if (!r.ok) assert.equal(r.error.code, 'ERR_AUTHZ_ROLE_EXISTS');
      assert.deepEqual(committed.map((r) => r.revision).sort((x, y) => x - y), Array.from({ length: 101 }, (_, i) => i + 1));
      const log = await store.changes(t, 0, 1000);
      assert.deepEqual(log.map((r) => r.revision), Array.from({ length: 101 }, (_, i) => i + 1));
      for (const r of committed) assert.deepEqual(log[r.revision - 1]?.change, r.change, `revision ${r.revision} is the write that got it`);
      const snap = await store.load(t);
      assert.equal(snap.revision, 101);
      assert.equal(snap.roles.length, 101);
    });

    it('processes starting together on a new database migrate once and write gaplessly', async () => {
      const s = await backend.fresh();
      const t = tenant();
      const script = `import { openStore } from './src/store/index.ts';
        const s = openStore(JSON.parse(process.argv[1]));
        for (let i = 0; i < 10; i++) {
          const [o] = await s.writeMany([{ tenant: process.argv[2], change: { op: 'role.create', role: 'p' + process.pid + '_' + i, description: '' } }]);
          if (!o.ok || !o.value.ok) process.exit(3);
        }
        process.stdout.write((await s.cursorSecret()).toString('hex'));
        await s.close();`;
      const runs = Array.from(
        { length: 4 },
        () =>
          new Promise<{ code: number | null; out: string }>((resolve) => {
            const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(s), t], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
            let out = '';
            p.stdout.on('data', (c: Buffer) => (out += c.toString()));
            p.on('exit', (code) => resolve({ code, out }));
          }),
      );
      const done = await Promise.all(runs);
      assert.deepEqual(done.map((d) => d.code), [0, 0, 0, 0]);
      assert.deepEqual(await backend.versions(s), MIGRATIONS.map((m) => m.version));
      const check = open(s);
      const secret = (await check.cursorSecret()).toString('hex');
      assert.deepEqual(done.map((d) => d.out), [secret, secret, secret, secret]);
      assert.equal(await check.revision(t), 40);
      assert.deepEqual((await check.changes(t, 0, 100)).map((r) => r.revision), Array.from({ length: 40 }, (_, i) => i + 1));
    });
  });
}

conformance(sqliteBackend());
conformance(postgresBackend());

test('SQLite and PostgreSQL answer the same script with the same outcomes', (t) => {
  const [sqlite, postgres] = [outcomes.get('sqlite'), outcomes.get('postgresql')];
  if (sqlite === undefined || postgres === undefined) return t.skip('one backend did not run');
  assert.deepEqual(postgres, sqlite);
});

// ---- what only one adapter has ----------------------------------------------------------------

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
      { tenant: a, change: { op: 'role.create', role: 'r', description: '' } },
      { tenant: a, change: bad },
      { tenant: a, change: { op: 'permission.grant', role: 'r', permission: 'p' } },
    ]);
    assert.deepEqual(settled.map((s) => s.ok && s.value.ok && s.value.revision), [1, false, 2]);
    const failed = settled[1];
    assert.ok(failed !== undefined && !failed.ok && failed.error.code === 'ERR_INTERNAL', JSON.stringify(failed));
    assert.deepEqual((await store.changes(a, 0, 10)).map((c) => c.change.op), ['role.create', 'permission.grant']);
    assert.deepEqual(await store.load(a), { revision: 2, roles: [['r', '']], grants: [['r', 'p']], memberships: [] });
  });
});

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
    const store = openStore({ type: 'postgresql', postgresql: { url: `postgresql://postgres@127.0.0.1:${port}/x`, poolMax: 1, connectTimeoutMs: 1000, statementTimeoutMs: 1000 } });
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
    const started = Date.now();
    await assert.rejects(writeOne(store, t, { op: 'permission.grant', role: 'r', permission: 'p' }), expectTransient);
    assert.ok(Date.now() - started < 3000, 'gave up at the statement timeout');
    await admin.query('ROLLBACK');
    assert.equal((await writeOne(store, t, { op: 'permission.grant', role: 'r', permission: 'p' })).revision, 2);
    assert.deepEqual((await store.changes(t, 0, 10)).map((r) => r.revision), [1, 2]);
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
