import { resolve } from 'node:path';
import { openMaintenance, storeSettings } from '../../store/index.ts';
import { required } from '../args.ts';
import { EXIT_CODES, settings, type Command } from '../command.ts';

/** A backup loaded into an empty database, with the service stopped. */
export const restore: Command = {
  name: 'restore',
  summary: 'load a backup into an empty database (service stopped)',
  options: { in: 'string', force: 'flag' },
  help: `Usage: rbac-gateway restore --in FILE [--force]

Loads FILE, written by "rbac-gateway backup", into the database the settings name, in one
transaction: everything or nothing. The service must be stopped (a running one is detected and
refused). The database must hold no data: a non-empty one is refused unless --force, which
replaces everything in it. A backup of an older version is migrated to this one. The restored
database answers exactly as the one backed up (same clients, revisions, cursors, audit trail,
encryption mark: start it with the same AUTH_ENCRYPTION_KEY).
  SQLite      FILE is a SQLite backup; AUTH_SQLITE_PATH is created if missing.
  PostgreSQL  FILE is an NDJSON archive; the service's tables are made again.

Settings: AUTH_DATABASE_TYPE, AUTH_SQLITE_PATH or AUTH_POSTGRESQL_URL (as the service's).
Prints {"restore":{"database","in","schemaVersion","tables":{name:rows}}}.
${EXIT_CODES}`,
  async run(parsed, io) {
    const input = resolve(required(parsed, 'in'));
    const store = openMaintenance(storeSettings(settings()));
    try {
      io.result({ restore: await store.restore(input, { force: parsed.flags.has('force') }, io.progress('restore')) });
    } finally {
      await store.close();
    }
  },
};
