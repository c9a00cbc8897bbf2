/**
 * What the leak scan (tests/security/leaks.mjs, run by tests/run.mjs after the whole run) needs:
 * every server's full output, and every secret the tests gave a server (settings, client keys,
 * tokens). All of it goes to the folder named by RBAC_TEST_OUTPUT_DIR; when that is unset (a test
 * file run by hand) nothing is saved and every function here does nothing.
 *
 * Files, one set per test process (several processes write to the folder at once):
 * - `output-<run>-<n>.log`: the bytes one server process wrote to stdout and stderr;
 * - `outputs-<run>.jsonl`: one line per output file: `{file, test, how, port?}`;
 * - `secrets-<run>.jsonl`: one line per distinct secret: `{kind, value, test}`.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, openSync, writeSync } from 'node:fs';
import { join, relative } from 'node:path';

const DIR = process.env.RBAC_TEST_OUTPUT_DIR === undefined || process.env.RBAC_TEST_OUTPUT_DIR === '' ? undefined : process.env.RBAC_TEST_OUTPUT_DIR;
const RUN = `${process.pid}-${randomBytes(4).toString('hex')}`;
// The test file of this process (node --test runs each file in its own process).
const TEST = process.argv[1] === undefined ? '?' : relative(process.cwd(), process.argv[1]);

/** What a recorded secret is; the scan names it (and never prints more than 4 characters of it). */
export type SecretKind = 'client key' | 'token' | 'credential' | 'AUTH_JWT_SECRET_KEY' | 'AUTH_ENCRYPTION_KEY' | 'URL password' | 'secret';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** `scheme://user:password@…`: the password part (still percent-encoded). */
const URL_PASSWORD = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#@:]*):([^/?#@]*)@/;

const remembered = new Set<string>();
let serial = 0;

/** The kind of a bearer credential, by its shape: a client key, a token, or something else. */
export const credentialKind = (value: string): SecretKind => (UUID_V4.test(value) ? 'client key' : JWT_SHAPE.test(value) ? 'token' : 'credential');

/**
 * Records a secret the scan must never find in any server's output: a client key, a token, a
 * secret setting. Without a kind, it is taken for a credential of the kind its shape says.
 */
export function rememberSecret(value: string, kind?: SecretKind): void {
  if (DIR === undefined || value === '' || remembered.has(value)) return;
  remembered.add(value);
  appendFileSync(join(DIR, `secrets-${RUN}.jsonl`), `${JSON.stringify({ kind: kind ?? credentialKind(value), value, test: TEST })}\n`);
}

/** Records the secrets among a server's settings: the two secret keys and any password in a URL. */
export function rememberEnvSecrets(env: Readonly<Record<string, string | undefined>>): void {
  if (DIR === undefined) return;
  for (const name of ['AUTH_JWT_SECRET_KEY', 'AUTH_ENCRYPTION_KEY'] as const) {
    const value = env[name];
    if (value !== undefined) rememberSecret(value, name);
  }
  for (const value of Object.values(env)) {
    const m = value === undefined ? null : URL_PASSWORD.exec(value);
    const password = m?.[2];
    // A password equal to its user name (postgres:postgres) cannot be told apart from the name,
    // which a log may show; such a password guards nothing worth scanning for.
    if (password === undefined || password === '' || password === m?.[1]) continue;
    rememberSecret(password, 'URL password');
    let decoded = password;
    try {
      decoded = decodeURIComponent(password);
    } catch {
      // Not valid percent-encoding: the raw form is the only one.
    }
    if (decoded !== password) rememberSecret(decoded, 'URL password');
  }
}

/** Where one server process's output is saved: call `write` with every chunk, `close` at the end. */
export interface OutputSink {
  write(chunk: Buffer): void;
  close(): void;
}

const NO_SINK: OutputSink = { write: () => undefined, close: () => undefined };

/** A new output file for one server process (`how`: which helper started it). */
export function outputSink(how: string, port?: number): OutputSink {
  if (DIR === undefined) return NO_SINK;
  const file = `output-${RUN}-${++serial}.log`;
  let fd: number | undefined = openSync(join(DIR, file), 'a');
  appendFileSync(join(DIR, `outputs-${RUN}.jsonl`), `${JSON.stringify({ file, test: TEST, how, ...(port === undefined ? {} : { port }) })}\n`);
  return {
    // Synchronous writes: nothing is lost when the test process ends before the server does.
    write(chunk) {
      if (fd !== undefined) writeSync(fd, chunk);
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
