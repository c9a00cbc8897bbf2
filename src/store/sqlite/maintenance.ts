import { closeSync, existsSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { FieldCipher } from '../../crypto/field-cipher.ts';
import { MIGRATIONS } from '../migrations.ts';
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
import { isSqliteBusy } from '../transient.ts';
import { migrate } from './index.ts';
import { prepared } from './prepared.ts';

/** Pages copied per step of an online backup while nothing else writes (the progress bar moves). */
const STEP_PAGES = 256;
/** Tables that hold no client data: a database holding only these is empty. */
const BOOKKEEPING = new Set(['meta', 'schema_migrations', 'workflow_lease', 'sqlite_sequence']);
const stallCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * The SQLite side of {@link Maintenance}. A backup copies the file through SQLite's online backup
 * API from a plain reading connection, so the service keeps reading and writing meanwhile. A
 * restore or a re-keying first takes the database's lock for good (`locking_mode=EXCLUSIVE`): a
 * running service holds the file open, which refuses that lock, so the command refuses to run;
 * and a service started meanwhile cannot open it until the command is done.
 */
export class SqliteMaintenance implements Maintenance {
  readonly database = 'sqlite';
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async backup(out: string, options: { readonly force: boolean }, progress: Progress): Promise<BackupReport> {
    if (!existsSync(this.#path)) throw new MaintenanceError(`there is no database at ${this.#path} (AUTH_SQLITE_PATH)`);
    if (existsSync(out) && !options.force) throw new MaintenanceError(`${out} exists: choose a new file, or --force to replace it`);
    const partial = `${out}.partial-${process.pid}`;
    const db = new Database(this.#path, { fileMustExist: true });
    try {
      db.exec('PRAGMA busy_timeout = 5000');
      const steps = backupSteps(progress);
      steps.finished((await db.backup(partial, { progress: steps.next })).totalPages);
      progress.end();
      const copy = new Database(partial, { fileMustExist: true });
      let report: Omit<BackupReport, 'out' | 'bytes'>;
      try {
        const check = prepared(copy, 'PRAGMA quick_check').pluck().get();
        if (check !== 'ok') throw new MaintenanceError(`the copy does not pass SQLite's check: ${String(check)}`);
        report = { database: 'sqlite', format: 'sqlite', schemaVersion: schemaVersion(copy), tables: rowCounts(copy) };
      } finally {
        copy.close();
      }
      renameSync(partial, out);
      return { ...report, out, bytes: statSync(out).size };
    } finally {
      db.close();
      rmSync(partial, { force: true });
    }
  }

  async restore(input: string, options: { readonly force: boolean }, progress: Progress): Promise<RestoreReport> {
    const version = backupVersion(input);
    mkdirSync(dirname(this.#path), { recursive: true });
    const db = this.#locked(true);
    try {
      const filled = dataTables(db, 'main').filter((t) => count(db, 'main', t) > 0);
      if (filled.length > 0 && !options.force) {
        throw new MaintenanceError(
          `the database at ${this.#path} is not empty (${filled.join(', ')} hold rows): restore into an empty one, or --force to replace it`,
        );
      }
      db.exec(`ATTACH DATABASE ${quoteText(input)} AS backup`);
      const tables = copyFrom(db, progress);
      db.exec('DETACH DATABASE backup');
      migrate(db);
      return { database: 'sqlite', in: input, schemaVersion: version, tables };
    } finally {
      progress.end();
      db.close();
    }
  }

  async rekey(from: FieldCipher | undefined, to: FieldCipher | undefined, progress: Progress): Promise<RekeyReport> {
    if (!existsSync(this.#path)) throw new MaintenanceError(`there is no database at ${this.#path} (AUTH_SQLITE_PATH)`);
    const db = this.#locked(false);
    try {
      migrate(db);
      const stored = prepared(db, `SELECT value FROM meta WHERE key = 'encryption'`).pluck().get() as string | undefined;
      checkRekeyFrom(stored, count(db, 'main', 'clients') > 0, from);
      const tables = rekeyAll(db, from, to, progress);
      return { database: 'sqlite', from: stored ?? markOf(from), to: markOf(to), tables };
    } finally {
      progress.end();
      db.close();
    }
  }

  async close(): Promise<void> {}

  /**
   * A connection that holds the database's lock until it closes. Refused while another connection
   * (a running service) has the file open: in WAL mode an open connection keeps a shared lock.
   */
  #locked(create: boolean): Database.Database {
    const db = new Database(this.#path, { fileMustExist: !create });
    try {
      db.exec('PRAGMA busy_timeout = 0');
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE');
      db.exec('COMMIT');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      return db;
    } catch (err) {
      db.close();
      if (isSqliteBusy(err)) throw new MaintenanceError(`the database at ${this.#path} is in use: stop the service (every process using this file) first`);
      throw err;
    }
  }
}

/**
 * The online backup's pace: small steps while the source stays put, so the bar moves; once a
 * write elsewhere restarted the copy (the pages left grow again), the rest in one step, which
 * holds one read snapshot throughout and so cannot be restarted again.
 */
function backupSteps(progress: Progress): { next: (p: { totalPages: number; remainingPages: number }) => number; finished: (pages: number) => void } {
  let left = Infinity;
  let restarted = false;
  let total = -1;
  const at = (totalPages: number, remainingPages: number): void => {
    if (totalPages !== total) progress.begin((total = totalPages), 'pages');
    progress.update(totalPages - remainingPages);
  };
  return {
    next: ({ totalPages, remainingPages }) => {
      at(totalPages, remainingPages);
      if (remainingPages > left) restarted = true;
      left = remainingPages;
      return restarted ? 0x7fffffff : STEP_PAGES;
    },
    finished: (pages) => at(pages, 0),
  };
}

/** The schema version a backup file is at; refuses what is no backup of this service, or of a newer version. */
function backupVersion(input: string): number {
  if (!existsSync(input)) throw new MaintenanceError(`there is no file ${input}`);
  const head = Buffer.alloc(16);
  const fd = openSync(input, 'r');
  try {
    readSync(fd, head, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (head.toString('latin1') !== 'SQLite format 3\0') {
    throw new MaintenanceError(`${input} is not a SQLite backup (a PostgreSQL archive restores into PostgreSQL only)`);
  }
  const db = new Database(input, { readonly: true, fileMustExist: true });
  try {
    if (!dataTables(db, 'main').includes('clients')) throw new MaintenanceError(`${input} is not a backup of this service's database`);
    const version = schemaVersion(db);
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    if (version > latest)
      throw new MaintenanceError(`${input} is at schema version ${version}, newer than this build's ${latest}: restore with a newer version`);
    return version;
  } finally {
    db.close();
  }
}

function schemaVersion(db: Database.Database): number {
  return Number(prepared(db, 'SELECT max(version) FROM schema_migrations').pluck().get() ?? 0);
}

/** The tables of schema `schema`, SQLite's own left out. */
function tablesOf(db: Database.Database, schema: string): string[] {
  return prepared(db, `SELECT name FROM ${schema}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).pluck().all() as string[];
}

const dataTables = (db: Database.Database, schema: string): string[] => tablesOf(db, schema).filter((t) => !BOOKKEEPING.has(t));

function count(db: Database.Database, schema: string, table: string): number {
  return Number(
    prepared(db, `SELECT count(*) FROM ${schema}.${quoteName(table)}`)
      .pluck()
      .get(),
  );
}

function rowCounts(db: Database.Database): Record<string, number> {
  return Object.fromEntries(tablesOf(db, 'main').map((t) => [t, count(db, 'main', t)]));
}

const quoteName = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const quoteText = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * Replaces everything in `main` with the attached backup, in one transaction: its tables made
 * from the backup's own statements (so at its schema version), its rows, its indexes, and
 * SQLite's AUTOINCREMENT counters (ids of deleted audit rows are not given again).
 */
function copyFrom(db: Database.Database, progress: Progress): Record<string, number> {
  const tables = tablesOf(db, 'backup');
  const counts = Object.fromEntries(tables.map((t) => [t, count(db, 'backup', t)]));
  progress.begin(
    Object.values(counts).reduce((a, b) => a + b, 0),
    'rows',
  );
  db.transaction(() => {
    for (const t of tablesOf(db, 'main')) db.exec(`DROP TABLE main.${quoteName(t)}`);
    let done = 0;
    const objects = (type: string): string[] =>
      prepared(db, `SELECT sql FROM backup.sqlite_master WHERE type = ? AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
        .pluck()
        .all(type) as string[];
    for (const sql of objects('table')) db.exec(sql);
    for (const t of tables) {
      db.exec(`INSERT INTO main.${quoteName(t)} SELECT * FROM backup.${quoteName(t)}`);
      progress.update((done += counts[t] ?? 0));
    }
    for (const sql of objects('index')) db.exec(sql);
    if (hasSequence(db, 'backup')) {
      db.exec('DELETE FROM main.sqlite_sequence');
      db.exec('INSERT INTO main.sqlite_sequence SELECT * FROM backup.sqlite_sequence');
    }
  }).exclusive();
  return counts;
}

function hasSequence(db: Database.Database, schema: string): boolean {
  return prepared(db, `SELECT 1 FROM ${schema}.sqlite_master WHERE name = 'sqlite_sequence'`).get() !== undefined;
}

/**
 * Rewrites every sealed cell and the mark in one transaction: one UPDATE per table, through a
 * function of this connection that re-keys a cell (SQLite runs each row once, whatever the
 * order its key moves in). Fails closed: a cell that does not open with `from` aborts it all.
 */
function rekeyAll(db: Database.Database, from: FieldCipher | undefined, to: FieldCipher | undefined, progress: Progress): Record<string, number> {
  const plan = SEALED_TABLES.map(({ table, columns }) => ({ table, columns: Object.entries(columns) }));
  const cells = (table: string, columns: ReadonlyArray<readonly [string, SealedKind]>): number =>
    Number(
      prepared(db, `SELECT ${columns.map(([c]) => `count(${quoteName(c)})`).join(' + ')} FROM ${quoteName(table)}`)
        .pluck()
        .get(),
    );
  const counts = Object.fromEntries(plan.map((p) => [p.table, cells(p.table, p.columns)]));
  progress.begin(
    Object.values(counts).reduce((a, b) => a + b, 0),
    'cells',
  );
  const rewrite = cellRewrite(from, to);
  const stallAt = stallPoint();
  let done = 0;
  db.function('rbac_rekey', { deterministic: true, directOnly: true }, (kind: unknown, stored: unknown) => {
    if (stored === null) return null;
    if (++done % 1000 === 0) progress.update(done);
    if (done === stallAt) stall(done);
    return rewrite(kind as SealedKind, String(stored));
  });
  db.transaction(() => {
    for (const { table, columns } of plan) {
      const sets = columns.map(([c, kind]) => `${quoteName(c)} = rbac_rekey('${kind}', ${quoteName(c)})`).join(', ');
      prepared(db, `UPDATE ${quoteName(table)} SET ${sets}`).run();
    }
    prepared(db, `INSERT OR REPLACE INTO meta (key, value) VALUES ('encryption', ?)`).run(markOf(to));
  }).exclusive();
  progress.update(done);
  return counts;
}

/** See stallPoint: waits (blocking: SQLite is inside the transaction) until the process is killed. */
function stall(cells: number): void {
  announceStall(cells);
  for (;;) Atomics.wait(stallCell, 0, 0, 60_000);
}
