/**
 * `npm run bench:encryption`: what field encryption (CONTRACT.md §8) costs a hydration, the read
 * of a whole tenant that fills a worker's cache (`store.load`). One tenant of the data set of
 * `dataset.ts` with ROLES_PER_USER roles per user (default: 10,000 users, 100 roles, 10 each:
 * 100,000 memberships, ~3,000 grants) is written twice through the store port in batches
 * (`writeMany`): plaintext, and through an EncryptedStore (the layer the pool threads put over the
 * adapter). Then `load(tenant)` is timed on each, one warm-up and RUNS timed (default 5), median
 * reported; also the build's writes/s (encryption on the write path) and the key derivation
 * (PBKDF2, once per pool thread).
 *
 * PostgreSQL, when reachable (AUTH_TEST_POSTGRESQL_URL, default the local test server; PG=0 skips
 * it): one tenant's writes queue on its row lock there, one transaction each, far too slow to
 * write 100,000 of them within the run's budget; so each of its two databases (migrated by the
 * adapter) gets the rows of the SQLite database of the same mode, copied table by table (the
 * stored texts are the same: the cipher is deterministic).
 *
 * The run fails (exit 1) on a wrong answer: every write must commit, and every load must give the
 * data set back (the encrypted stores decrypted), whatever the speed. Results are printed and
 * written to bench/results/encryption-latest.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Change, Snapshot } from '../src/authz/changes.ts';
import type { TenantId } from '../src/authz/tenant.ts';
import { FieldCipher } from '../src/crypto/field-cipher.ts';
import { EncryptedStore } from '../src/store/wrappers/encrypted.ts';
import { openStore, type StoreSettings } from '../src/store/index.ts';
import type { Store } from '../src/store/port.ts';
import { generate, type Dataset } from './dataset.ts';
import { runMain, timeLimit } from './procs.ts';
import { fmtMs, median, table } from './stats.ts';
import { copyTenant, freshDatabase, postgresMissing } from './databases.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULT_FILE = resolve(ROOT, 'bench', 'results', 'encryption-latest.json');
const KEY = 'bench-encryption-password';
const BATCH = 2_000;
const TIME_LIMIT_S = 600;

function num(name: string, dflt: number, min: number, max: number): number {
  const raw = process.env[name];
  const v = raw === undefined || raw === '' ? dflt : Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`${name}=${raw}: expected an integer in ${min}..${max}`);
  return v;
}

type Mode = 'plaintext' | 'encrypted';
const MODES: readonly Mode[] = ['plaintext', 'encrypted'];

interface Result {
  store: 'sqlite' | 'postgresql';
  mode: Mode;
  /** How the database was filled: through the port, or copied from the SQLite one. */
  built: 'writeMany' | 'copied';
  buildSeconds?: number;
  writesPerSecond?: number;
  loadMs: { median: number; min: number; runs: number[] };
  /** Median load time per membership, µs. */
  usPerMembership: number;
}

/** The data set as the changes that build it: roles, then grants, then memberships. */
function changesOf(ds: Dataset): Change[] {
  const out: Change[] = ds.roles.map((role, i) => ({ op: 'role.create', role, description: `Role ${i} of the benchmark` }));
  ds.grants.forEach((perms, r) => perms.forEach((p) => out.push({ op: 'permission.grant', role: ds.roles[r] ?? '', permission: ds.permissions[p] ?? '' })));
  ds.memberships.forEach((roles, u) => roles.forEach((r) => out.push({ op: 'membership.add', user: ds.users[u] ?? '', role: ds.roles[r] ?? '' })));
  return out;
}

/** A snapshot in one canonical order, so that any store's answer compares with the model's. */
function canonical(s: Snapshot): string {
  const sort = (xs: ReadonlyArray<readonly [string, string]>): string[] => xs.map((x) => `${x[0]}\u0000${x[1]}`).sort();
  return JSON.stringify([s.revision, sort(s.roles), sort(s.grants), sort(s.memberships)]);
}

