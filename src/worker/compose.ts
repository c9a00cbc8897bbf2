import { TenantCache, type CacheEvents, type GraphLoader } from '../cache/index.ts';
import { loadClientIndex, startRevalidation } from '../cache/revalidation.ts';
import { WorkerMetrics } from '../metrics/worker.ts';
import { NO_REQUEST_METRICS } from '../metrics/requests.ts';
import type { Config } from '../config/index.ts';
import { chooseEngine } from '../http/engine/index.ts';
import { API_SERIES, RevokedTokens, startHttpServer } from '../http/server.ts';
import type { Bus } from '../invalidation/index.ts';
import type { Logger } from '../log/index.ts';
import { PooledStore } from '../pool/index.ts';
import { CircuitBreaker } from '../store/wrappers/breaker.ts';
import { storeSettings } from '../store/settings.ts';
import { ResilientStore } from '../store/wrappers/resilient.ts';
import { retryPolicy } from '../store/wrappers/retry.ts';
import { WritePipeline } from './write-pipeline.ts';
import { AuditTrail } from '../audit/trail.ts';
import { startAuditRetention } from '../audit/retention.ts';
import { WorkerBackend, type RedisStatus } from './backend.ts';
import { FanOut } from './fan-out.ts';
import type { Stoppable } from './lifecycle.ts';
import { applyChangesFrom, changelogReplay, measuredReplay } from './remote-changes.ts';
import { Revocations } from './revocations.ts';
import { NO_TRACER, type Tracer } from '../trace/index.ts';

/** Threads per worker process: hydrations read in parallel; SQLite serialises writes anyway. */
const POOL_THREADS = 2;
/**
 * Fan-out batches in flight: one, so that changes committed while a fan-out is acknowledged go
 * together in the next message (the hand-offs, not the bytes, are what a write costs the checks).
 */
const FAN_OUT_SLOTS = 1;
/** Writes per batch at most: one SQLite transaction holds the write lock only briefly. */
const MAX_WRITE_BATCH = 256;
/** How long the spans not sent yet may take to go at stop: a collector that does not answer must not hold the stop. */
const TRACES_CLOSE_MS = 2_000;

export interface RunningWorker extends Stoppable {
  readonly port: number;
}

/** A started worker, with what its process's messages reach. */
export interface StartedWorker extends RunningWorker {
  /** Runs the revalidation backstop now (after Redis came back). */
  revalidate(): Promise<void>;
  readonly metrics: WorkerMetrics | undefined;
}

export type { RedisStatus } from './backend.ts';

/** What a worker is handed besides its settings: Redis's state as the primary reports it, the tracer (traces on). */
export interface WorkerInputs {
  readonly redis?: RedisStatus;
  readonly tracer?: Tracer;
}

/**
 * Composition root of an HTTP worker: config → store → pool → cache → bus → metrics → http.
 * The tracer goes to the slow path, the write pipeline, hydrations and the pool.
 */
