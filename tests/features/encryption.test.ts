/**
 * Field encryption, black box (docs/operations.md §7): with AUTH_ENABLE_ENCRYPTION=true every route
 * answers plaintext while the database (SQLite file and WAL, PostgreSQL tables) holds no name in
 * plaintext and does hold the contract's vector ciphertexts; a start with another key, with
 * encryption off on an encrypted database, or on over a plaintext one, is refused with one clear
 * line before touching the data; the right key reads everything back. Instances sharing a
 * database through Redis exchange no names. PostgreSQL and Redis cases skip with a printed reason
 * when those are not reachable, and fail instead under AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { RbacClient } from '../../src/client/index.ts';
import { freshPostgresDatabase, requirePostgres, sharedDatabase } from '../helpers/postgres.ts';
import { freePort, runToExit, startServer, startServers, tempDir, type RunningServer, type ServerOptions } from '../helpers/server.ts';
import { requireService } from '../helpers/services.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';
import { sorted } from '../../support/rbac-model.ts';
import { sleep } from '../helpers/wait.ts';

const KEY = 'test-encryption-password';
const ENCRYPTED = { AUTH_ENABLE_ENCRYPTION: 'true', AUTH_ENCRYPTION_KEY: KEY };
const REDIS_URL = process.env.AUTH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = 'rbac-gateway:changes:v1';
/** docs/operations.md §7: the stored texts of these names under {@link KEY}. */
const VECTORS: ReadonlyArray<readonly [string, string]> = [
  ['alice', 'INCKN6LjRf9yFtqDdMjIYNcuVYo4'],
  ['read', 'SxZObua4nogpuK/3UVSX1+nbQis='],
  ['Administrators', '+pqDtMe+7mGL9y9aDLasAc0e8VNREmtF1+faR5KY'],
  ['alice@example.com', 'kYgStcTbc5lByvyhpryvr6KGmerBq9RYCJXz9ii/DDfi'],
];
const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** Where one scenario's data lives, and how to look at it from outside the service. */
interface Place {
  readonly name: 'sqlite' | 'postgresql';
  /** Options of startServer on this database, with `env` added. */
  options(env: Record<string, string>): ServerOptions;
  /** The settings of a start expected to fail (runToExit), with `env` added. */
  env(env: Record<string, string>): Record<string, string>;
  /** Every stored cell of every client-data table, as text (bytea read as UTF-8). */
  cells(): Promise<Map<string, string[]>>;
  /** The raw bytes at rest, where there are files (SQLite: every file of its folder). */
  files(): Map<string, Buffer>;
  /** A digest of everything stored: equal before and after means untouched. */
  state(): Promise<string>;
}

function sqlitePlace(t: TestContext): Place {
  const tmp = tempDir('rbac-encryption-');
  t.after(() => tmp.cleanup());
  const path = join(tmp.dir, 'rbac.sqlite3');
  const files = (): Map<string, Buffer> => new Map(readdirSync(tmp.dir).map((f) => [f, readFileSync(join(tmp.dir, f))]));
  return {
    name: 'sqlite',
    options: (env) => ({ sqlitePath: path, env }),
    env: (env) => ({ AUTH_SQLITE_PATH: path, ...env }),
    async cells() {
      const db = new Database(path, { readonly: true });
      try {
        const tables = prepared(db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('schema_migrations', 'sqlite_sequence')`)
          .pluck()
          .all() as string[];
        return new Map(tables.map((name) => [name, (prepared(db, `SELECT * FROM "${name}"`).raw().all() as unknown[][]).flat().map(cellText)]));
      } finally {
        db.close();
      }
    },
    files,
    // The database file and the WAL's content (an absent or empty WAL is the same state). The
    // -shm file is SQLite's index of the WAL, rebuilt by whoever opens the database.
    state: async () => {
      const wal = `${path}-wal`;
      const walHash = existsSync(wal) && statSync(wal).size > 0 ? sha256(readFileSync(wal)) : 'no wal';
      return `${sha256(readFileSync(path))} ${walHash}`;
    },
  };
}

async function postgresPlace(t: TestContext): Promise<Place | undefined> {
  if (!(await requirePostgres(t))) return undefined;
  const db = await freshPostgresDatabase(t);
  const dbEnv = { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: db.url };
  const query = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  const tables = async (c: pg.Client): Promise<string[]> =>
    (await c.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)).rows.map(
      (r) => r.name,
    );
  return {
    name: 'postgresql',
    options: (env) => ({ env: { ...dbEnv, ...env } }),
    env: (env) => ({ ...dbEnv, ...env }),
    cells: () =>
      query(async (c) => {
        const out = new Map<string, string[]>();
        for (const name of (await tables(c)).filter((n) => n !== 'schema_migrations')) {
          const res = await c.query({ text: `SELECT * FROM "${name}"`, rowMode: 'array' });
          out.set(name, (res.rows as unknown[][]).flat().map(cellText));
        }
        return out;
      }),
    files: () => new Map(),
    // A dump: every row of every table as PostgreSQL's text of the row, in order.
    state: () =>
      query(async (c) => {
        const dump: string[] = [];
        for (const name of await tables(c)) {
          const { rows } = await c.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t ORDER BY 1`);
          dump.push(`${name}: ${rows.map((r) => r.row).join('\n')}`);
        }
        return sha256(dump.join('\n\n'));
      }),
  };
}