async function build(store: Store, tenant: TenantId, changes: readonly Change[]): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < changes.length; i += BATCH) {
    const settled = await store.writeMany(changes.slice(i, i + BATCH).map((change) => ({ tenant, change })));
    settled.forEach((s, j) => {
      if (!s.ok || !s.value.ok) throw new Error(`write ${i + j} did not commit: ${JSON.stringify(s)}`);
      if (s.value.revision !== i + j + 1) throw new Error(`write ${i + j} committed at revision ${s.value.revision}`);
    });
  }
  return (performance.now() - started) / 1000;
}

/** One warm-up, then `runs` timed loads; each answer must be the model. */
async function timeLoads(store: Store, tenant: TenantId, want: string, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const started = performance.now();
    const snap = await store.load(tenant);
    const ms = performance.now() - started;
    if (canonical(snap) !== want) throw new Error(`load ${i} did not answer the data set`);
    if (i > 0) times.push(ms);
  }
  return times;
}

function resultOf(store: Result['store'], mode: Mode, times: number[], memberships: number, build?: { seconds: number; writes: number }): Result {
  const med = median(times);
  return {
    store,
    mode,
    built: build === undefined ? 'copied' : 'writeMany',
    ...(build === undefined ? {} : { buildSeconds: build.seconds, writesPerSecond: build.writes / build.seconds }),
    loadMs: { median: med, min: Math.min(...times), runs: times },
    usPerMembership: (med * 1000) / memberships,
  };
}

/**
 * How many stored texts a load decrypts, how many of them differ (a user or role name recurs in
 * every membership it is part of), and what decrypting each distinct one once costs.
 */
interface DecryptCost {
  total: number;
  distinct: number;
  distinctMs: number;
}

async function decryptCost(adapter: Store, tenant: TenantId, cipher: FieldCipher): Promise<DecryptCost> {
  const raw = await adapter.load(tenant);
  const texts = [raw.roles, raw.grants, raw.memberships].flatMap((pairs) => pairs.flatMap((pair) => [pair[0], pair[1]]));
  const distinct = [...new Set(texts)];
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    for (const text of distinct) cipher.decrypt(text);
    times.push(performance.now() - started);
  }
  return { total: texts.length, distinct: distinct.length, distinctMs: median(times) };
}




