/**
 * `rbac-gateway backup` and `restore` (docs/operations.md §10), black box, on SQLite and on
 * PostgreSQL: a backup taken while a server takes writes is a consistent snapshot (every client at
 * one revision, its state exactly its changelog up to there), and a server on the restored
 * database answers every read route exactly as the original does, then keeps working. A restore
 * refuses a running service and a database holding data (unless --force). PostgreSQL cases skip
 * with a printed reason when it is not reachable (fail under AUTH_TEST_REQUIRE_SERVICES=1).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RbacClient } from '../../src/client/index.ts';
import { onlyResult, readEverything, runCli, seedClient, type SeededNames } from '../helpers/cli.ts';
import { freshPostgresDatabase, requirePostgres } from '../helpers/postgres.ts';
import { startServer, tempDir, type ServerOptions } from '../helpers/server.ts';

/** Where a scenario's two databases live: the original and the one restored into. */
interface Databases {
  readonly original: Record<string, string>;
  readonly fresh: Record<string, string>;
  readonly backupFile: string;
  options(env: Record<string, string>): ServerOptions;
}

function sqliteDatabases(t: TestContext): Databases {
  const tmp = tempDir('rbac-backup-');
  t.after(() => tmp.cleanup());
  return {
    original: { AUTH_SQLITE_PATH: join(tmp.dir, 'original', 'rbac.sqlite3') },
    fresh: { AUTH_SQLITE_PATH: join(tmp.dir, 'restored', 'rbac.sqlite3') },
    backupFile: join(tmp.dir, 'backup.sqlite3'),
    options: (env) => ({ sqlitePath: env.AUTH_SQLITE_PATH as string }),
  };
}

async function postgresDatabases(t: TestContext): Promise<Databases> {
  const tmp = tempDir('rbac-backup-pg-');
  t.after(() => tmp.cleanup());
  const [a, b] = [await freshPostgresDatabase(t), await freshPostgresDatabase(t)];
  const env = (url: string): Record<string, string> => ({ AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: url });
  return { original: env(a.url), fresh: env(b.url), backupFile: join(tmp.dir, 'backup.ndjson'), options: (e) => ({ env: e }) };
}

/** Writes `p1`, `p2`, … to role `load` one request at a time until stopped; resolves with how many. */
function writeLoad(c: RbacClient): { stop(): Promise<number> } {
  let stopping = false;
  const done = (async () => {
    let n = 0;
    if ((await c.createRole('load')).status !== 201) throw new Error('cannot create role load');
    while (!stopping) {
      const res = await c.grant('load', `p${n + 1}`);
      if (res.status !== 201) throw new Error(`write p${n + 1}: HTTP ${res.status} ${res.error ?? ''}`);
      n += 1;
    }
    return n;
  })();
  return {
    stop: async () => {
      stopping = true;
      return done;
    },
  };
}

/** A load client as restored: its state is exactly its original changelog up to the revision it has. */
async function assertConsistentPrefix(original: RbacClient, restored: RbacClient): Promise<number> {
  const [before, after] = [(await original.changes(0, { limit: 1000 })).data ?? [], (await restored.changes(0, { limit: 1000 })).data ?? []];
  assert.ok(after.length >= 1 && after.length <= before.length, `restored ${after.length} changes of ${before.length}`);
  assert.deepEqual(after, before.slice(0, after.length), 'the restored changelog is a prefix of the original');
  const granted = ((await restored.rolePermissions('load', { limit: 1000 })).data ?? []).map((p) => p.name).sort();
  const expected = Array.from({ length: after.length - 1 }, (_, i) => `p${i + 1}`).sort();
  assert.deepEqual(granted, expected, 'the restored grants are those of its changelog, no more, no fewer');
  return after.length;
}

