import type { FieldCipher } from '../crypto/field-cipher.ts';
import { encryptedMark, PLAINTEXT_MARK } from './encryption-mark.ts';

/**
 * What an operator does to a whole database from the command line (docs/operations.md, "Backup,
 * restore and migration", "Rotating the field-encryption key"): a consistent copy while the
 * service runs, a restore into an empty database, and re-keying every sealed name in one
 * transaction, the last two with the service stopped. One adapter per database, chosen by
 * openMaintenance (store/index.ts).
 */
export interface Maintenance {
  readonly database: 'sqlite' | 'postgresql';
  /** Writes a consistent copy of the whole database to `out` (a new file; `force` replaces one). */
  backup(out: string, options: { readonly force: boolean }, progress: Progress): Promise<BackupReport>;
  /** Loads `input` (what {@link backup} wrote) into this database, which must hold no data unless `force`. */
  restore(input: string, options: { readonly force: boolean }, progress: Progress): Promise<RestoreReport>;
  /** Rewrites every sealed cell from `from` to `to` (undefined: plaintext) and the mark, in one transaction. */
  rekey(from: FieldCipher | undefined, to: FieldCipher | undefined, progress: Progress): Promise<RekeyReport>;
  close(): Promise<void>;
}

/** Where a long operation reports how far it got (the command line's progress bar, or nothing). */
export interface Progress {
  /** A new phase of `total` units (pages, rows, cells). */
  begin(total: number, unit: string): void;
  /** `done` units of the current phase are done (a running total). */
  update(done: number): void;
  end(): void;
}

export const NO_PROGRESS: Progress = { begin: () => undefined, update: () => undefined, end: () => undefined };

export interface BackupReport {
  readonly database: 'sqlite' | 'postgresql';
  readonly out: string;
  /** `sqlite`: a SQLite database file; `ndjson`: the portable archive of every table. */
  readonly format: 'sqlite' | 'ndjson';
  readonly bytes: number;
  readonly schemaVersion: number;
  /** Rows per table, as copied. */
  readonly tables: Readonly<Record<string, number>>;
}

export interface RestoreReport {
  readonly database: 'sqlite' | 'postgresql';
  readonly in: string;
  /** The schema version of the backup; the database is at the current one afterwards. */
  readonly schemaVersion: number;
  readonly tables: Readonly<Record<string, number>>;
}

export interface RekeyReport {
  readonly database: 'sqlite' | 'postgresql';
  /** The mark before and after (docs/operations.md §7): `plaintext` or `aes-256-ctr:<fingerprint>`. */
  readonly from: string;
  readonly to: string;
  /** Sealed cells rewritten, per table. */
  readonly tables: Readonly<Record<string, number>>;
}

/** A maintenance command that cannot be done as asked (exit code 1), with the message to show. */
export class MaintenanceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MaintenanceError';
  }
}

/** The mark of a database whose names `cipher` seals (undefined: plaintext). */
export const markOf = (cipher: FieldCipher | undefined): string => (cipher === undefined ? PLAINTEXT_MARK : encryptedMark(cipher.fingerprint));

/**
 * Refuses to re-key a database whose names are not stored the way `from` says. `stored` is the
 * database's mark, undefined when no process ever claimed one: then a database holding clients
 * is plaintext (as the service decides) and an empty one is whatever it is asked to be.
 */
export function checkRekeyFrom(stored: string | undefined, hasClients: boolean, from: FieldCipher | undefined): void {
  const known = stored ?? (hasClients ? PLAINTEXT_MARK : markOf(from));
  if (known === markOf(from)) return;
  if (known === PLAINTEXT_MARK) throw new MaintenanceError('the database holds plaintext names: use --encrypt');
  if (from === undefined) throw new MaintenanceError('the database is encrypted: use --decrypt, or set AUTH_ENCRYPTION_KEY and rotate');
  throw new MaintenanceError('AUTH_ENCRYPTION_KEY is not the key this database was encrypted with');
}

/**
 * A test-only hook (docs/operations.md says so): with AUTH_TEST_MAINTENANCE_STALL_AFTER=N in the
 * environment, a re-keying stops after N cells, inside its transaction, says so on stderr with a
 * `{"stalled":N}` line and waits there, so that a test can kill the process at a known point and
 * check that the database is as it was.
 */
export function stallPoint(): number | undefined {
  const raw = process.env.AUTH_TEST_MAINTENANCE_STALL_AFTER;
  return raw === undefined || !/^\d+$/.test(raw) ? undefined : Number(raw);
}

/** Says the run stalled (see {@link stallPoint}); the caller then waits to be killed. */
export function announceStall(cells: number): void {
  process.stderr.write(`${JSON.stringify({ stalled: cells })}\n`);
}

/** Backup files begin with this line (PostgreSQL's NDJSON archive), or are SQLite files. */
export const ARCHIVE_FORMAT = 'rbac-gateway.backup';