const cellText = (v: unknown): string => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

/** The names one scenario writes: the contract's, and unique ones. */
function namesOf(tag: string) {
  return {
    admins: 'Administrators',
    adminsDescription: `Administrators of the ${tag} gateway`,
    team: `Team-${tag}`,
    teamDescription: `Team ${tag}: ünïcødé ✓`,
    ghost: `Ghost-${tag}`,
    perm: `perm-${tag}`,
    users: ['alice', 'alice@example.com'],
    teamUsers: [`user-b-${tag}`, `user-a-${tag}`, `Zed-${tag}`],
  };
}
type Names = ReturnType<typeof namesOf>;

/** Writes the scenario's data; every answer names what was asked, in plaintext. */
async function writeAll(c: RbacClient, n: Names): Promise<void> {
  const created = await c.createRole(n.admins, { description: n.adminsDescription });
  assert.equal(created.status, 201);
  assert.deepEqual(created.data, { role: n.admins, description: n.adminsDescription, revision: 1 });
  assert.equal((await c.createRole(n.team, { description: n.teamDescription })).status, 201);
  assert.deepEqual((await c.grant(n.admins, 'read')).data, { role: n.admins, permission: 'read', revision: 3 });
  assert.equal((await c.grant(n.team, n.perm)).status, 201);
  for (const user of n.users) assert.deepEqual((await c.addMember(user, n.admins)).data?.user, user);
  for (const user of n.teamUsers) assert.equal((await c.addMember(user, n.team)).status, 201);
  const ghost = await c.deleteRole(n.ghost);
  assert.equal(ghost.status, 404);
  assert.equal(ghost.error, `Role '${n.ghost}' does not exist`, 'a refusal names the role in plaintext');
  const again = await c.grant(n.admins, 'read');
  assert.equal(again.error, `Permission 'read' is already granted to role '${n.admins}'`);
}

