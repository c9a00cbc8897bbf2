/**
 * The two servers under load, each a child process on a free 127.0.0.1 port: the real gateway
 * (as tests/helpers/server.ts starts it, with a fresh temp SQLite file unless the caller brings
 * its own) and the bare ceiling.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnChild, waitForOutput, type Child } from './procs.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Server {
  name: 'gateway' | 'bare';
  /** How runs print and record it: `bare`, `gateway`, the engine it was asked for (`uws`, `node`), or a variant (`uws+metrics`). */
  label: string;
  /** The AUTH_HTTP_ENGINE it was started with; absent: the server's default. */
  engine?: string;
  /** The engine the gateway says it runs (start-up log or GET /version); absent: it does not say. */
  reportedEngine?: string;
  child: Child;
  baseUrl: string;
  /** Bearer credential to load it with instead of the phase's key: a signed token. */
  token?: string;
  /** Its GET /metrics (the gateway's primary, on AUTH_METRICS_PORT); absent: metrics off. */
  metricsUrl?: string;
  stop(): Promise<void>;
}

const LISTENING = /"msg":"listening"/;
const FALLBACK = /Falling back to a NodeJS implementation/;

function baseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
}

export interface GatewayOptions {
  entry: string;
  logLevel: string;
  cpus: string | undefined;
  startTimeoutMs: number;
  /** AUTH_WORKERS (default 1). */
  workers?: number;
  /**
   * SQLite file owned by the caller (kept on stop, so a later gateway can serve the same data);
   * default: a fresh file in a temp folder that stop() deletes.
   */
  sqlitePath?: string;
  /** More settings (the database type and URL, AUTH_REDIS_URL, ...); they win over the defaults. */
  env?: Record<string, string>;
  /** AUTH_HTTP_ENGINE (`uws`, `node`, `auto`); default: unset, the server's default. */
  engine?: string;
}

/** A compiled entry (`dist/main.js`) runs on plain node; a TypeScript one through tsx. */
function entryArgs(entry: string): string[] {
  return /\.[cm]?js$/.test(entry) ? [entry] : ['--import', 'tsx', entry];
}

export async function startGateway(options: GatewayOptions): Promise<Server> {
  const port = await freePort();
  let dir: string | undefined;
  let sqlitePath = options.sqlitePath;
  if (sqlitePath === undefined) {
    dir = mkdtempSync(join(tmpdir(), 'rbac-bench-'));
    sqlitePath = join(dir, 'rbac.sqlite3');
  }
  const env = {
    ...baseEnv(),
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_SQLITE_PATH: sqlitePath,
    AUTH_WORKERS: String(options.workers ?? 1),
    AUTH_METRICS_PORT: '0',
    AUTH_LOG_LEVEL: options.logLevel,
    ...(options.engine === undefined ? {} : { AUTH_HTTP_ENGINE: options.engine }),
    ...options.env,
  };
  const child = spawnChild('gateway', process.execPath, entryArgs(options.entry), { cwd: ROOT, env, cpus: options.cpus });
  const stop = async (): Promise<void> => {
    await child.stop(12_000);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForOutput(child, LISTENING, options.startTimeoutMs);
    await waitForPing(`http://127.0.0.1:${port}`, 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  warnFallback(child);
  const baseUrl = `http://127.0.0.1:${port}`;
  const server: Server = { name: 'gateway', label: options.engine ?? 'gateway', child, baseUrl, stop };
  if (options.engine !== undefined) server.engine = options.engine;
  const reported = engineInLog(child.output()) ?? (await engineOfVersion(baseUrl));
  if (reported !== undefined) server.reportedEngine = reported;
  return server;
}

/** The `engine` field of the gateway's `listening` log line, when it has one. */
function engineInLog(output: string): string | undefined {
  for (const line of output.split('\n')) {
    if (!LISTENING.test(line)) continue;
    try {
      return engineField(JSON.parse(line));
    } catch {
      // not a JSON line
    }
  }
  return undefined;
}

/** `engine` of GET /version (at the top or in the envelope's `data`); undefined when absent or not 200. */
async function engineOfVersion(baseUrl: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${baseUrl}/version`, { signal: AbortSignal.timeout(2_000) });
    const text = await res.text();
    return res.status === 200 ? engineField(JSON.parse(text)) : undefined;
  } catch {
    return undefined;
  }
}

function engineField(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as { engine?: unknown; data?: unknown };
  if (typeof o.engine === 'string') return o.engine;
  return o.data === undefined ? undefined : engineField(o.data);
}

export interface BareOptions {
  bodyTrue: string;
  bodyFalse: string;
  revision: number;
  requestIdLength: number;
  cpus: string | undefined;
}

export async function startBare(options: BareOptions): Promise<Server> {
  const port = await freePort();
  const env = {
    ...baseEnv(),
    BARE_PORT: String(port),
    BARE_BODY_TRUE: options.bodyTrue,
    BARE_BODY_FALSE: options.bodyFalse,
    BARE_REVISION: String(options.revision),
    BARE_REQUEST_ID_LEN: String(options.requestIdLength),
  };
  const child = spawnChild('bare', process.execPath, ['--import', 'tsx', 'bench/bare-server.ts'], { cwd: ROOT, env, cpus: options.cpus });
  try {
    await waitForOutput(child, LISTENING, 20_000);
  } catch (err) {
    await child.stop();
    throw err;
  }
  warnFallback(child);
  return { name: 'bare', label: 'bare', child, baseUrl: `http://127.0.0.1:${port}`, stop: () => child.stop() };
}

function warnFallback(child: Child): void {
  if (FALLBACK.test(child.output())) {
    console.log(`WARNING: ${child.name} runs uWebSockets.js's Node.js fallback, not the native server: figures are meaningless`);
  }
}

async function waitForPing(baseUrl: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      const res = await fetch(`${baseUrl}/ping`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not yet
    }
    if (Date.now() - started > timeoutMs) throw new Error(`${baseUrl}/ping did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
