import { createReadStream, createWriteStream, existsSync, fsyncSync, openSync, closeSync, renameSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type pg from 'pg';
import { MIGRATIONS } from '../migrations.ts';
import { ARCHIVE_FORMAT, MaintenanceError, type BackupReport, type Progress, type RestoreReport } from '../maintenance.ts';
import { migrate } from './index.ts';

/**
 * PostgreSQL's backup: a portable NDJSON archive of every table of the service, read in one
 * REPEATABLE READ snapshot (consistent, and writers are never blocked). Lines: a header
 * `{"format":"rbac-gateway.backup","version":1,"database":"postgresql","schema_version":V,
 * "taken_at":T,"tables":{name:rows}}`, then per table `{"table":name,"rows":n}` and its rows as
 * PostgreSQL's `row_to_json` (bytea as `\x` hex), and last `{"end":true,"rows":total}`, without
 * which an archive is refused as cut short.
 */
const ARCHIVE_VERSION = 1;
/** Rows fetched from a cursor, or inserted, at a time. */
const BATCH = 2000;
/** The bookkeeping that holds no client data: a database with rows only there is empty. */
const BOOKKEEPING = new Set(['meta', 'schema_migrations', 'workflow_lease']);

const quoteName = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * The tables the migrations make (named in their CREATE TABLE statements, renames followed),
 * and the migrations' own record: what belongs to the service in a database that may hold others.
 */
export function serviceTables(): string[] {
  const names = new Set(['schema_migrations']);
  for (const sql of MIGRATIONS.flatMap((m) => m.postgresql)) {
    for (const [, name] of sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?(\w+)"?/gi)) names.add(String(name));
    for (const [, from, to] of sql.matchAll(/ALTER TABLE "?(\w+)"? RENAME TO "?(\w+)"?/gi)) {
      names.delete(String(from));
      names.add(String(to));
    }
    for (const [, name] of sql.matchAll(/DROP TABLE (?:IF EXISTS )?"?(\w+)"?/gi)) names.delete(String(name));
  }
  return [...names].sort();
}

/** The service's tables present in the connection's schema. */
export async function presentTables(db: pg.ClientBase): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name = ANY($1::text[]) ORDER BY table_name`,
    [serviceTables()],
  );
  return rows.map((r) => r.name);
}

async function countRows(db: pg.ClientBase, table: string): Promise<number> {
  return Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteName(table)}`)).rows[0]?.n ?? 0);
}

