import type { TenantId } from '../authz/tenant.ts';
import { TenantCache, type CacheEvents, type Replay } from '../cache/index.ts';
import type { WriteOutcome } from '../authz/changes.ts';
import { WorkerMetrics } from '../metrics/worker.ts';
import { NO_REQUEST_METRICS } from '../metrics/requests.ts';
import type { Config } from '../config/index.ts';
import { chooseEngine } from '../http/engine/index.ts';
import { API_SERIES, startHttpServer, type Backend } from '../http/server.ts';
import { workerBus, type Bus } from '../invalidation/index.ts';
import type { Logger } from '../log/index.ts';
import { PooledStore } from '../pool/index.ts';
import { isToWorker, type ToPrimary } from '../ipc/protocol.ts';
import { APPLY_BUDGET_MS, SHUTDOWN_GRACE_MS } from '../ipc/timing.ts';
import { CircuitBreaker } from '../store/breaker.ts';
import { storeSettings } from '../store/settings.ts';
import { ResilientStore } from '../store/resilient.ts';
import { WritePipeline } from './write-pipeline.ts';
import { loadClientIndex, startRevalidation } from './revalidation.ts';
import { AppError } from '../errors/index.ts';
import { AuditTrail } from '../audit/trail.ts';
import { startAuditRetention } from '../audit/retention.ts';

/** Threads per worker process: hydrations read in parallel; SQLite serialises writes anyway. */
const POOL_THREADS = 2;
/** A gap larger than this is not replayed: the graph is rehydrated instead. */
const REPLAY_LIMIT = 1000;

export interface RunningWorker {
  readonly port: number;
  /** Shutdown has begun: `/ready` answers 503 `draining` while everything is still served. */
  drain(): void;
  /** Graceful stop: no new connections, requests in flight finish (at most `graceMs`), store closed. */
  stop(graceMs: number): Promise<void>;
}

/** The instance's Redis subscription as the primary reports it ('off' without Redis). */
export interface RedisStatus {
  state: 'off' | 'up' | 'down';
}

