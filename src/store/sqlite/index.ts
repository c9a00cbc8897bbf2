import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { prepared } from './prepared.ts';
import { whenFree } from './busy.ts';
import { timestamp } from '../../time/index.ts';
import { MIGRATIONS } from '../migrations.ts';
import { ComposedStore } from '../composed.ts';
import { PLAINTEXT_MARK } from '../encryption-mark.ts';
import type { Meta, StoreRoles } from '../port.ts';
import type { AuditRecord } from '../../audit/record.ts';
import { SqliteAudit } from './audit.ts';
import { SqliteTenants } from './tenant.ts';
import { SqliteTokens } from './tokens.ts';
import { SqliteWorkflows } from './workflow.ts';

type Row = Record<string, unknown>;

/**
 * The embedded store: one SQLite file in WAL mode, `synchronous=FULL` so that an acknowledged
 * write survives a crash of the process and of the machine. Made of its roles (tenant.ts,
 * audit.ts, workflow.ts, and {@link SqliteMeta} here) on one connection; better-sqlite3 is
 * synchronous, so each call does its work before it returns (a pool thread runs them).
 */
export class SqliteStore extends ComposedStore {
  readonly #db: Database.Database;

  constructor(path: string) {
    const db = open(path);
    super(roles(db));
    this.#db = db;
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}

/** Opens the file (its folder made first) and applies pending migrations. */
function open(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  whenFree(() => db.exec('PRAGMA journal_mode = WAL'));
  db.exec('PRAGMA synchronous = FULL');
  // No busy handler of SQLite's own: its sleeps grow to 100 ms, far longer than another
  // connection holds the write lock here. whenFree (busy.ts) retries in steps of a fraction of that.
  db.exec('PRAGMA busy_timeout = 0');
  whenFree(() => migrate(db));
  return db;
}

function roles(db: Database.Database): StoreRoles {
  const audit = new SqliteAudit(db);
  const insertAudit = (r: AuditRecord): void => audit.insert(r);
  return {
    tenant: new SqliteTenants(db, insertAudit),
    audit,
    workflow: new SqliteWorkflows(db, insertAudit),
    tokens: new SqliteTokens(db, insertAudit),
    meta: new SqliteMeta(db),
  };
}

/** The database itself (see Meta): reachability, the encryption mark, the cursor secret. */
class SqliteMeta implements Meta {
  readonly #db: Database.Database;
  readonly #st: ReturnType<typeof prepareMeta>;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#st = prepareMeta(db);
  }

  async ping(): Promise<void> {
    whenFree(() => this.#st.ping.get());
  }

  async cursorSecret(): Promise<Buffer> {
    const row = whenFree(() => this.#st.cursorSecret.get()) as Row | undefined;
    if (row === undefined) throw new Error('cursor secret missing from meta');
    return Buffer.from(String(row.value), 'hex');
  }

  async claimEncryption(mark: string): Promise<string> {
    const st = this.#st;
    return whenFree(() =>
      this.#db
        .transaction(() => {
          const known = st.mark.get() as Row | undefined;
          if (known !== undefined) return String(known.value);
          st.setMark.run(st.anyClient.get() === undefined ? mark : PLAINTEXT_MARK);
          return String((st.mark.get() as Row).value);
        })
        .immediate(),
    );
  }
}

function prepareMeta(db: Database.Database) {
  return {
    ping: prepared(db, 'SELECT 1'),
    cursorSecret: prepared(db, `SELECT value FROM meta WHERE key = 'cursor_secret'`),
    mark: prepared(db, `SELECT value FROM meta WHERE key = 'encryption'`),
    anyClient: prepared(db, 'SELECT 1 FROM clients LIMIT 1'),
    setMark: prepared(db, `INSERT OR IGNORE INTO meta (key, value) VALUES ('encryption', ?)`),
  };
}

/** Applies pending migrations under SQLite's write lock, so concurrent starters apply each once. */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    const applied = new Set((prepared(db, 'SELECT version FROM schema_migrations').pluck().all() as number[]).map(Number));
    const record = prepared(db, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      for (const sql of m.sqlite) db.exec(sql);
      record.run(m.version, m.name, timestamp());
    }
  }).immediate();
}
