import { resolve } from 'node:path';
import { openMaintenance, storeSettings } from '../../store/index.ts';
import { required } from '../args.ts';
import { EXIT_CODES, settings, type Command } from '../command.ts';

/** A consistent copy of the whole database, taken while the service runs. */
export const backup: Command = {
  name: 'backup',
  summary: 'write a consistent copy of the whole database to a file, while the service runs',
  options: { out: 'string', force: 'flag' },
  help: `Usage: rbac-gateway backup --out FILE [--force]

Writes a consistent copy of the whole database (every client, the changelog, the audit trail,
workflows, the encryption mark) to FILE, while the service keeps serving and writing:
  SQLite      SQLite's online backup API: FILE is a SQLite database file, checked once written.
  PostgreSQL  a portable NDJSON archive of every table, read from one snapshot.
Names stay as stored: an encrypted database's backup is encrypted with the same key.
FILE is written beside itself first and renamed once complete: an interrupted backup leaves no
FILE. An existing FILE is refused unless --force.

Settings: AUTH_DATABASE_TYPE, AUTH_SQLITE_PATH or AUTH_POSTGRESQL_URL (as the service's).
Prints {"backup":{"database","out","format","bytes","schemaVersion","tables":{name:rows}}}.
${EXIT_CODES}`,
  async run(parsed, io) {
    const out = resolve(required(parsed, 'out'));
    const store = openMaintenance(storeSettings(settings()));
    try {
      io.result({ backup: await store.backup(out, { force: parsed.flags.has('force') }, io.progress('backup')) });
    } finally {
      await store.close();
    }
  },
};
