/**
 * A real HAProxy (Debian's `haproxy`) for the tests, run from the shipped
 * deploy/haproxy/haproxy.cfg as is: the addresses it listens on and the instances behind it are
 * given through the environment variables the file reads, exactly as an operator would.
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { outputSink } from './leak-record.ts';
import { freePort, ROOT } from './server.ts';
import { waitUntil } from './wait.ts';

export const HAPROXY_CONFIG = join(ROOT, 'deploy/haproxy/haproxy.cfg');

/**
 * The haproxy program: on PATH, else where Debian installs it (/usr/sbin, which is not on the PATH
 * of an ordinary user).
 */
export const HAPROXY_BIN = ((): string => {
  if (spawnSync('sh', ['-c', 'command -v haproxy'], { stdio: 'ignore' }).status === 0) return 'haproxy';
  for (const path of ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy']) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return 'haproxy';
})();

/**
 * The environment the shipped file reads: where it listens, and `host:port` of each instance in
 * order. Connections are capped low: HAProxy needs an open-file limit of twice its maxconn, and a
 * test machine's may be below the 20,000 the shipped default needs.
 */
export function haproxyEnv(bind: string, statsBind: string, gateways: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    RBAC_HAPROXY_BIND: bind,
    RBAC_HAPROXY_STATS_BIND: statsBind,
    RBAC_HAPROXY_MAXCONN: '1000',
  };
  gateways.forEach((g, i) => (env[`RBAC_GATEWAY_${i + 1}`] = g));
  return env;
}

/** `haproxy -c -f` of the shipped file under `env`: its exit code and what it said. */
export function checkConfig(env: Record<string, string>): { status: number | null; output: string } {
  const r = spawnSync(HAPROXY_BIN, ['-c', '-f', HAPROXY_CONFIG], { env, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** One row of HAProxy's stats CSV (a proxy or one of its servers). */
export type StatsRow = Record<string, string>;

export interface RunningHaproxy {
  /** The port clients connect to. */
  port: number;
  /** Everything HAProxy wrote (its log lines and alerts). */
  output(): string;
  /** The rows of `/stats;csv`. */
  stats(): Promise<StatsRow[]>;
  /** The status of server `name` of the `gateways` backend (`UP`, `DOWN`, `UP 1/2`, `no check`…). */
  serverStatus(name: string): Promise<string | undefined>;
  /** SIGTERM (SIGKILL after 5 s) and wait for the exit. */
  stop(): Promise<void>;
}

/** Starts HAProxy in the foreground in front of `gateways` (`host:port` each), ready once it answers its stats. */
export async function startHaproxy(gateways: readonly string[]): Promise<RunningHaproxy> {
  const [port, statsPort] = [await freePort(), await freePort()];
  const env = haproxyEnv(`127.0.0.1:${port}`, `127.0.0.1:${statsPort}`, gateways);
  const proc = spawn(HAPROXY_BIN, ['-db', '-f', HAPROXY_CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Its log goes to the leak scan with the servers' output: no key or token may show there either.
  const sink = outputSink('haproxy', port);
  let out = '';
  const take = (c: Buffer): void => {
    out += c.toString();
    sink.write(c);
  };
  proc.stdout.on('data', take);
  proc.stderr.on('data', take);
  const exited = new Promise<void>((resolve) =>
    proc.on('exit', () => {
      sink.close();
      resolve();
    }),
  );
  const running = (): boolean => proc.exitCode === null && proc.signalCode === null;
  const stats = async (): Promise<StatsRow[]> => {
    const res = await fetch(`http://127.0.0.1:${statsPort}/stats;csv`, { signal: AbortSignal.timeout(5000) });
    const [header = '', ...lines] = (await res.text()).trim().split('\n');
    const names = header.replace(/^# /, '').split(',');
    return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [names[i] ?? String(i), v])));
  };
  const handle: RunningHaproxy = {
    port,
    output: () => out,
    stats,
    async serverStatus(name) {
      return (await stats()).find((r) => r.pxname === 'gateways' && r.svname === name)?.status;
    },
    async stop() {
      if (running()) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitUntil(
      () => `HAProxy to answer its stats on ${statsPort}:\n${out}`,
      async () => {
        if (!running()) throw new Error(`haproxy exited (${proc.exitCode ?? proc.signalCode}):\n${out}`);
        return (await stats().catch(() => [])).length > 0 ? true : undefined;
      },
    );
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}
