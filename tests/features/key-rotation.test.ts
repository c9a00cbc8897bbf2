/**
 * `rbac-gateway rotate-encryption-key` (docs/operations.md, "Rotating the field-encryption key"),
 * black box, on SQLite and PostgreSQL: a plaintext database encrypted (--encrypt), rotated to the
 * contract's test key (its §8 vectors then in the stored cells, no plaintext name and no cell of
 * the old key anywhere), then decrypted (--decrypt); after each step a server on the database
 * answers every read route exactly as before, and the previous key is refused at start. A running
 * service is refused; a run killed inside its transaction leaves the database as it was, the old
 * key working (AUTH_TEST_MAINTENANCE_STALL_AFTER stops it at a known cell for the kill).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { RbacClient } from '../../src/client/index.ts';
import { FieldCipher } from '../../src/crypto/field-cipher.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';
import { onlyResult, readEverything, runCli, seedClient, spawnCli, type SeededNames } from '../helpers/cli.ts';
import { freshPostgresDatabase, requirePostgres } from '../helpers/postgres.ts';
import { runToExit, startServer, tempDir, type RunningServer, type ServerOptions } from '../helpers/server.ts';

const TEST_KEY = 'test-encryption-password';
const OLD_KEY = 'an-older-encryption-key-to-rotate-away';
/** The contract's §8 vectors under {@link TEST_KEY}. */
const VECTORS: ReadonlyArray<readonly [string, string]> = [
  ['alice', 'INCKN6LjRf9yFtqDdMjIYNcuVYo4'],
  ['read', 'SxZObua4nogpuK/3UVSX1+nbQis='],
  ['Administrators', '+pqDtMe+7mGL9y9aDLasAc0e8VNREmtF1+faR5KY'],
  ['alice@example.com', 'kYgStcTbc5lByvyhpryvr6KGmerBq9RYCJXz9ii/DDfi'],
];
const PLAINTEXT = { AUTH_ENABLE_ENCRYPTION: 'false' };
const encryptedWith = (key: string): Record<string, string> => ({ AUTH_ENABLE_ENCRYPTION: 'true', AUTH_ENCRYPTION_KEY: key });

/** One database, seen from outside the service. */
interface Place {
  readonly env: Record<string, string>;
  /** A server's options on this database, with `env` added. */
  options(env: Record<string, string>): ServerOptions;
  /** Every stored cell of every table, as text (bytea read as UTF-8). */
  cells(): Promise<string[]>;
}

function sqlitePlace(t: TestContext): Place {
  const tmp = tempDir('rbac-rotate-');
  t.after(() => tmp.cleanup());
  const path = join(tmp.dir, 'rbac.sqlite3');
  return {
    env: { AUTH_SQLITE_PATH: path },
    options: (env) => ({ sqlitePath: path, env }),
    async cells() {
      const db = new Database(path, { readonly: true });
      try {
        const tables = prepared(db, `SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[];
        return tables.flatMap((name) => (prepared(db, `SELECT * FROM "${name}"`).raw().all() as unknown[][]).flat().map(String));
      } finally {
        db.close();
      }
    },
  };
}

async function postgresPlace(t: TestContext): Promise<Place> {
  const { url } = await freshPostgresDatabase(t);
  const env = { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: url };
  return {
    env,
    options: (more) => ({ env: { ...env, ...more } }),
    async cells() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const tables = (await c.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`)).rows;
        const out: string[] = [];
        for (const { name } of tables) {
          const { rows } = await c.query({ text: `SELECT * FROM "${name}"`, rowMode: 'array' });
          for (const row of rows as unknown[][]) for (const v of row) out.push(Buffer.isBuffer(v) ? v.toString('utf8') : String(v));
        }
        return out;
      } finally {
        await c.end();
      }
    },
  };
}

type Answers = Map<string, Array<[string, number, unknown]>>;

/** A server on `place` with `env`, every read route of every client read, then stopped. */
async function answersOn(place: Place, env: Record<string, string>, clients: ReadonlyArray<[string, SeededNames]>): Promise<Answers> {
  const server = await startServer(place.options(env));
  try {
    const out: Answers = new Map();
    for (const [key, names] of clients) out.set(key, await readEverything(server.client(key), names));
    return out;
  } finally {
    await server.stop();
  }
}

/** Starting with `env` is refused (exit 2) with a message matching `why`. */
async function refusedStart(place: Place, env: Record<string, string>, why: RegExp): Promise<void> {
  const { code, output } = await runToExit({ AUTH_WORKERS: '1', AUTH_SERVER_PORT: '0', ...place.env, ...env });
  assert.equal(code, 2, output);
  assert.match(output, why);
}

const has = (cells: readonly string[], text: string): boolean => cells.some((c) => c.includes(text));

async function rotate(place: Place, args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const run = await runCli(['rotate-encryption-key', ...args], { ...place.env, ...env });
  assert.equal(run.code, 0, run.stderr);
  return (onlyResult(run) as { 'rotate-encryption-key': Record<string, unknown> })['rotate-encryption-key'];
}

async function seeded(place: Place, env: Record<string, string>): Promise<{ server: RunningServer; clients: Array<[string, SeededNames]> }> {
  const server = await startServer(place.options(env));
  const clients: Array<[string, SeededNames]> = [];
  for (const extra of ['one', 'two']) {
    const c: RbacClient = server.client();
    clients.push([c.key as string, await seedClient(c, extra)]);
  }
  return { server, clients };
}

