import type Database from 'better-sqlite3';

/**
 * Every statement this process prepares, kept until it exits. better-sqlite3 12 aborts the whole
 * process on Node.js 24.19 and later when a statement object is garbage-collected (its destructor
 * trips an assertion in Node's ObjectWrap), so no statement may ever become garbage: each is
 * prepared once, through {@link prepared}, and retained here; pragmas run through `exec`, which
 * makes none. A lint rule allows `.prepare(` in this file only.
 */
const RETAINED: Database.Statement[] = [];

/** `db.prepare(sql)`, the statement kept alive for the life of the process. */
export function prepared(db: Database.Database, sql: string): Database.Statement {
  const statement = db.prepare(sql);
  RETAINED.push(statement);
  return statement;
}