async function scenario(t: TestContext, dbs: Databases): Promise<void> {
  const server = await startServer(dbs.options(dbs.original));
  t.after(() => server.stop());
  const clients: Array<[RbacClient, SeededNames]> = [];
  for (const extra of ['one', 'two', 'three']) {
    const c = server.client();
    clients.push([c, await seedClient(c, extra)]);
  }
  const loadClients = [server.client(), server.client()];
  const loads = loadClients.map(writeLoad);
  await new Promise((r) => setTimeout(r, 300));

  const backup = await runCli(['backup', '--out', dbs.backupFile], dbs.original);
  const written = await Promise.all(loads.map((l) => l.stop()));
  assert.equal(backup.code, 0, backup.stderr);
  const report = (onlyResult(backup) as { backup: { tables: Record<string, number>; bytes: number } }).backup;
  assert.ok(report.bytes > 0);
  assert.equal(report.tables.clients, 5, 'every client is in the backup');
  assert.ok(
    written.every((n) => n > 0),
    'writes went on during the backup',
  );

  const again = await runCli(['backup', '--out', dbs.backupFile], dbs.original);
  assert.equal(again.code, 1, 'an existing backup file is not replaced');
  assert.match(again.stderr, /exists: choose a new file, or --force/);

  const busy = await runCli(['restore', '--in', dbs.backupFile, '--force'], dbs.original);
  assert.equal(busy.code, 1, 'restoring under a running service is refused');
  assert.match(busy.stderr, /in use/);

  const cut = `${dbs.backupFile}.cut`;
  writeFileSync(cut, readFileSync(dbs.backupFile).subarray(0, Math.floor(report.bytes * 0.6)));
  const broken = await runCli(['restore', '--in', cut], dbs.fresh);
  assert.equal(broken.code, 1, `a backup cut short is refused: ${broken.stdout}`);

  const restore = await runCli(['restore', '--in', dbs.backupFile], dbs.fresh);
  assert.equal(restore.code, 0, restore.stderr);
  assert.deepEqual((onlyResult(restore) as { restore: { tables: Record<string, number> } }).restore.tables, report.tables);
  const refused = await runCli(['restore', '--in', dbs.backupFile], dbs.fresh);
  assert.equal(refused.code, 1, 'a database holding data is refused');
  assert.match(refused.stderr, /is not empty .*--force/);
  const forced = await runCli(['restore', '--in', dbs.backupFile, '--force'], dbs.fresh);
  assert.equal(forced.code, 0, forced.stderr);

  const restored = await startServer(dbs.options(dbs.fresh));
  t.after(() => restored.stop());
  for (const [c, names] of clients) {
    const answers = await readEverything(c, names);
    assert.deepEqual(await readEverything(restored.client(c.key), names), answers, 'every read route answers the same');
    const answer = (what: string): [string, number, unknown] | undefined => answers.find(([w]) => w === what);
    assert.equal(answer('roles')?.[1], 200, 'the reads compared are answers, not refusals');
    assert.ok(JSON.stringify(answer('workflow runs read')).includes('alice@example.com'), 'a workflow run is compared');
    assert.ok(JSON.stringify(answer('audit')).includes('membership.activate'), 'a boundary audit row is compared');
  }
  for (const c of loadClients) await assertConsistentPrefix(c, restored.client(c.key));

  // The restored database goes on: new revisions, audit rows and runs number on from the copy.
  const [first, names] = clients[0] as [RbacClient, SeededNames];
  const after = restored.client(first.key);
  const grant = await after.grant('Administrators', 'after-restore');
  assert.equal(grant.status, 201, grant.error);
  const changes = (await after.changes(0, { limit: 1000 })).data ?? [];
  assert.equal(changes.at(-1)?.revision, (changes.at(-2)?.revision ?? 0) + 1);
  const audit = (await after.audit({ limit: 1000 })).data ?? [];
  assert.equal(audit.filter((r) => r.resource.includes('after-restore')).length, 1);
  assert.ok((await readEverything(after, names)).length > 0);
}

test('SQLite: a backup under writes restores into a database that answers the same', async (t) => {
  await scenario(t, sqliteDatabases(t));
});

test('PostgreSQL: a backup under writes (NDJSON archive) restores into a database that answers the same', async (t) => {
  if (!(await requirePostgres(t))) return;
  await scenario(t, await postgresDatabases(t));
});

test('a SQLite backup does not restore into PostgreSQL', async (t) => {
  if (!(await requirePostgres(t))) return;
  const sqlite = sqliteDatabases(t);
  const server = await startServer(sqlite.options(sqlite.original));
  await server.client().createRole('r');
  assert.equal((await runCli(['backup', '--out', sqlite.backupFile], sqlite.original)).code, 0);
  await server.stop();
  const pg = await postgresDatabases(t);
  const wrong = await runCli(['restore', '--in', sqlite.backupFile], pg.fresh);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /is not a PostgreSQL backup/);
});
