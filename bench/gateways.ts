/**
 * The gateways of `npm run bench`, one per HTTP engine (AUTH_HTTP_ENGINE), each on its own SQLite
 * file. The first is seeded over HTTP; each other one starts on a snapshot of that file taken with
 * SQLite's online backup while the first keeps running. So every engine serves the same data at
 * the same revision without seeding again (half a minute each), and no two instances share one
 * SQLite file, which the gateway leaves to PostgreSQL.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { BenchConfig } from './config.ts';
import { treeSize } from './procs.ts';
import type { GatewayInfo } from './report.ts';
import { startGateway, type Server } from './servers.ts';

export const sqliteFile = (dir: string, engine: string): string => join(dir, `rbac-${engine}.sqlite3`);

/**
 * A gateway of `engine` on `sqlitePath` (kept on stop: the caller owns its folder); `env`: more
 * settings (AUTH_JWT_SECRET_KEY, AUTH_METRICS_PORT); `label`: how it is reported (default: `engine`).
 */
export async function startEngine(
  cfg: BenchConfig,
  engine: string,
  sqlitePath: string,
  env: Record<string, string> = {},
  label = engine,
): Promise<Server> {
  const gateway = await startGateway({
    entry: cfg.gatewayEntry,
    logLevel: cfg.gatewayLogLevel,
    cpus: cfg.pin === undefined ? undefined : String(cfg.pin.server),
    startTimeoutMs: 90_000,
    sqlitePath,
    engine,
    env,
  });
  gateway.label = label;
  const size = treeSize(gateway.child.pid);
  console.log(
    `gateway ${label} listening on ${gateway.baseUrl} (pid ${gateway.child.pid}, ${size.processes} processes, ${size.threads} threads), ` +
      `engine reported: ${gateway.reportedEngine ?? 'none'}`,
  );
  return gateway;
}

/** A consistent copy of a live SQLite database (the gateway that owns it goes on serving). */
export async function snapshot(from: string, to: string): Promise<void> {
  const db = new Database(from, { readonly: true, fileMustExist: true });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
}

export function describe(gateway: Server, correctness?: object): GatewayInfo {
  const size = treeSize(gateway.child.pid);
  const info: GatewayInfo = {
    label: gateway.label,
    engine: gateway.engine ?? 'default',
    reportedEngine: gateway.reportedEngine ?? null,
    pid: gateway.child.pid,
    processes: size.processes,
    threads: size.threads,
  };
  if (correctness !== undefined) info.correctness = correctness;
  return info;
}

/**
 * Failures of the engine set-up: a gateway that says it runs another engine than the one asked
 * for would put a wrong name on its figures. A gateway that says nothing (a build before the
 * setting existed) only earns a note, printed here.
 */
export function engineProblems(gateways: Server[]): string[] {
  const problems: string[] = [];
  for (const g of gateways) {
    if (g.reportedEngine === undefined) {
      console.log(`note: gateway ${g.label} does not report its engine; AUTH_HTTP_ENGINE=${g.engine ?? ''} may be ignored by this build`);
    } else if (g.engine !== undefined && g.engine !== 'auto' && g.reportedEngine !== g.engine) {
      problems.push(`gateway ${g.label}: AUTH_HTTP_ENGINE=${g.engine}, but it says it runs ${g.reportedEngine}`);
    }
  }
  const said = gateways.map((g) => g.reportedEngine).filter((e) => e !== undefined);
  if (gateways.length > 1 && (said.length < gateways.length || new Set(said).size < said.length)) {
    console.log('note: the gateways compared may run the same engine: their ratio then measures noise only');
  }
  return problems;
}
