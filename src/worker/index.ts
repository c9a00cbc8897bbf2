import { TenantCache } from '../cache/index.ts';
import type { Config } from '../config/index.ts';
import { startHttpServer, type Backend } from '../http/server.ts';
import { ipcBus } from '../invalidation/ipc.ts';
import { isToWorker } from '../invalidation/messages.ts';
import type { Bus } from '../invalidation/port.ts';
import type { Logger } from '../log/index.ts';
import { PooledStore } from '../pool/index.ts';

/** Threads per worker process: hydrations read in parallel; SQLite serialises writes anyway. */
const POOL_THREADS = 2;
/** A gap larger than this is not replayed: the graph is rehydrated instead. */
const REPLAY_LIMIT = 1000;
const GRACE_MS = 10_000;

export interface RunningWorker {
  readonly port: number;
  /** Graceful stop: no new connections, requests in flight finish (at most `graceMs`), store closed. */
  stop(graceMs: number): Promise<void>;
}

/** Composition root of an HTTP worker: config → pool (store) → cache → bus → http. */
export async function startWorker(config: Config, log: Logger, bus: Bus): Promise<RunningWorker> {
  const store = new PooledStore({ type: config.AUTH_DATABASE_TYPE, sqlitePath: config.AUTH_SQLITE_PATH }, POOL_THREADS);
  try {
    const cache = new TenantCache((tenant) => store.load(tenant), config.AUTH_CACHE_MAX_MB * 1024 * 1024);
    const replay = (tenant: string) => (since: number) => store.changes(tenant, since, REPLAY_LIMIT);
    bus.subscribe(async (msg) => {
      if (msg.v !== 1) return cache.drop(msg.tenant);
      await cache.apply(msg.tenant, msg.change, msg.revision, replay(msg.tenant));
    });
    const backend: Backend = {
      async write(tenant, change) {
        const outcome = await store.write(tenant, change);
        if (outcome.ok) {
          await cache.apply(tenant, outcome.change, outcome.revision, replay(tenant));
          await bus.publish({ v: 1, tenant, revision: outcome.revision, change: outcome.change });
        }
        return outcome;
      },
      changes: (tenant, since, limit) => store.changes(tenant, since, limit),
      revision: (tenant) => store.revision(tenant),
      notReady: async () => {
        try {
          await store.ping();
          return [];
        } catch {
          return ['database'];
        }
      },
    };
    const server = await startHttpServer({ config, log, cache, backend, cursorSecret: await store.cursorSecret() });
    return {
      port: server.port,
      async stop(graceMs) {
        await server.close(graceMs);
        await bus.close();
        await store.close();
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * A worker process under the primary: joins the change fan-out before anything can be cached,
 * serves, and stops gracefully on the primary's word or on a signal. It exits when the primary
 * goes away, so a killed primary leaves no orphan serving a stale graph.
 */
export async function runWorkerProcess(config: Config, log: Logger): Promise<void> {
  const bus = ipcBus();
  await bus.join();
  let worker: RunningWorker;
  try {
    worker = await startWorker(config, log, bus);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.send?.({ t: 'fatal', message });
    log.error('worker cannot start', { error: message });
    setTimeout(() => process.exit(1), 100);
    return;
  }
  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('worker stopping', { reason });
    worker.stop(GRACE_MS).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('worker stop failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('message', (m: unknown) => {
    if (isToWorker(m) && m.t === 'shutdown') stop('shutdown');
  });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('disconnect', () => {
    log.warn('primary is gone; exiting');
    process.exit(1);
  });
  process.send?.({ t: 'ready', port: worker.port });
  log.debug('worker ready', { port: worker.port });
}
