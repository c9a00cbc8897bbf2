import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { RbacClient, type ClientOptions } from '../../src/client/index.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { outputSink, rememberEnvSecrets, rememberSecret } from './leak-record.ts';
import { entryArgs, freePort, launchGateway, ROOT, type Launched } from '../../support/launcher.ts';

export { rememberSecret } from './leak-record.ts';

export { freePort, ROOT } from '../../support/launcher.ts';

/** A fresh folder under the OS temp dir, removed by `cleanup`. */
export function tempDir(prefix = 'rbac-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * How long a server may take to listen by default: a few seconds on an idle machine, far more on
 * one busy with other suites; only a server that never listens should fail its test here.
 */
export const START_TIMEOUT_MS = 60_000;

export interface ServerOptions {
  env?: Record<string, string>;
  /**
   * SQLite file; a fresh temp file when omitted. With AUTH_TEST_DATABASE=postgresql in the
   * environment (and neither this nor AUTH_DATABASE_TYPE in `env`), the server gets a fresh
   * PostgreSQL database instead, dropped when it exits.
   */
  sqlitePath?: string;
  /** How long to wait for "listening" (ms; default {@link START_TIMEOUT_MS}). */
  startTimeoutMs?: number;
}

export interface RunningServer {
  baseUrl: string;
  port: number;
  sqlitePath: string;
  /** The PostgreSQL database it runs on, when it does (see {@link ServerOptions.sqlitePath}). */
  postgresUrl: string | undefined;
  proc: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /**
   * A client with a fresh random key (a new, empty tenant). The key (or whatever credential is
   * given) is remembered for the leak scan (see {@link rememberSecret}).
   */
  client(key?: string): RbacClient;
  /** Every answer to a client made by {@link client} from now on is passed to `observer` too. */
  observeResponses(observer: ClientOptions['onResponse']): void;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * The HTTP engine every server of this run gets: AUTH_TEST_HTTP_ENGINE (`uws`, `node`, `auto`),
 * so that one suite runs against each engine; unset, the service's own default.
 */
export function engineEnv(): Record<string, string> {
  const engine = process.env.AUTH_TEST_HTTP_ENGINE;
  return engine === undefined || engine === '' ? {} : { AUTH_HTTP_ENGINE: engine };
}

/** Starts the service (see TEST_ENTRY) as a child process on a free port and waits until it listens. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePort(options);
    } catch (err) {
      // freePort's pick is released before the server binds it: a test file running beside this
      // one may take the same port in between. That is the harness's race, not the server's.
      if (attempt >= 3 || !(err instanceof Error) || !/cannot listen on [^\n]*EADDRINUSE/.test(err.message)) throw err;
    }
  }
}

/**
 * Starts several servers at once. When one cannot start, those that did are killed before the
 * error is thrown: left running, they would hold the test file's process open forever.
 */
export async function startServers(...options: ServerOptions[]): Promise<RunningServer[]> {
  const started = await Promise.allSettled(options.map((o) => startServer(o)));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed === undefined) return started.map((s) => (s as PromiseFulfilledResult<RunningServer>).value);
  await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.kill() : undefined)));
  throw failed.reason;
}

async function startOnFreePort(options: ServerOptions): Promise<RunningServer> {
  const port = await freePort();
  let owned: { dir: string; cleanup: () => void } | undefined;
  let sqlitePath = options.sqlitePath;
  if (sqlitePath === undefined) {
    owned = tempDir();
    sqlitePath = join(owned.dir, 'rbac.sqlite3');
  }
  let database: TestDatabase | undefined;
  if (process.env.AUTH_TEST_DATABASE === 'postgresql' && options.sqlitePath === undefined && options.env?.AUTH_DATABASE_TYPE === undefined) {
    database = await createTestDatabase();
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_SQLITE_PATH: sqlitePath,
    AUTH_WORKERS: '1',
    AUTH_METRICS_PORT: '0',
    AUTH_LOG_LEVEL: 'info',
    ...engineEnv(),
    ...(database === undefined ? {} : { AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: database.url }),
    ...options.env,
  };
  rememberEnvSecrets(env);
  const sink = outputSink('startServer', port);
  let launched: Launched;
  try {
    launched = await launchGateway({ env, onOutput: (c) => sink.write(c), startTimeoutMs: options.startTimeoutMs ?? START_TIMEOUT_MS });
  } catch (err) {
    sink.close();
    owned?.cleanup();
    await database?.drop().catch(() => undefined);
    throw err;
  }
  const { proc, output } = launched;
  proc.on('close', () => sink.close());
  // Resolves once the process is gone and its database (if it had its own) is dropped.
  const exited = launched.exited.then(async (code) => {
    owned?.cleanup();
    await database?.drop().catch((err: unknown) => console.log(`could not drop ${database?.name}: ${String(err)}`));
    return code;
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  let observer: ClientOptions['onResponse'];
  return {
    baseUrl,
    port,
    sqlitePath,
    postgresUrl: database?.url,
    proc,
    exited,
    output,
    client: (key = randomUUID()) => {
      rememberSecret(key);
      return new RbacClient(observer === undefined ? { baseUrl, key } : { baseUrl, key, onResponse: observer });
    },
    observeResponses(o) {
      observer = o;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** Runs the service with `env` and resolves with its exit code and output (for start-up failures). */
export function runToExit(env: Record<string, string>, timeoutMs = START_TIMEOUT_MS): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const fullEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AUTH_METRICS_PORT: '0', ...engineEnv(), ...env };
    rememberEnvSecrets(fullEnv);
    const proc = spawn(process.execPath, entryArgs(), {
      cwd: ROOT,
      env: fullEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const sink = outputSink('runToExit');
    let out = '';
    const take = (c: Buffer): void => {
      out += c.toString();
      sink.write(c);
    };
    proc.stdout.on('data', take);
    proc.stderr.on('data', take);
    proc.on('close', () => sink.close());
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output: out });
    });
  });
}
