import pg from 'pg';
import type { PoolClient, QueryResult } from 'pg';
import { appError } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';
import { MIGRATIONS } from '../migrations.ts';
import { ComposedStore } from '../composed.ts';
import { PLAINTEXT_MARK } from '../encryption-mark.ts';
import type { Meta, StoreRoles } from '../port.ts';
import type { PostgresSettings } from '../settings.ts';
import { storeFailure, transience } from '../transient.ts';
import { PostgresAudit } from './audit.ts';
import { run, statement as s, type Db, type PostgresAccess, type Row, type Statement, type TxBody } from './sql.ts';
import { PostgresTenants } from './tenant.ts';
import { PostgresTokens } from './tokens.ts';
import { PostgresWorkflows } from './workflow.ts';

/** Any 64-bit key, the same in every process: serialises migrations across processes. */
const MIGRATION_LOCK = 0x72626163; // "rbac"

/**
 * The shared store: PostgreSQL through a pg connection pool, made of its roles (tenant.ts,
 * audit.ts, workflow.ts, and {@link PostgresMeta} here) over one {@link Connection}. Migrations
 * run on first use, under an advisory lock. Failures are thrown as catalogued errors (see
 * `../transient.ts`).
 */
export class PostgresStore extends ComposedStore {
  readonly #connection: Connection;

  constructor(settings: PostgresSettings) {
    const connection = new Connection(settings);
    super({
      tenant: new PostgresTenants(connection),
      audit: new PostgresAudit(connection),
      workflow: new PostgresWorkflows(connection),
      tokens: new PostgresTokens(connection),
      meta: new PostgresMeta(connection),
    } satisfies StoreRoles);
    this.#connection = connection;
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}

/** The pool of one store, migrated before its first statement: what every role runs on. */
class Connection implements PostgresAccess {
  readonly #pool: pg.Pool;
  #ready: Promise<void> | undefined;

  constructor(settings: PostgresSettings) {
    this.#pool = new pg.Pool({
      connectionString: settings.url,
      max: settings.poolMax,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      statement_timeout: settings.statementTimeoutMs,
      // The server cancels at statement_timeout; this catches a server or network that went silent.
      query_timeout: settings.statementTimeoutMs + 1000,
      idle_in_transaction_session_timeout: settings.statementTimeoutMs * 2,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'rbac-gateway',
    });
    // An idle connection that dies (server restart, network) is dropped by the pool; without a
    // listener the 'error' event would kill the process. The next call connects anew.
    this.#pool.on('error', () => undefined);
  }

  /** Migrates once per store; a failed attempt is retried by the next call. */
  #migrated(): Promise<void> {
    this.#ready ??= this.#tx('migrate', migrate).catch((err: unknown) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }

  async query(what: string, st: Statement, values: unknown[]): Promise<QueryResult<Row>> {
    await this.#migrated();
    try {
      return await run(this.#pool, st, values);
    } catch (err) {
      throw storeFailure(err, what);
    }
  }

  async tx<T>(what: string, begin: string, body: TxBody<T>): Promise<T> {
    await this.#migrated();
    return this.#tx(what, body, begin);
  }

  /**
   * Runs `body` in a transaction on one connection, opened by `begin` (an isolation level may
   * follow BEGIN). `body` answers whether to commit. A connection lost while COMMIT was in flight
   * is ERR_STORE_COMMIT_UNKNOWN (never retried: the transaction may be in); any failure before it
   * means nothing was committed.
   */
  async #tx<T>(what: string, body: TxBody<T>, begin = 'BEGIN'): Promise<T> {
    let db: PoolClient;
    try {
      db = await this.#pool.connect();
    } catch (err) {
      throw storeFailure(err, what);
    }
    // A connection that breaks between two statements emits 'error' on the checked-out connection,
    // which the pool does not listen to: without this the error would take the thread down. The
    // next statement fails on its own and is handled below.
    const ignore = (): void => undefined;
    db.on('error', ignore);
    let committing = false;
    try {
      await db.query(begin);
      const { commit, value } = await body(db);
      committing = commit;
      await db.query(commit ? 'COMMIT' : 'ROLLBACK');
      db.off('error', ignore);
      db.release();
      return value;
    } catch (err) {
      db.off('error', ignore);
      db.release(true); // unknown state: close the connection rather than reuse it
      if (committing && transience(err) === 'unavailable') {
        throw appError('ERR_STORE_COMMIT_UNKNOWN', { what });
      }
      throw storeFailure(err, what);
    }
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}

const SQL = {
  /** Records the mark unless one is there; a database with clients and no mark is plaintext. */
  claimEncryption: s(
    'claim_encryption',
    `INSERT INTO meta (key, value)
     SELECT 'encryption', CASE WHEN EXISTS (SELECT 1 FROM clients) THEN $2 ELSE $1 END
     ON CONFLICT (key) DO NOTHING`,
  ),
  encryptionMark: s('encryption_mark', `SELECT value FROM meta WHERE key = 'encryption'`),
  cursorSecret: s('cursor_secret', `SELECT value FROM meta WHERE key = 'cursor_secret'`),
  ping: s('ping', 'SELECT 1'),
} as const;

/** The database itself (see Meta): reachability, the encryption mark, the cursor secret. */
class PostgresMeta implements Meta {
  readonly #db: PostgresAccess;

  constructor(db: PostgresAccess) {
    this.#db = db;
  }

  async ping(): Promise<void> {
    await this.#db.query('ping', SQL.ping, []);
  }

  async cursorSecret(): Promise<Buffer> {
    const row = (await this.#db.query('cursorSecret', SQL.cursorSecret, [])).rows[0];
    if (row === undefined) throw appError('ERR_INTERNAL', 'cursor secret missing from meta');
    return Buffer.from(String(row.value), 'hex');
  }

  async claimEncryption(mark: string): Promise<string> {
    await this.#db.query('encryption', SQL.claimEncryption, [mark, PLAINTEXT_MARK]);
    const row = (await this.#db.query('encryption', SQL.encryptionMark, [])).rows[0];
    return String(row?.value);
  }
}

/**
 * Applies pending migrations in one transaction under a transaction-scoped advisory lock: a
 * process that starts while another migrates waits, then finds the versions recorded and applies
 * nothing. PostgreSQL's DDL is transactional, so a failed migration leaves no half-made schema.
 */
export async function migrate(db: Db): Promise<{ commit: boolean; value: undefined }> {
  await db.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const applied = new Set((await db.query<Row>('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)));
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    for (const sql of m.postgresql) await db.query(sql);
    await db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, timestamp()]);
  }
  return { commit: true, value: undefined };
}
