import pg from 'pg';
import type { FieldCipher } from '../../crypto/field-cipher.ts';
import {
  announceStall,
  checkRekeyFrom,
  MaintenanceError,
  markOf,
  stallPoint,
  type BackupReport,
  type Maintenance,
  type Progress,
  type RekeyReport,
  type RestoreReport,
} from '../maintenance.ts';
import { cellRewrite, SEALED_TABLES, type SealedKind } from '../sealed-columns.ts';
import { presentTables, restoreArchive, serviceTables, writeArchive } from './archive.ts';
import { migrate } from './index.ts';

/** The service's connections name themselves so (store/postgres/index.ts); the command line's do not. */
const SERVICE_APPLICATION = 'rbac-gateway';
const CLI_APPLICATION = 'rbac-gateway-cli';
/** Any 64-bit key, the same as the migrations': a service starting meanwhile waits for the command. */
const MIGRATION_LOCK = 0x72626163;
/** Rows re-keyed per round trip. */
const BATCH = 2000;

/**
 * The PostgreSQL side of {@link Maintenance}. Backups read one snapshot while the service runs.
 * A restore or a re-keying runs in one transaction that first refuses while a connection of the
 * service is open on the database (the service keeps some while it runs), then takes the
 * migrations' lock and an exclusive lock on every table of the service, so an instance started
 * meanwhile waits until the command is done, then finds the database as it left it.
 */
export class PostgresMaintenance implements Maintenance {
  readonly database = 'postgresql';
  readonly #url: string;

  constructor(url: string) {
    this.#url = url;
  }

  async backup(out: string, options: { readonly force: boolean }, progress: Progress): Promise<BackupReport> {
    return this.#with((db) => writeArchive(db, out, options.force, progress));
  }

  async restore(input: string, options: { readonly force: boolean }, progress: Progress): Promise<RestoreReport> {
    return this.#with((db) => this.#exclusively(db, () => restoreArchive(db, input, options.force, progress)));
  }

  async rekey(from: FieldCipher | undefined, to: FieldCipher | undefined, progress: Progress): Promise<RekeyReport> {
    return this.#with((db) =>
      this.#exclusively(db, async () => {
        await migrate(db);
        const stored = (await db.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'encryption'`)).rows[0]?.value;
        const hasClients = (await db.query('SELECT 1 FROM clients LIMIT 1')).rowCount !== 0;
        checkRekeyFrom(stored, hasClients, from);
        const tables = await rekeyAll(db, from, to, progress);
        await db.query(`INSERT INTO meta (key, value) VALUES ('encryption', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [markOf(to)]);
        return { database: 'postgresql', from: stored ?? markOf(from), to: markOf(to), tables };
      }),
    );
  }

  async close(): Promise<void> {}

  async #with<T>(body: (db: pg.Client) => Promise<T>): Promise<T> {
    const db = new pg.Client({ connectionString: this.#url, application_name: CLI_APPLICATION, connectionTimeoutMillis: 10_000 });
    db.on('error', () => undefined);
    try {
      await db.connect();
    } catch (err) {
      throw new MaintenanceError(`cannot connect to PostgreSQL (AUTH_POSTGRESQL_URL): ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      return await body(db);
    } finally {
      await db.end().catch(() => undefined);
    }
  }

  /** `body` in one transaction, the service refused and locked out (see the class); rolled back on any failure. */
  async #exclusively<T>(db: pg.Client, body: () => Promise<T>): Promise<T> {
    await db.query('BEGIN');
    try {
      const running = await db.query(
        'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()',
        [SERVICE_APPLICATION],
      );
      if (running.rowCount !== 0) {
        throw new MaintenanceError(
          `the database is in use by the service (${running.rowCount} connections named ${SERVICE_APPLICATION}): stop every instance first`,
        );
      }
      await db.query(`SET LOCAL lock_timeout = '10s'`);
      await db.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const tables = await presentTables(db);
      if (tables.length > 0) await db.query(`LOCK TABLE ${tables.map((t) => `"${t}"`).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      const value = await body();
      await db.query('COMMIT');
      return value;
    } catch (err) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

/** The types of the sealed columns: descriptions are bytea holding UTF-8, every other one text. */
async function columnTypes(db: pg.ClientBase): Promise<Map<string, string>> {
  const { rows } = await db.query<{ t: string; c: string; type: string }>(
    `SELECT table_name AS t, column_name AS c, data_type AS type FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ANY($1::text[])`,
    [serviceTables()],
  );
  return new Map(rows.map((r) => [`${r.t}.${r.c}`, r.type]));
}

/**
 * Rewrites every sealed cell, table by table: a cursor reads the rows as they were when it opened
 * (so a row already rewritten is never read again) and each batch is written back by row address.
 */
async function rekeyAll(db: pg.ClientBase, from: FieldCipher | undefined, to: FieldCipher | undefined, progress: Progress): Promise<Record<string, number>> {
  const types = await columnTypes(db);
  const counts: Record<string, number> = {};
  for (const { table, columns } of SEALED_TABLES) {
    const cols = Object.keys(columns).map((c) => `count("${c}")`);
    counts[table] = Number((await db.query<{ n: string }>(`SELECT ${cols.join(' + ')} AS n FROM "${table}"`)).rows[0]?.n ?? 0);
  }
  progress.begin(
    Object.values(counts).reduce((a, b) => a + b, 0),
    'cells',
  );
  const rewrite = cellRewrite(from, to);
  const stallAt = stallPoint();
  let done = 0;
  for (const { table, columns } of SEALED_TABLES) {
    const cols = Object.entries(columns).map(([name, kind]) => ({ name, kind, bytes: types.get(`${table}.${name}`) === 'bytea' }));
    await db.query(`DECLARE rekey_rows NO SCROLL CURSOR FOR SELECT ctid::text AS row_id, ${cols.map((c) => `"${c.name}"`).join(', ')} FROM "${table}"`);
    for (;;) {
      const { rows } = await db.query<Record<string, unknown>>(`FETCH ${BATCH} FROM rekey_rows`);
      if (rows.length === 0) break;
      const values = cols.map((c) =>
        rows.map((r) => {
          const cell = r[c.name];
          if (cell === null || cell === undefined) return null;
          done += 1;
          if (done === stallAt) announceStall(done);
          const out = rewrite(c.kind as SealedKind, Buffer.isBuffer(cell) ? cell.toString('utf8') : String(cell));
          return c.bytes ? Buffer.from(out, 'utf8') : out;
        }),
      );
      if (stallAt !== undefined && done >= stallAt) await new Promise<never>(() => setInterval(() => undefined, 60_000));
      const sets = cols.map((c) => `"${c.name}" = v."${c.name}"`).join(', ');
      const unnest = cols.map((c, i) => `$${i + 2}::${c.bytes ? 'bytea' : 'text'}[]`).join(', ');
      await db.query(
        `UPDATE "${table}" t SET ${sets} FROM unnest($1::tid[], ${unnest}) AS v(row_id, ${cols.map((c) => `"${c.name}"`).join(', ')})
         WHERE t.ctid = ANY($1::tid[]) AND t.ctid = v.row_id`,
        [rows.map((r) => r.row_id), ...values],
      );
      progress.update(done);
    }
    await db.query('CLOSE rekey_rows');
  }
  return counts;
}