/** Every read route, answered in plaintext; returns what a restart must answer the same. */
async function readAll(c: RbacClient, n: Names): Promise<unknown> {
  const roles = await c.listRoles();
  assert.deepEqual(roles.data, [
    { role: n.admins, description: n.adminsDescription },
    { role: n.team, description: n.teamDescription },
  ]);
  assert.deepEqual((await c.rolePermissions(n.admins)).data, [{ name: 'read' }]);
  assert.deepEqual(
    (await c.members(n.admins)).data,
    n.users.map((user) => ({ user })),
  );
  const teamMembers = await c.all((o) => c.members(n.team, o), 2);
  assert.deepEqual(
    teamMembers,
    sorted(n.teamUsers).map((user) => ({ user })),
    'sorted by plaintext, paged',
  );
  assert.deepEqual((await c.userRoles('alice@example.com')).data, [{ role: n.admins }]);
  assert.deepEqual((await c.userPermissions('alice')).data, [{ name: 'read' }]);
  assert.deepEqual((await c.userPermissions(n.teamUsers[0] as string)).data, [{ name: n.perm }]);
  assert.deepEqual(
    (await c.whichUsersCan('read')).data,
    n.users.map((user) => ({ user })),
  );
  assert.deepEqual((await c.whichRolesCan(n.perm)).data, [{ role: n.team }]);
  assert.deepEqual((await c.whichRolesCan('read')).data, [{ role: n.admins }]);
  assert.deepEqual((await c.hasPermission('alice@example.com', 'read')).data, { has_permission: true });
  assert.deepEqual((await c.hasPermission('alice', n.perm)).data, { has_permission: false });
  assert.deepEqual((await c.isMember('alice', n.admins)).data, { is_member: true });
  assert.deepEqual((await c.isMember(n.teamUsers[1] as string, n.admins)).data, { is_member: false });
  assert.deepEqual((await c.roleHasPermission(n.admins, 'read')).data, { has_permission: true });
  assert.equal((await c.roleHasPermission(n.ghost, 'read')).error, `Role '${n.ghost}' does not exist`);
  const checked = await c.check([
    { user: 'alice', permission: 'read' },
    { user: n.teamUsers[2] as string, permission: n.perm },
    { user: n.teamUsers[2] as string, permission: 'read' },
  ]);
  assert.deepEqual(checked.data, {
    results: [
      { user: 'alice', permission: 'read', has_permission: true },
      { user: n.teamUsers[2], permission: n.perm, has_permission: true },
      { user: n.teamUsers[2], permission: 'read', has_permission: false },
    ],
    all: false,
    any: true,
  });
  const changes = await c.request<Array<Record<string, unknown>>>('GET', '/api/changes?since=0');
  assert.deepEqual(
    changes.data?.map(({ timestamp: _, ...r }) => r),
    [
      { revision: 1, op: 'role.create', role: n.admins },
      { revision: 2, op: 'role.create', role: n.team },
      { revision: 3, op: 'permission.grant', role: n.admins, permission: 'read' },
      { revision: 4, op: 'permission.grant', role: n.team, permission: n.perm },
      ...[...n.users.map((user) => [user, n.admins]), ...n.teamUsers.map((user) => [user, n.team])].map(([user, role], i) => ({
        revision: 5 + i,
        op: 'membership.add',
        role,
        user,
      })),
    ],
  );
  // The refusals' rows are recorded apart from a write, a moment later.
  const ghostPath = `/api/role/${encodeURIComponent(n.ghost)}`;
  let audit: Array<Record<string, unknown>> = [];
  for (let t0 = Date.now(); !audit.some((r) => r.resource === ghostPath) && Date.now() - t0 < 10_000; await sleep(100)) {
    audit = (await c.request<Array<Record<string, unknown>>>('GET', '/api/audit')).data ?? [];
  }
  const resources = audit.map((r) => r.resource);
  for (const path of [
    `/api/role/${n.admins}`,
    `/api/role/${encodeURIComponent(n.team)}`,
    `/api/permission/${n.admins}/read`,
    `/api/membership/alice/${n.admins}`,
    `/api/membership/alice%40example.com/${n.admins}`,
    ghostPath,
  ]) {
    assert.ok(resources.includes(path), `audit holds ${path} in plaintext: ${JSON.stringify(resources)}`);
  }
  assert.equal(audit.length, 11, 'nine writes and two refusals');
  return { roles: roles.data, teamMembers, changes: changes.data, audit };
}

/** Names that must not be stored in plaintext: searched in every stored cell. */
const secretNames = (n: Names, tag: string): string[] => ['Administrators', 'alice', 'read', tag, ...n.users];

/**
 * No name in any stored cell, the vector ciphertexts in the tables; in the files, none of the
 * distinctive names in any byte. ('read' is searched for in the cells only: four letters that a
 * page of a database file may well hold for other reasons.)
 */
async function assertNothingInPlaintext(place: Place, n: Names, tag: string, files = place.files()): Promise<void> {
  const cells = await place.cells();
  for (const table of ['roles', 'grants', 'memberships', 'changelog', 'audit']) assert.ok((cells.get(table)?.length ?? 0) > 0, `${table} holds rows`);
  for (const [table, values] of cells) {
    for (const name of secretNames(n, tag)) {
      const hit = values.find((v) => v.includes(name));
      assert.equal(hit, undefined, `${place.name} table ${table} holds '${name}' in plaintext: ${hit}`);
    }
  }
  for (const [, stored] of VECTORS)
    assert.ok(
      [...cells.values()].some((values) => values.includes(stored)),
      `the ciphertext ${stored} is stored`,
    );
  for (const [file, bytes] of files) {
    for (const name of secretNames(n, tag).filter((x) => x !== 'read')) {
      assert.equal(bytes.includes(Buffer.from(name, 'utf8')), false, `${file} holds '${name}' in plaintext`);
    }
  }
  if (files.size > 0) {
    for (const [plain, stored] of VECTORS)
      assert.ok(
        [...files.values()].some((b) => b.includes(stored)),
        `the files hold ${plain} as ${stored}`,
      );
  }
}

