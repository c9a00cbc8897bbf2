import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { Config } from '../config/index.ts';
import { chooseEngine, EngineUnavailable, type Engine } from '../http/engine/index.ts';
import { isToPrimary } from '../invalidation/messages.ts';
import type { RedisBridge } from '../invalidation/redis.ts';
import type { Logger } from '../log/index.ts';
import { ChangeHub } from './hub.ts';

/** How long a write waits for the other workers to apply it before the laggard is replaced. */
const ACK_TIMEOUT_MS = 2000;
/** Workers get this long to finish requests in flight on shutdown, plus a margin to exit. */
const STOP_GRACE_MS = 10_000;
const STOP_MARGIN_MS = 2_000;
const MAX_BACKOFF_MS = 5_000;
/** A worker that lived this long resets the restart backoff. */
const STABLE_MS = 10_000;

/**
 * The primary: forks AUTH_WORKERS HTTP workers on one port, replaces a worker that dies (with
 * backoff), fans committed changes out between workers, and on SIGTERM/SIGINT stops them
 * gracefully. It holds no socket and no graph. Resolves with the process exit code.
 */
export async function runPrimary(config: Config, log: Logger): Promise<number> {
  let engine: Engine;
  try {
    engine = chooseEngine(config.AUTH_HTTP_ENGINE);
  } catch (err) {
    if (!(err instanceof EngineUnavailable)) throw err;
    process.stderr.write(`rbac-gateway: configuration error: ${err.message}\n`);
    return 2;
  }
  log.info('http engine', { engine: engine.name, reason: engine.reason });
  engine.prepareCluster();
  const hub = new ChangeHub(ACK_TIMEOUT_MS, log);
  const redis = config.AUTH_REDIS_URL === undefined ? undefined : await startRedis(config.AUTH_REDIS_URL, hub, log);
  const startedAt = new Map<number, number>();
  let restarts = 0;
  let backoffMs = 0;
  let phase: 'starting' | 'running' | 'stopping' = 'starting';
  let readyCount = 0;
  let finish: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (finish = resolve));

  const fork = (): Worker => {
    // Workers run the engine decided here, so `auto` is decided (and logged) once.
    const w = cluster.fork({ AUTH_HTTP_ENGINE: engine.name });
    startedAt.set(w.id, Date.now());
    // A message sent to a worker that just died fails with EPIPE, emitted as 'error' on the
    // worker: unheard, it would take the primary (and so every worker) down. Its 'exit' follows.
    w.on('error', (err: NodeJS.ErrnoException) => log.debug('message to a worker failed', { worker: w.id, error: err.code ?? err.message }));
    w.on('message', (m: unknown) => {
      if (!isToPrimary(m)) return;
      switch (m.t) {
        case 'hello':
          hub.join(w);
          if (redis !== undefined) hub.broadcast({ t: 'redis', subscribed: redis.subscribed });
          break;
        case 'ready':
          if (phase === 'starting' && ++readyCount === config.AUTH_WORKERS) {
            phase = 'running';
            log.info('listening', { host: config.AUTH_SERVER_HOST, port: m.port, workers: config.AUTH_WORKERS, database: config.AUTH_DATABASE_TYPE, engine: engine.name });
          }
          break;
        case 'fatal':
          // At start-up a worker that cannot start means the service cannot: stop. Later, a
          // replacement that cannot start (the database is down) is retried with backoff.
          if (phase === 'starting') fatal(m.message);
          else log.error('replacement worker cannot start; retrying', { worker: w.id, error: m.message });
          break;
        case 'change':
          hub.change(w, m.id, m.msgs);
          if (redis !== undefined) for (const msg of m.msgs) redis.publish(msg);
          break;
        case 'ack':
          hub.ack(w, m.id);
          break;
      }
    });
    return w;
  };

  const stop = (code: number): void => {
    if (phase === 'stopping') return;
    phase = 'stopping';
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    void redis?.close();
    if (alive.length === 0) return finish(code);
    for (const w of alive) if (w.isConnected()) w.send({ t: 'shutdown' });
    const force = setTimeout(() => {
      log.error('workers did not stop in time; killing them');
      for (const w of alive) w.process.kill('SIGKILL');
      finish(code === 0 ? 1 : code);
    }, STOP_GRACE_MS + STOP_MARGIN_MS);
    force.unref();
    exitCode = code;
  };
  let exitCode = 0;

  const fatal = (message: string): void => {
    if (phase === 'stopping') return;
    log.error('worker cannot start; stopping the service', { error: message });
    process.stderr.write(`rbac-gateway: cannot start: ${message}\n`);
    stop(1);
  };

  cluster.on('exit', (w, code, signal) => {
    hub.leave(w.id);
    const lived = Date.now() - (startedAt.get(w.id) ?? Date.now());
    startedAt.delete(w.id);
    if (phase === 'stopping') {
      if (Object.keys(cluster.workers ?? {}).length === 0) finish(exitCode);
      return;
    }
    restarts++;
    backoffMs = lived > STABLE_MS ? 0 : Math.min(MAX_BACKOFF_MS, Math.max(100, backoffMs * 2));
    log.warn('worker exited; replacing it', { worker: w.id, pid: w.process.pid, code, signal, restarts, backoff_ms: backoffMs });
    setTimeout(() => {
      if (phase !== 'stopping') fork();
    }, backoffMs);
  });

  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
  portIsFree(config.AUTH_SERVER_HOST, config.AUTH_SERVER_PORT).then(
    () => {
      if (phase !== 'stopping') for (let i = 0; i < config.AUTH_WORKERS; i++) fork();
    },
    (err: unknown) => {
      const why = err instanceof Error && 'code' in err ? String(err.code) : String(err);
      fatal(`cannot listen on ${config.AUTH_SERVER_HOST}:${config.AUTH_SERVER_PORT} (${why})`);
    },
  );
  return done;
}

/** Bridges this instance's change fan-out to the other instances through Redis. */
async function startRedis(url: string, hub: ChangeHub, log: Logger): Promise<RedisBridge> {
  const { redisBridge } = await import('../invalidation/redis.ts'); // ioredis only when Redis is used
  return redisBridge({
    url,
    instance: randomUUID(),
    log,
    onChange: (msg) => hub.change(undefined, 0, [msg]),
    onState: (subscribed) => hub.broadcast({ t: 'redis', subscribed }),
  });
}

/**
 * Workers share the port through SO_REUSEPORT, which would also let a second instance started on
 * the same port silently take half of the connections. A plain bind without SO_REUSEPORT fails
 * while anyone listens there, so the primary tries one (and releases it) before forking.
 */
function portIsFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
