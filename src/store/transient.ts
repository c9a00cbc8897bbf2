import { AppError, appError, ERRORS, isErrorCode, type ErrorCode } from '../errors/index.ts';

/**
 * Which failures a later attempt may cure, for every adapter in one table. `unavailable`: the
 * database could not be reached or gave up on the call (connection refused or lost, server
 * restarting, too many connections, a timeout); `conflict`: the database aborted the transaction
 * because of a concurrent one (serialization failure, deadlock). Anything else (a constraint, a
 * bug, a refused change) repeats itself and is not transient.
 */
export type Transience = 'unavailable' | 'conflict';

/** Socket-level codes from Node (the database host or its network is down). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);

/** PostgreSQL SQLSTATEs outside class 08 (connection exception, all of it transient). */
const PG_UNAVAILABLE = new Set([
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '53300', // too_many_connections
  '57014', // query_canceled: statement_timeout
  '55P03', // lock_not_available: lock_timeout
]);
const PG_CONFLICT = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/** pg's own failures carry no code, only these messages. */
const PG_CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Client was closed|connection timeout/i;

/** SQLITE_BUSY or SQLITE_LOCKED (and their extended codes): another connection holds the lock. */
export function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/**
 * How transient a raw driver error is (pg, better-sqlite3, Node sockets), or `undefined`. A
 * catalogued code (an {@link AppError} or its wire form) is judged by the catalogue instead.
 */
export function transience(err: unknown): Transience | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (isErrorCode(code)) return cataloguedTransience(code);
    if (NETWORK_CODES.has(code) || PG_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return 'unavailable';
    if (PG_CONFLICT.has(code)) return 'conflict';
    // Another connection held the lock longer than the SQLite store waits for it.
    if (isSqliteBusy(err)) return 'unavailable';
    if (code.startsWith('ERR_')) return undefined; // Node's own ERR_* codes: not a database's
  }
  const message = (err as { message?: unknown }).message;
  if (typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message)) return 'unavailable';
  return undefined;
}

/**
 * A catalogued code is as transient as the catalogue's `retryable` says; of those, a conflict is
 * the one that is not the database being away.
 */
function cataloguedTransience(code: ErrorCode): Transience | undefined {
  if (!ERRORS[code].retryable) return undefined;
  return code === 'ERR_STORE_CONFLICT' ? 'conflict' : 'unavailable';
}

/**
 * The catalogued form of an adapter failure: transient ones become ERR_STORE_UNAVAILABLE or
 * ERR_STORE_CONFLICT with a message that names no host, file or statement (it reaches callers
 * in the 503 body); catalogued errors pass through; the rest become ERR_INTERNAL with their own
 * message (500: the message goes only to the log).
 */
export function storeFailure(err: unknown, what: string): AppError {
  if (err instanceof AppError) return err;
  const kind = transience(err);
  const reason = describe(err);
  if (kind === 'unavailable') return withCause(appError('ERR_STORE_UNAVAILABLE', `the database is unavailable (${what}: ${reason})`), err);
  if (kind === 'conflict') return withCause(appError('ERR_STORE_CONFLICT', { what, reason }), err);
  return withCause(appError('ERR_INTERNAL', err instanceof Error ? err.message : String(err)), err);
}

/** A short reason in words: no host, driver code or statement (it is shown to callers). */
function describe(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : '';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ETIMEDOUT':
    case '57014':
    case '55P03':
      return 'timed out';
    case 'EHOSTUNREACH':
    case 'EHOSTDOWN':
    case 'ENETUNREACH':
    case 'ENETDOWN':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EADDRNOTAVAIL':
      return 'host unreachable';
    case '57P01':
    case '57P02':
    case '57P03':
      return 'server restarting';
    case '53300':
      return 'too many connections';
    case '40001':
      return 'serialization failure';
    case '40P01':
      return 'deadlock';
  }
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return 'busy';
  if (/timeout|timed out/i.test(message)) return 'timed out';
  return 'connection lost';
}

function withCause(e: AppError, cause: unknown): AppError {
  Object.defineProperty(e, 'cause', { value: cause, enumerable: false, configurable: true });
  return e;
}
