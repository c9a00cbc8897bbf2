import { ConfigError, type Config } from '../../config/index.ts';
import { FieldCipher } from '../../crypto/field-cipher.ts';
import { openMaintenance, storeSettings } from '../../store/index.ts';
import type { Parsed } from '../args.ts';
import { EXIT_CODES, settings, type Command } from '../command.ts';
import { UsageError } from '../io.ts';

type Mode = 'rotate' | 'encrypt' | 'decrypt';

/** Re-keys every stored name in one transaction, with the service stopped. */
export const rotateEncryptionKey: Command = {
  name: 'rotate-encryption-key',
  summary: 're-encrypt every stored name under a new key, or encrypt / decrypt a database (service stopped)',
  options: { encrypt: 'flag', decrypt: 'flag' },
  help: `Usage: rbac-gateway rotate-encryption-key [--encrypt | --decrypt]

With the service stopped (a running one is detected and refused), rewrites every stored name
(roles, descriptions, grants, memberships, the changelog, audit resources, workflow schedules,
their runs and holders) in ONE transaction, and switches the database's key fingerprint:
  (no option)  from AUTH_ENCRYPTION_KEY to AUTH_NEW_ENCRYPTION_KEY;
  --encrypt    a plaintext database, encrypted under AUTH_NEW_ENCRYPTION_KEY;
  --decrypt    an encrypted database (AUTH_ENCRYPTION_KEY) back to plaintext.
A stored name that does not decrypt with AUTH_ENCRYPTION_KEY stops it with nothing changed; an
interrupted run (killed, power lost) leaves the database as it was, under the old key.
Afterwards start the service with AUTH_ENCRYPTION_KEY set to the new key (and
AUTH_ENABLE_ENCRYPTION=true), or, after --decrypt, with AUTH_ENABLE_ENCRYPTION=false.

Settings: AUTH_DATABASE_TYPE, AUTH_SQLITE_PATH or AUTH_POSTGRESQL_URL, AUTH_ENCRYPTION_KEY,
AUTH_NEW_ENCRYPTION_KEY (from the environment only, never from arguments).
Prints {"rotate-encryption-key":{"database","mode","from","to","tables":{name:cells},"cells"}};
"from" and "to" are the database's marks (plaintext, or aes-256-ctr: and the key's fingerprint).
${EXIT_CODES}`,
  async run(parsed, io) {
    const mode = modeOf(parsed);
    const config = settings();
    const [from, to] = ciphers(mode, config);
    const store = openMaintenance(storeSettings(config));
    try {
      const report = await store.rekey(from, to, io.progress(mode === 'rotate' ? 'rotate' : mode));
      const cells = Object.values(report.tables).reduce((a, b) => a + b, 0);
      io.result({ 'rotate-encryption-key': { ...report, mode, cells } });
    } finally {
      await store.close();
    }
  },
};

function modeOf(parsed: Parsed): Mode {
  const [encrypt, decrypt] = [parsed.flags.has('encrypt'), parsed.flags.has('decrypt')];
  if (encrypt && decrypt) throw new UsageError('--encrypt and --decrypt exclude each other');
  return encrypt ? 'encrypt' : decrypt ? 'decrypt' : 'rotate';
}

/** The ciphers of the source and the target (undefined: plaintext); the keys come from the settings only. */
function ciphers(mode: Mode, config: Config): [FieldCipher | undefined, FieldCipher | undefined] {
  const need = (key: 'AUTH_ENCRYPTION_KEY' | 'AUTH_NEW_ENCRYPTION_KEY', why: string): string => {
    const value = config[key];
    if (value === undefined) throw new ConfigError(`${key} is required ${why}`);
    return value;
  };
  if (mode === 'encrypt') return [undefined, new FieldCipher(need('AUTH_NEW_ENCRYPTION_KEY', 'by --encrypt (the key to encrypt with)'))];
  if (mode === 'decrypt') return [new FieldCipher(need('AUTH_ENCRYPTION_KEY', 'by --decrypt (the key the database is encrypted with)')), undefined];
  const [oldKey, newKey] = [need('AUTH_ENCRYPTION_KEY', 'to rotate (the current key)'), need('AUTH_NEW_ENCRYPTION_KEY', 'to rotate (the new key)')];
  if (oldKey === newKey) throw new ConfigError('AUTH_NEW_ENCRYPTION_KEY is the same as AUTH_ENCRYPTION_KEY: nothing to rotate');
  return [new FieldCipher(oldKey), new FieldCipher(newKey)];
}