/** A start that must be refused: not 0, one line naming `mention`, the key never shown. */
async function refusedStart(place: Place, env: Record<string, string>, mention: RegExp): Promise<void> {
  const { code, output } = await runToExit(place.env({ AUTH_SERVER_PORT: String(await freePort()), AUTH_WORKERS: '1', ...env }));
  const context = `exit code ${code}, output:\n${output.slice(0, 3000)}`;
  assert.notEqual(code, null, `the service did not stop (killed); ${context}`);
  assert.notEqual(code, 0, context);
  assert.doesNotMatch(output, /"event":"primary.listening"/, `it listened; ${context}`);
  const lines = output.split('\n').filter((l) => l.startsWith('rbac-gateway: cannot start:'));
  assert.equal(lines.length, 1, `one line says why; ${context}`);
  assert.match(lines[0] ?? '', mention, context);
  for (const secret of [KEY, env.AUTH_ENCRYPTION_KEY].filter((x) => x !== undefined && x !== '')) {
    assert.ok(!output.includes(secret as string), `the key is never shown; ${context}`);
  }
  assert.ok(!/^\s*at .+:\d+:\d+\)?$/m.test(output), `no stack trace; ${context}`);
}

async function encryptedScenario(t: TestContext, place: Place): Promise<void> {
  const tag = randomBytes(5).toString('hex');
  const n = namesOf(tag);
  const key = randomUUID();
  const server = await startServer(place.options(ENCRYPTED));
  t.after(() => server.kill());
  await writeAll(server.client(key), n);
  const view = await readAll(server.client(key), n);
  // While it runs, the WAL holds the recent writes.
  const running = place.files();
  if (place.name === 'sqlite')
    assert.ok(
      [...running].some(([f, b]) => f.endsWith('-wal') && b.length > 0),
      `a WAL to read: ${[...running.keys()].join(', ')}`,
    );
  await assertNothingInPlaintext(place, n, tag, running);
  assert.equal(await server.stop(), 0);
  await assertNothingInPlaintext(place, n, tag);

  const before = await place.state();
  await refusedStart(place, { ...ENCRYPTED, AUTH_ENCRYPTION_KEY: `another-${randomUUID()}` }, /AUTH_ENCRYPTION_KEY/);
  assert.equal(await place.state(), before, 'another key touched nothing');
  await refusedStart(place, {}, /encrypted.*AUTH_ENABLE_ENCRYPTION=true.*AUTH_ENCRYPTION_KEY/);
  assert.equal(await place.state(), before, 'a start without encryption touched nothing');

  const again = await startServer(place.options(ENCRYPTED));
  t.after(() => again.kill());
  assert.deepEqual(await readAll(again.client(key), n), view, 'the right key reads everything back');
  assert.equal((await again.client(key).addMember('alice', n.team)).status, 201, 'and writes');
  assert.equal(await again.stop(), 0);
  await assertNothingInPlaintext(place, n, tag);
}

async function plaintextScenario(t: TestContext, place: Place): Promise<void> {
  const server = await startServer(place.options({}));
  t.after(() => server.kill());
  const c = server.client();
  assert.equal((await c.createRole('Administrators')).status, 201);
  assert.equal((await c.addMember('alice', 'Administrators')).status, 201);
  assert.equal(await server.stop(), 0);
  const roles = (await place.cells()).get('roles') ?? [];
  assert.ok(roles.includes('Administrators'), 'stored in plaintext, as asked');
  const before = await place.state();
  await refusedStart(place, ENCRYPTED, /AUTH_ENABLE_ENCRYPTION=true.*plaintext/);
  assert.equal(await place.state(), before, 'refused before touching the data');
}