/** Composition root of an HTTP worker: config → pool (store) → cache → bus → http. */
async function startWorker(
  config: Config, log: Logger, bus: Bus, redis: RedisStatus = { state: 'off' },
): Promise<RunningWorker & { revalidate(): Promise<void>; metrics: WorkerMetrics | undefined }> {
  let metrics: WorkerMetrics | undefined;
  const { pooled, store } = openResilientStore(config, log, () => metrics?.retried());
  try {
    const cacheEvents: CacheEvents = {
      hydrated: (seconds) => metrics?.hydrated(seconds),
      evicted: () => metrics?.evicted(),
      gap: (resolution) => metrics?.gap(resolution),
    };
    const cache = new TenantCache((tenant) => store.load(tenant), config.AUTH_CACHE_MAX_MB * 1024 * 1024, undefined, cacheEvents);
    if (config.AUTH_METRICS_PORT !== 0) {
      metrics = new WorkerMetrics(API_SERIES, {
        cacheClients: () => cache.size,
        cacheBytes: () => cache.bytes,
        indexedClients: () => cache.indexed,
        circuitState: () => store.circuitState,
        dbConnections: () => pooled.connections(),
      });
    }
    const replay = (tenant: TenantId) => (since: number) => store.changes(tenant, since, REPLAY_LIMIT);
    // What revalidation replays was missed by the messages (Redis down or a message lost): its
    // delay, from the changelog's commit time, is the backstop's invalidation delay.
    const replayMissed = (tenant: TenantId): Replay => async (since) => {
      const records = await store.changes(tenant, since, REPLAY_LIMIT);
      for (const r of records) metrics?.invalidated('instance', (Date.now() - Date.parse(`${r.at.slice(0, 23)}Z`)) / 1000);
      return records;
    };
    const pipeline = new WritePipeline(
      {
        commit: (batch) => store.writeMany(batch),
        // Both must be done before the writes are answered; neither needs the other first.
        fanOut: async (batch) => {
          await Promise.all([
            ...batch.map(({ tenant, outcome }) =>
              outcome.ok ? cache.apply(tenant, outcome.change, outcome.revision, replay(tenant)) : cache.catchUp(tenant, outcome.revision, replay(tenant)),
            ),
            bus.publish(
              batch.map(({ tenant, outcome }) =>
                // `at`: when it committed, for the invalidation delay measured where it is applied.
                outcome.ok ? { v: 1, tenant, revision: outcome.revision, change: outcome.change, at: Date.now() } : { v: 1, tenant, revision: outcome.revision },
              ),
            ),
          ]);
        },
      },
      { commitSlots: pooled.writeSlots, fanOutSlots: FAN_OUT_SLOTS, maxBatch: MAX_WRITE_BATCH },
    );
    applyChangesFrom(bus, cache, replay, metrics);
    // After subscribing: a tenant created after this read is heard of as a change.
    const created = await loadClientIndex(cache, store);
    const revalidator = startRevalidation(cache, store, replayMissed, created, config.AUTH_REVALIDATE_MS, log);
    const trail = new AuditTrail((rows) => store.appendAudit(rows), log);
    const retention = startAuditRetention((before, limit) => store.pruneAudit(before, limit), config.AUTH_AUDIT_RETENTION_DAYS, log);
    const backend: Backend = {
      write: (tenant, change, audit) => counted(pipeline.write(tenant, change, audit), change.op, metrics),
      audit: (tenant, before, limit) => store.audit(tenant, before, limit),
      recordAudit: (row) => trail.record(row),
      changes: (tenant, since, limit) => store.changes(tenant, since, limit),
      revision: (tenant) => store.revision(tenant),
      workflows: store,
      notReady: async () => {
        const missing: string[] = [];
        if (store.open) missing.push('database');
        else await store.ping().catch(() => missing.push('database'));
        if (redis.state === 'down') missing.push('redis');
        return missing;
      },
    };
    // The primary resolved `auto` before forking (and refused a `uws` that cannot load).
    const engine = chooseEngine(config.AUTH_HTTP_ENGINE);
    const server = await startHttpServer({
      config, log, cache, backend, engine, cursorSecret: await store.cursorSecret(), metrics: metrics?.requests ?? NO_REQUEST_METRICS,
    });
    return {
      port: server.port,
      metrics,
      revalidate: revalidator.now,
      drain: () => server.drain(),
      async stop(graceMs) {
        revalidator.stop();
        retention.stop();
        await server.close(graceMs);
        await trail.close();
        await bus.close();
        await store.close();
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** The store as the worker uses it: the pool's threads, behind retries and a circuit breaker. */
function openResilientStore(config: Config, log: Logger, retried: () => void): { pooled: PooledStore; store: ResilientStore } {
  const pooled = new PooledStore(storeSettings(config), POOL_THREADS, (err) => log.warn('store thread failed; replaced', { error: String(err) }));
  const breaker = new CircuitBreaker({
    threshold: config.AUTH_DB_BREAKER_THRESHOLD,
    cooldownMs: config.AUTH_DB_BREAKER_COOLDOWN_MS,
    onChange: (state, failures) => {
      if (state === 'open') log.warn('database circuit open: writes and hydrations answer 503', { failures, cooldown_ms: config.AUTH_DB_BREAKER_COOLDOWN_MS });
      else log.info(`database circuit ${state}`);
    },
  });
  const retry = { attempts: config.AUTH_DB_RETRY_ATTEMPTS, baseMs: 50, maxMs: 1000 };
  return { pooled, store: new ResilientStore(pooled, breaker, retry, retried) };
}

/** Changes committed by the other workers (and instances) are applied to this worker's graphs. */
function applyChangesFrom(bus: Bus, cache: TenantCache, replay: (tenant: TenantId) => Replay, metrics: WorkerMetrics | undefined): void {
  bus.subscribe(async (msg) => {
    if (msg.v !== 1) return cache.drop(msg.tenant);
    // Applying is immediate unless a gap needs a changelog replay, which waits behind the pool's
    // queue. The writer's response waits for this acknowledgement, so a replay that is slow
    // gives up the graph instead (the next request hydrates it) rather than hold the write.
    const applied = msg.change === undefined ? cache.catchUp(msg.tenant, msg.revision, replay(msg.tenant)) : cache.apply(msg.tenant, msg.change, msg.revision, replay(msg.tenant));
    if (!(await within(applied, APPLY_BUDGET_MS))) cache.drop(msg.tenant);
    else if (msg.at !== undefined) metrics?.invalidated(msg.remote === true ? 'instance' : 'worker', (Date.now() - msg.at) / 1000);
  });
}

/** A write's outcome counted by op and result (ok, or the error code). */
function counted(write: Promise<WriteOutcome>, op: string, metrics: WorkerMetrics | undefined): Promise<WriteOutcome> {
  if (metrics === undefined) return write;
  return write.then(
    (outcome) => {
      metrics.write(op, outcome.ok ? 'ok' : outcome.error.code);
      return outcome;
    },
    (err: unknown) => {
      metrics.write(op, err instanceof AppError ? err.code : 'ERR_INTERNAL');
      throw err;
    },
  );
}

/**
 * Fan-out batches in flight: one, so that changes committed while a fan-out is acknowledged go
 * together in the next message (the hand-offs, not the bytes, are what a write costs the checks).
 */
const FAN_OUT_SLOTS = 1;
/** Writes per batch at most: one SQLite transaction holds the write lock only briefly. */
const MAX_WRITE_BATCH = 256;

/** Whether `p` settles within `ms` (it keeps running either way). */
function within(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    p.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}

/**
 * A worker process under the primary: joins the change fan-out before anything can be cached,
 * serves, and stops gracefully on the primary's word or on a signal. It exits when the primary
 * goes away, so a killed primary leaves no orphan serving a stale graph.
 */
export async function runWorkerProcess(config: Config, log: Logger): Promise<void> {
  const bus = workerBus();
  const redis: RedisStatus = { state: config.AUTH_REDIS_URL === undefined ? 'off' : 'down' };
  let revalidate: (() => Promise<void>) | undefined;
  process.on('message', (m: unknown) => {
    if (!isToWorker(m) || m.t !== 'redis') return;
    const was = redis.state;
    redis.state = m.subscribed ? 'up' : 'down';
    // Changes published while the subscription was down are lost: catch up at once.
    if (was === 'down' && redis.state === 'up') void revalidate?.();
  });
  // Listening for the word to stop before starting: a stop asked for during start-up (SIGTERM
  // right after launch) is carried out once started, instead of going unheard.
  let worker: RunningWorker | undefined;
  let stopAsked: string | undefined;
  const stop = (reason: string): void => {
    if (stopAsked !== undefined) return;
    stopAsked = reason;
    if (worker !== undefined) stopStarted(worker, reason, log);
  };
  let draining = false;
  const drain = (): void => {
    if (draining) return;
    draining = true;
    worker?.drain();
  };
  process.on('message', (m: unknown) => {
    if (isToWorker(m) && m.t === 'shutdown') stop('shutdown');
    else if (isToWorker(m) && m.t === 'drain') drain();
  });
  // A signal sent to the worker itself (a kill of the whole process group) is carried out as the
  // primary carries out its own: draining at once, stopping after AUTH_SHUTDOWN_DELAY_MS. A
  // second signal stops at once.
  let signals = 0;
  const signalled = (signal: string): void => {
    if (++signals > 1 || config.AUTH_SHUTDOWN_DELAY_MS === 0) return stop(signal);
    drain();
    setTimeout(() => stop(signal), config.AUTH_SHUTDOWN_DELAY_MS);
  };
  let metrics: WorkerMetrics | undefined;
  process.on('message', (m: unknown) => {
    if (!isToWorker(m) || m.t !== 'metrics' || metrics === undefined) return;
    const id = m.id;
    metrics.snapshot().then(
      (snapshot) => tell({ t: 'metrics', id, snapshot }),
      (err: unknown) => log.warn('metrics snapshot failed', { error: err instanceof Error ? err.message : String(err) }),
    );
  });
  process.on('SIGTERM', () => signalled('SIGTERM'));
  process.on('SIGINT', () => signalled('SIGINT'));
  process.on('disconnect', () => {
    log.warn('primary is gone; exiting');
    process.exit(1);
  });
  await bus.join();
  try {
    const started = await startWorker(config, log, bus, redis);
    revalidate = started.revalidate;
    metrics = started.metrics;
    worker = started;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    tell({ t: 'fatal', message, settings: err instanceof AppError && err.code === 'ERR_STORE_ENCRYPTION_MISMATCH' });
    log.error('worker cannot start', { error: message });
    setTimeout(() => process.exit(1), 100);
    return;
  }
  if (stopAsked !== undefined) return stopStarted(worker, stopAsked, log);
  if (draining) worker.drain();
  tell({ t: 'ready', port: worker.port });
  log.debug('worker ready', { port: worker.port });
}

/** Sends the supervisor a message of its protocol (dropped when the primary is gone). */
function tell(m: ToPrimary): void {
  process.send?.(m);
}

/** Graceful stop of a started worker, then exit (0, or 1 when the stop failed). */
function stopStarted(worker: RunningWorker, reason: string, log: Logger): void {
  log.info('worker stopping', { reason });
  worker.stop(SHUTDOWN_GRACE_MS).then(
    () => process.exit(0),
    (err: unknown) => {
      log.error('worker stop failed', { error: String(err) });
      process.exit(1);
    },
  );
}