async function main(): Promise<number> {
  const started = performance.now();
  timeLimit('bench:encryption', TIME_LIMIT_S);
  const shape = {
    seed: num('SEED', 42, 0, 2 ** 31),
    users: num('USERS', 10_000, 1, 1_000_000),
    roles: num('ROLES', 100, 1, 10_000),
    permissions: num('PERMISSIONS', 1_000, 1, 100_000),
    rolesPerUser: num('ROLES_PER_USER', 10, 1, 10_000),
    minGrants: 10,
    maxGrants: 50,
  };
  const runs = num('RUNS', 5, 1, 50);
  const ds = generate(shape);
  const changes = changesOf(ds);
  const memberships = ds.memberships.reduce((n, m) => n + m.length, 0);
  const grants = ds.grants.reduce((n, g) => n + g.length, 0);
  const dataset = { ...shape, grants, memberships, writes: changes.length };
  console.log(`data set: ${ds.users.length} users, ${ds.roles.length} roles, ${grants} grants, ${memberships} memberships (${changes.length} writes, one tenant)`);

  const t0 = performance.now();
  const cipher = new FieldCipher(KEY);
  const pbkdf2Ms = performance.now() - t0;
  const tenant = randomBytes(32).toString('hex') as TenantId;
  const sqlite: Store[] = [];
  const drops: Array<() => Promise<void>> = [];
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-encryption-'));
  const results: Result[] = [];
  const notes: string[] = [];
  let decrypts: DecryptCost | undefined;
  try {
    // The model: what every load must answer, in plaintext.
    const want = canonical({
      revision: changes.length,
      roles: ds.roles.map((role, i) => [role, `Role ${i} of the benchmark`] as const),
      grants: ds.grants.flatMap((perms, r) => perms.map((p) => [ds.roles[r] ?? '', ds.permissions[p] ?? ''] as const)),
      memberships: ds.memberships.flatMap((roles, u) => roles.map((r) => [ds.users[u] ?? '', ds.roles[r] ?? ''] as const)),
    });
    const wrap = (adapter: Store, mode: Mode): Store => (mode === 'encrypted' ? new EncryptedStore(adapter, cipher) : adapter);
    const paths: Record<Mode, string> = { plaintext: join(dir, 'plaintext.sqlite3'), encrypted: join(dir, 'encrypted.sqlite3') };
    for (const mode of MODES) {
      const settings: StoreSettings = { type: 'sqlite', sqlitePath: paths[mode] };
      const adapter = openStore(settings);
      sqlite.push(adapter);
      const store = wrap(adapter, mode);
      const seconds = await build(store, tenant, changes);
      console.log(`sqlite ${mode}: built in ${seconds.toFixed(1)} s (${Math.round(changes.length / seconds)} writes/s)`);
      results.push(resultOf('sqlite', mode, await timeLoads(store, tenant, want, runs), memberships, { seconds, writes: changes.length }));
      if (mode === 'encrypted') decrypts = await decryptCost(adapter, tenant, cipher);
    }

    const missing = await postgresMissing();
    if (missing !== undefined) {
      notes.push(`postgresql skipped: ${missing}`);
      console.log(`postgresql skipped: ${missing}`);
    } else {
      for (const mode of MODES) {
        const db = await freshDatabase();
        drops.push(db.drop);
        const adapter = openStore({ type: 'postgresql', postgresql: { url: db.url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs: 60_000 } });
        drops.unshift(() => adapter.close());
        await adapter.cursorSecret(); // migrates
        await copyTenant(paths[mode], db.url, tenant);
        results.push(resultOf('postgresql', mode, await timeLoads(wrap(adapter, mode), tenant, want, runs), memberships));
      }
    }
  } finally {
    await Promise.all(sqlite.map((s) => s.close()));
    for (const drop of drops) await drop().catch((err: unknown) => console.error(`cleanup: ${String(err)}`));
    rmSync(dir, { recursive: true, force: true });
  }

  const ratios: Record<string, number> = {};
  for (const store of ['sqlite', 'postgresql'] as const) {
    const [plain, enc] = MODES.map((mode) => results.find((r) => r.store === store && r.mode === mode));
    if (plain !== undefined && enc !== undefined) ratios[store] = enc.loadMs.median / plain.loadMs.median;
  }
  console.log(
    `\nhydration of one tenant, load() median of ${runs} after a warm-up\n\n${table([
      ['store', 'mode', 'built by', 'writes/s', 'load ms (median)', 'load ms (min)', 'µs/membership'],
      ...results.map((r) => [
        r.store,
        r.mode,
        r.built,
        r.writesPerSecond === undefined ? '-' : String(Math.round(r.writesPerSecond)),
        fmtMs(r.loadMs.median),
        fmtMs(r.loadMs.min),
        r.usPerMembership.toFixed(2),
      ]),
    ])}\n`,
  );
  for (const [store, ratio] of Object.entries(ratios)) console.log(`encrypted/plaintext load, ${store}: ${ratio.toFixed(2)}x`);
  console.log(`key derivation (PBKDF2, 100,000 rounds, once per pool thread): ${fmtMs(pbkdf2Ms)} ms`);
  if (decrypts !== undefined) {
    console.log(
      `decryptions per load: ${decrypts.total} stored texts, ${decrypts.distinct} distinct; ` +
        `decrypting only the distinct ones takes ${fmtMs(decrypts.distinctMs)} ms (median of 3)`,
    );
  }

  const report = {
    date: new Date().toISOString(),
    ok: true,
    seconds: (performance.now() - started) / 1000,
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version, loadAverageAtStart: loadavg()[0] ?? 0 },
    config: { runs, batch: BATCH },
    dataset,
    pbkdf2Ms,
    decrypts,
    results,
    ratios,
    notes,
  };
  mkdirSync(resolve(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(RESULT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwritten: ${RESULT_FILE} (${report.seconds.toFixed(0)} s)`);
  return 0;
}

runMain('bench:encryption', main);