async function schemaVersion(db: pg.ClientBase): Promise<number> {
  return Number((await db.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations')).rows[0]?.v ?? 0);
}

/** Writes the archive of `db`'s snapshot to `out` (through a partial file, renamed once complete and synced). */
export async function writeArchive(db: pg.ClientBase, out: string, force: boolean, progress: Progress): Promise<BackupReport> {
  if (existsSync(out) && !force) throw new MaintenanceError(`${out} exists: choose a new file, or --force to replace it`);
  const partial = `${out}.partial-${process.pid}`;
  const file = createWriteStream(partial);
  const write = async (line: string): Promise<void> => {
    if (!file.write(`${line}\n`)) await once(file, 'drain');
  };
  try {
    await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const tables = await presentTables(db);
    if (!tables.includes('schema_migrations')) throw new MaintenanceError('the database holds no data of this service (no schema_migrations table)');
    const counts: Record<string, number> = {};
    for (const t of tables) counts[t] = await countRows(db, t);
    const version = await schemaVersion(db);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    await write(
      JSON.stringify({
        format: ARCHIVE_FORMAT,
        version: ARCHIVE_VERSION,
        database: 'postgresql',
        schema_version: version,
        taken_at: new Date().toISOString(),
        tables: counts,
      }),
    );
    progress.begin(total, 'rows');
    let done = 0;
    for (const t of tables) {
      await write(JSON.stringify({ table: t, rows: counts[t] }));
      await db.query(`DECLARE archive_rows NO SCROLL CURSOR FOR SELECT row_to_json(x)::text AS j FROM ${quoteName(t)} x`);
      for (;;) {
        const { rows } = await db.query<{ j: string }>(`FETCH ${BATCH} FROM archive_rows`);
        for (const r of rows) await write(r.j);
        progress.update((done += rows.length));
        if (rows.length < BATCH) break;
      }
      await db.query('CLOSE archive_rows');
    }
    await write(JSON.stringify({ end: true, rows: total }));
    await db.query('COMMIT');
    file.end();
    await once(file, 'finish');
    syncFile(partial);
    renameSync(partial, out);
    return { database: 'postgresql', out, format: 'ndjson', bytes: statSync(out).size, schemaVersion: version, tables: counts };
  } finally {
    progress.end();
    file.destroy();
    rmSync(partial, { force: true });
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

interface Header {
  readonly version: number;
  readonly schemaVersion: number;
  readonly tables: Record<string, number>;
}

function readHeader(line: string | undefined, input: string): Header {
  let h: Record<string, unknown> = {};
  try {
    h = JSON.parse(line ?? '') as Record<string, unknown>;
  } catch {
    // answered below
  }
  if (h.format !== ARCHIVE_FORMAT || h.database !== 'postgresql') throw new MaintenanceError(`${input} is not a PostgreSQL backup of this service`);
  if (h.version !== ARCHIVE_VERSION)
    throw new MaintenanceError(`${input} is an archive of version ${String(h.version)}; this build reads version ${ARCHIVE_VERSION}`);
  const latest = Math.max(...MIGRATIONS.map((m) => m.version));
  const schema = Number(h.schema_version);
  if (!(schema >= 1 && schema <= latest)) throw new MaintenanceError(`${input} is at schema version ${schema}; this build knows versions 1 to ${latest}`);
  const tables = h.tables as Record<string, number>;
  const unknown = Object.keys(tables).filter((t) => !serviceTables().includes(t));
  if (unknown.length > 0) throw new MaintenanceError(`${input} holds tables this build does not know: ${unknown.join(', ')}`);
  return { version: Number(h.version), schemaVersion: schema, tables };
}

/**
 * Restores the archive at `input` into `db`, inside the caller's transaction: the service's
 * tables dropped (refused while one holds data, unless `force`), the schema made again at the
 * archive's version, its rows loaded, identity counters moved past them, then the migrations
 * since applied. Transaction ids of the archive's cluster mean nothing here: `xid8` columns get 0
 * ("read whole at start", see migrations 4 and 6).
 */
export async function restoreArchive(db: pg.ClientBase, input: string, force: boolean, progress: Progress): Promise<RestoreReport> {
  if (!existsSync(input)) throw new MaintenanceError(`there is no file ${input}`);
  const lines = createInterface({ input: createReadStream(input, 'utf8'), crlfDelay: Infinity })[Symbol.asyncIterator]();
  const next = async (): Promise<string | undefined> => {
    const r = await lines.next();
    return r.done === true ? undefined : r.value;
  };
  const header = readHeader(await next(), input);
  await clearSchema(db, force);
  await db.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  for (const m of MIGRATIONS.filter((m) => m.version <= header.schemaVersion)) for (const sql of m.postgresql) await db.query(sql);
  for (const t of Object.keys(header.tables)) await db.query(`DELETE FROM ${quoteName(t)}`);
  progress.begin(
    Object.values(header.tables).reduce((a, b) => a + b, 0),
    'rows',
  );
  const loaded = await loadRows(db, next, input, progress);
  await db.query(`DO $$ DECLARE c record; BEGIN
    FOR c IN SELECT table_name, column_name FROM information_schema.columns
             WHERE table_schema = current_schema() AND is_identity = 'YES' AND table_name = ANY(${arrayLiteral(serviceTables())}) LOOP
      EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, %L), COALESCE((SELECT max(%I) FROM %I), 0) + 1, false)', c.table_name, c.column_name, c.column_name, c.table_name);
    END LOOP;
    FOR c IN SELECT table_name, column_name FROM information_schema.columns
             WHERE table_schema = current_schema() AND data_type = 'xid8' AND table_name = ANY(${arrayLiteral(serviceTables())}) LOOP
      EXECUTE format('UPDATE %I SET %I = ''0''', c.table_name, c.column_name);
    END LOOP;
  END $$`);
  await migrate(db);
  progress.end();
  return { database: 'postgresql', in: input, schemaVersion: header.schemaVersion, tables: loaded };
}

const arrayLiteral = (names: readonly string[]): string => `ARRAY[${names.map((n) => `'${n.replaceAll("'", "''")}'`).join(', ')}]::text[]`;

/** Drops the service's tables; refused while any but the bookkeeping holds a row, unless `force`. */
async function clearSchema(db: pg.ClientBase, force: boolean): Promise<void> {
  const present = await presentTables(db);
  const filled: string[] = [];
  for (const t of present) if (!BOOKKEEPING.has(t) && (await countRows(db, t)) > 0) filled.push(t);
  if (filled.length > 0 && !force) {
    throw new MaintenanceError(`the database is not empty (${filled.join(', ')} hold rows): restore into an empty one, or --force to replace it`);
  }
  for (const t of present) await db.query(`DROP TABLE ${quoteName(t)} CASCADE`);
}

/** Reads the table sections up to the end line, inserting rows in batches. */
async function loadRows(db: pg.ClientBase, next: () => Promise<string | undefined>, input: string, progress: Progress): Promise<Record<string, number>> {
  const loaded: Record<string, number> = {};
  let done = 0;
  for (let line = await next(); ;) {
    if (line === undefined) throw new MaintenanceError(`${input} is cut short (no end line): nothing was restored`);
    const section = JSON.parse(line) as { table?: string; rows?: number; end?: boolean };
    if (section.end === true) return loaded;
    const table = section.table;
    if (table === undefined || !serviceTables().includes(table)) throw new MaintenanceError(`${input}: unexpected line ${line.slice(0, 80)}`);
    let batch: string[] = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const sql = `INSERT INTO ${quoteName(table)} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::${quoteName(table)}, $1::json)`;
      await db.query(sql, [`[${batch.join(',')}]`]);
      progress.update((done += batch.length));
      batch = [];
    };
    loaded[table] = 0;
    for (line = await next(); line !== undefined && line.startsWith('{"') && !isSection(line); line = await next()) {
      batch.push(line);
      loaded[table] += 1;
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    if (loaded[table] !== section.rows) throw new MaintenanceError(`${input}: table ${table} has ${loaded[table]} rows, its section says ${section.rows}`);
  }
}

/** A section or end line, as opposed to a row (rows are objects of the table's columns). */
const isSection = (line: string): boolean => line.startsWith('{"table":') || line.startsWith('{"end":');