test(
  'SQLite: every route answers plaintext, nothing is stored in plaintext; a wrong key or no encryption is refused, untouched',
  { timeout: 300_000 },
  async (t) => {
    await encryptedScenario(t, sqlitePlace(t));
  },
);

test('SQLite: a plaintext database is not encrypted over: start-up is refused, the data untouched', { timeout: 120_000 }, async (t) => {
  await plaintextScenario(t, sqlitePlace(t));
});

test(
  'PostgreSQL: every route answers plaintext, nothing is stored in plaintext; a wrong key or no encryption is refused, untouched',
  { timeout: 300_000 },
  async (t) => {
    const place = await postgresPlace(t);
    if (place !== undefined) await encryptedScenario(t, place);
  },
);

test('PostgreSQL: a plaintext database is not encrypted over: start-up is refused, the data untouched', { timeout: 120_000 }, async (t) => {
  const place = await postgresPlace(t);
  if (place !== undefined) await plaintextScenario(t, place);
});

test('two instances on one PostgreSQL and Redis: a write on one is seen on the other; Redis carries no name', { timeout: 180_000 }, async (t) => {
  if (!(await requireService(t, 'redis', REDIS_URL))) return;
  const db = await sharedDatabase(t);
  if (db === undefined) return;
  const env = { ...db.env, ...ENCRYPTED, AUTH_REDIS_URL: REDIS_URL, AUTH_REVALIDATE_MS: '60000' };
  const [a, b] = (await startServers({ env }, { env })) as [RunningServer, RunningServer];
  t.after(() => Promise.all([a.kill(), b.kill()]).then(() => undefined));
  // strict: 200 only once Redis is subscribed (else 503, where the plain probe says 200 degraded).
  const ready = async (s: RunningServer): Promise<boolean> => (await s.client().ready(true)).status === 200;
  for (let t0 = Date.now(); !((await ready(a)) && (await ready(b))); await sleep(100)) {
    if (Date.now() - t0 > 15_000) assert.fail('both instances ready (Redis subscribed) within 15 s');
  }

  const sub = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  t.after(() => sub.disconnect());
  const heard: string[] = [];
  sub.on('message', (channel: string, text: string) => void (channel === CHANNEL && heard.push(text)));
  await sub.connect();
  await sub.subscribe(CHANNEL);

  const tag = randomBytes(5).toString('hex');
  const perm = `perm-${tag}`;
  const key = randomUUID();
  const tenant = sha256(key.toLowerCase());
  const [ca, cb] = [a.client(key), b.client(key)];
  assert.equal((await ca.createRole('Administrators', { description: `Administrators ${tag}` })).status, 201);
  assert.equal((await ca.addMember('alice@example.com', 'Administrators')).status, 201);
  // B caches the tenant first: what it learns next comes through the instances' messages.
  assert.deepEqual((await cb.hasPermission('alice@example.com', perm)).data, { has_permission: false });
  const granted = await ca.grant('Administrators', perm);
  assert.equal(granted.status, 201);
  const since = Date.now();
  for (;;) {
    const seen = (await cb.hasPermission('alice@example.com', perm)).data?.has_permission;
    if (seen === true) break;
    assert.ok(Date.now() - since < 3000, 'the grant on A is visible on B within 3 s');
    await sleep(20);
  }
  assert.deepEqual((await cb.members('Administrators')).data, [{ user: 'alice@example.com' }]);

  const mine = heard.filter((m) => m.includes(tenant));
  assert.ok(mine.length >= 1, `Redis carried the tenant's changes (heard ${heard.length} messages)`);
  for (const m of mine) {
    const parsed = JSON.parse(m) as Record<string, unknown>;
    assert.equal(parsed.change, undefined, `tenant and revision only: ${m}`);
    // `at`: the commit time (a number), for the invalidation delay.
    assert.deepEqual(
      Object.keys(parsed).filter((k) => !['v', 'tenant', 'revision', 'from', 'at'].includes(k)),
      [],
      m,
    );
    assert.ok(parsed.at === undefined || typeof parsed.at === 'number', m);
  }
  for (const m of heard) {
    for (const name of ['Administrators', 'alice', tag]) assert.ok(!m.includes(name), `a message on ${CHANNEL} holds '${name}': ${m}`);
  }
});