async function chain(place: Place): Promise<void> {
  const { server, clients } = await seeded(place, PLAINTEXT);
  const busy = await runCli(['rotate-encryption-key', '--encrypt'], { ...place.env, AUTH_NEW_ENCRYPTION_KEY: OLD_KEY });
  await server.stop();
  assert.equal(busy.code, 1, 'a running service is refused');
  assert.match(busy.stderr, /in use/);
  const before = await answersOn(place, PLAINTEXT, clients);
  const old = new FieldCipher(OLD_KEY);

  const encrypted = await rotate(place, ['--encrypt'], { AUTH_NEW_ENCRYPTION_KEY: OLD_KEY });
  assert.equal(encrypted.from, 'plaintext');
  assert.equal(encrypted.to, `aes-256-ctr:${old.fingerprint}`);
  let cells = await place.cells();
  for (const [name] of VECTORS) assert.ok(has(cells, old.encrypt(name)), `${name} is stored under the key encrypted with`);
  assert.ok(!has(cells, 'alice@example.com') && !has(cells, 'Administrators'), 'no plaintext name is left');
  assert.deepEqual(await answersOn(place, encryptedWith(OLD_KEY), clients), before, 'the same answers once encrypted');
  await refusedStart(place, PLAINTEXT, /the database is encrypted/);
  const again = await runCli(['rotate-encryption-key', '--encrypt'], { ...place.env, AUTH_NEW_ENCRYPTION_KEY: TEST_KEY });
  assert.equal(again.code, 1, 'an encrypted database is not encrypted twice');

  const rotated = await rotate(place, [], { AUTH_ENCRYPTION_KEY: OLD_KEY, AUTH_NEW_ENCRYPTION_KEY: TEST_KEY });
  assert.ok(Number(rotated.cells) > 20, `cells rewritten: ${String(rotated.cells)}`);
  cells = await place.cells();
  for (const [name, stored] of VECTORS) {
    assert.ok(has(cells, stored), `the §8 vector of ${name} is stored`);
    assert.ok(!has(cells, old.encrypt(name)), `nothing of ${name} is left under the old key`);
  }
  assert.ok(!has(cells, 'alice@example.com') && !has(cells, 'Administrators'));
  assert.deepEqual(await answersOn(place, encryptedWith(TEST_KEY), clients), before, 'the same answers under the new key');
  await refusedStart(place, encryptedWith(OLD_KEY), /AUTH_ENCRYPTION_KEY is not the key this database was encrypted with/);
  const wrong = await runCli(['rotate-encryption-key'], { ...place.env, AUTH_ENCRYPTION_KEY: OLD_KEY, AUTH_NEW_ENCRYPTION_KEY: 'yet-another-key' });
  assert.equal(wrong.code, 1, 'rotating from a key that is not the database’s is refused');
  assert.match(wrong.stderr, /not the key this database was encrypted with/);

  const decrypted = await rotate(place, ['--decrypt'], { AUTH_ENCRYPTION_KEY: TEST_KEY });
  assert.equal(decrypted.to, 'plaintext');
  cells = await place.cells();
  for (const [name, stored] of VECTORS) {
    assert.ok(!has(cells, stored), `${name} is no longer sealed`);
    assert.ok(cells.includes(name), `${name} is stored in plaintext`);
  }
  assert.deepEqual(await answersOn(place, PLAINTEXT, clients), before, 'the same answers once decrypted');
  await refusedStart(place, encryptedWith(TEST_KEY), /holds plaintext data/);
}

/** A rotation killed inside its transaction (at a known cell) changes nothing. */
async function interrupted(place: Place): Promise<void> {
  const { server, clients } = await seeded(place, encryptedWith(OLD_KEY));
  await server.stop();
  const cellsBefore = (await place.cells()).sort();
  const before = await answersOn(place, encryptedWith(OLD_KEY), clients);
  const proc = spawnCli(['rotate-encryption-key'], {
    ...place.env,
    AUTH_ENCRYPTION_KEY: OLD_KEY,
    AUTH_NEW_ENCRYPTION_KEY: TEST_KEY,
    AUTH_TEST_MAINTENANCE_STALL_AFTER: '25',
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    proc.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (stderr.includes('{"stalled":25}')) resolve();
    });
    proc.on('exit', () => reject(new Error(`the rotation ended before stalling: ${stderr}`)));
  });
  proc.kill('SIGKILL');
  await once(proc, 'close');
  assert.deepEqual((await place.cells()).sort(), cellsBefore, 'every stored cell as it was');
  assert.deepEqual(await answersOn(place, encryptedWith(OLD_KEY), clients), before, 'the old key still works');
  await refusedStart(place, encryptedWith(TEST_KEY), /AUTH_ENCRYPTION_KEY is not the key/);
}

test('SQLite: encrypt, rotate to the test key (its vectors stored), decrypt: the same answers after each', async (t) => {
  await chain(sqlitePlace(t));
});

test('SQLite: a rotation killed mid-way leaves the database as it was', async (t) => {
  await interrupted(sqlitePlace(t));
});

test('PostgreSQL: encrypt, rotate to the test key (its vectors stored), decrypt: the same answers after each', async (t) => {
  if (!(await requirePostgres(t))) return;
  await chain(await postgresPlace(t));
});

test('PostgreSQL: a rotation killed mid-way leaves the database as it was', async (t) => {
  if (!(await requirePostgres(t))) return;
  await interrupted(await postgresPlace(t));
});