export async function startWorker(config: Config, log: Logger, bus: Bus, inputs: WorkerInputs = {}): Promise<StartedWorker> {
  const { redis = { state: 'off' }, tracer = NO_TRACER } = inputs;
  let metrics: WorkerMetrics | undefined;
  const { pooled, store } = openResilientStore(config, log, () => metrics?.retried(), tracer);
  try {
    const cache = new TenantCache(
      hydration(store, tracer),
      config.AUTH_CACHE_MAX_MB * 1024 * 1024,
      undefined,
      cacheEvents(() => metrics),
    );
    metrics = workerMetrics(config, cache, pooled, store);
    const replay = changelogReplay(store);
    // Writes, schedule changes included, committed in batches on the pool's write slots, then fanned out.
    const fanOut = new FanOut(cache, bus, replay);
    const pipeline = new WritePipeline(store, fanOut, { commitSlots: pooled.writeSlots, fanOutSlots: FAN_OUT_SLOTS, maxBatch: MAX_WRITE_BATCH }, tracer);
    const revoked = new RevokedTokens();
    const revocations = new Revocations(store, bus, revoked, log);
    applyChangesFrom(bus, cache, replay, metrics, (msg) => revocations.received(msg));
    // After subscribing: a tenant created (or a token revoked) after this read is heard of as a message.
    const created = await loadClientIndex(cache, store);
    await revocations.load();
    revocations.start(config.AUTH_REVALIDATE_MS);
    const revalidator = startRevalidation(cache, store, measuredReplay(replay, metrics), created, config.AUTH_REVALIDATE_MS, log);
    const trail = new AuditTrail((rows) => store.appendAudit(rows), log);
    const retention = startAuditRetention((before, limit) => store.pruneAudit(before, limit), config.AUTH_AUDIT_RETENTION_DAYS, log);
    const backend = new WorkerBackend(store, pipeline, trail, metrics, redis, fanOut, revocations);
    // The primary resolved `auto` before forking (and refused a `uws` that cannot load).
    const engine = chooseEngine(config.AUTH_HTTP_ENGINE);
    const server = await startHttpServer({
      config,
      log,
      cache,
      backend,
      engine,
      cursorSecret: await store.cursorSecret(),
      metrics: metrics?.requests ?? NO_REQUEST_METRICS,
      revoked,
      tracer,
    });
    return {
      port: server.port,
      metrics,
      revalidate: revalidator.now,
      drain: () => server.drain(),
      async stop(graceMs) {
        revalidator.stop();
        retention.stop();
        revocations.stop();
        await server.close(graceMs);
        await trail.close();
        await bus.close();
        await store.close();
        await tracer.close(TRACES_CLOSE_MS);
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** The store as the worker uses it: the pool's threads, behind retries and a circuit breaker. */
function openResilientStore(config: Config, log: Logger, retried: () => void, tracer: Tracer): { pooled: PooledStore; store: ResilientStore } {
  const pooled = new PooledStore(storeSettings(config), POOL_THREADS, (err) => log.warn('store thread failed; replaced', { err }), tracer);
  const breaker = new CircuitBreaker({
    threshold: config.AUTH_DB_BREAKER_THRESHOLD,
    cooldownMs: config.AUTH_DB_BREAKER_COOLDOWN_MS,
    onChange: (state, failures) => {
      if (state === 'open') log.warn('database circuit open: writes and hydrations answer 503', { failures, cooldown_ms: config.AUTH_DB_BREAKER_COOLDOWN_MS });
      else log.info(state === 'closed' ? 'database circuit closed' : 'database circuit half-open');
    },
  });
  return { pooled, store: new ResilientStore(pooled, breaker, retryPolicy(config.AUTH_DB_RETRY_ATTEMPTS), retried) };
}

/** How the cache reads a tenant's graph: from the store, in a span `cache.hydrate` with traces on (the database call its child). */
function hydration(store: ResilientStore, tracer: Tracer): GraphLoader {
  if (!tracer.enabled) return (tenant) => store.loadGraph(tenant);
  return (tenant) => tracer.span('cache.hydrate', () => store.loadGraph(tenant));
}

/** The cache's events, recorded once the metrics exist (AUTH_METRICS_PORT 0: never). */
function cacheEvents(metrics: () => WorkerMetrics | undefined): CacheEvents {
  return {
    hydrated: (seconds) => metrics()?.hydrated(seconds),
    evicted: () => metrics()?.evicted(),
    gap: (resolution) => metrics()?.gap(resolution),
  };
}

/** The worker's metrics, or undefined when AUTH_METRICS_PORT is 0. */
function workerMetrics(config: Config, cache: TenantCache, pooled: PooledStore, store: ResilientStore): WorkerMetrics | undefined {
  if (config.AUTH_METRICS_PORT === 0) return undefined;
  return new WorkerMetrics(API_SERIES, {
    cacheClients: () => cache.size,
    cacheBytes: () => cache.bytes,
    indexedClients: () => cache.indexed,
    circuitState: () => store.circuitState,
    dbConnections: () => pooled.connections(),
  });
}
