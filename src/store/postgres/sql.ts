import type { PoolClient, QueryResult } from 'pg';

/**
 * How the PostgreSQL roles speak to the database. Each statement has a name, so pg prepares it
 * once per connection; each role keeps its own statements in its file. `"user"` is quoted (a
 * reserved word); descriptions are bytea holding UTF-8.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** A statement named `rbac_<name>` (the names are shared by every role of one connection: keep them unique). */
export const statement = (name: string, text: string): Statement => ({ name: `rbac_${name}`, text });

export type Row = Record<string, unknown>;
/** A connection (or the pool) to run statements on. */
export type Db = Pick<PoolClient, 'query'>;
/** A transaction's body: its value, and whether to commit. */
export type TxBody<T> = (db: Db) => Promise<{ commit: boolean; value: T }>;

/** Runs a named statement. */
export const run = (db: Db, st: Statement, values: unknown[]): Promise<QueryResult<Row>> => db.query<Row>({ name: st.name, text: st.text, values });

/**
 * What the roles use of the store's connection pool (store/postgres/index.ts): a statement outside
 * a transaction, and transactions. Both wait for the migrations first, and throw failures
 * catalogued (`what` names the call in them; see ../transient.ts).
 */
export interface PostgresAccess {
  query(what: string, st: Statement, values: unknown[]): Promise<QueryResult<Row>>;
  /**
   * Runs `body` in a transaction on one connection, opened by `begin` (`BEGIN`, or with an
   * isolation level). A connection lost while COMMIT was in flight is ERR_STORE_COMMIT_UNKNOWN.
   */
  tx<T>(what: string, begin: string, body: TxBody<T>): Promise<T>;
}
