import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config/index.ts';
import type { EngineName } from '../http/engine/index.ts';
import type { Logger } from '../log/index.ts';
import { isToPrimary, type ToPrimary } from '../ipc/protocol.ts';
import { SHUTDOWN_GRACE_MS, STOP_MARGIN_MS } from '../ipc/timing.ts';
import { systemClock, type Clock, type Timer } from '../time/clock.ts';
import type { ChangeRelay } from './relay.ts';
import type { WorkerScrape } from './scrape.ts';

/** What the supervisor tells and asks beyond the workers' change traffic. */
export interface SupervisorHooks {
  readonly scrape: WorkerScrape;
  /** A worker died and is being replaced. */
  readonly restarted: () => void;
  /** Every worker of the first start listens (once). */
  readonly listening: () => void;
}

/** The part of node:cluster the supervisor uses: the module itself in the service, a stand-in in tests. */
export interface WorkerCluster {
  fork(env: Record<string, string>): Worker;
  on(event: 'exit', listener: (w: Worker, code: number, signal: string) => void): unknown;
}

/** What the supervisor runs on: node:cluster and the system clock unless a test says otherwise. */
export interface SupervisorRuntime {
  readonly cluster: WorkerCluster;
  readonly clock: Clock;
}

const MAX_BACKOFF_MS = 5_000;
/** A worker that lived this long resets the restart backoff. */
const STABLE_MS = 10_000;

type Phase = 'starting' | 'running' | 'stopping';

/**
 * Keeps AUTH_WORKERS workers running: forks them, replaces one that dies (with backoff, reset by
 * a worker that lived long enough), stops them all gracefully (killed if they do not), and stops
 * the service when a worker cannot start at start-up.
 */
export class Supervisor {
  readonly #config: Config;
  readonly #log: Logger;
  readonly #engine: EngineName;
  readonly #relay: ChangeRelay;
  readonly #hooks: SupervisorHooks;
  readonly #cluster: WorkerCluster;
  readonly #clock: Clock;
  /**
   * The workers forked and not yet exited, with when each started. Kept here rather than read from
   * `cluster.workers`, which keeps a worker whose process exited before its IPC channel closed:
   * counted from there, the last exit could leave the service waiting for a worker already gone.
   */
  readonly #live = new Map<number, { readonly worker: Worker; readonly startedAt: number }>();
  #phase: Phase = 'starting';
  #readyCount = 0;
  #restarts = 0;
  #backoffMs = 0;
  #exitCode = 0;
  /** Set from SIGTERM/SIGINT to the end of AUTH_SHUTDOWN_DELAY_MS (see {@link drainThenStop}). */
  #drainTimer: Timer | undefined;
  #finish: (code: number) => void = () => undefined;
  /** Resolves with the process exit code once the workers stopped. */
  readonly done = new Promise<number>((resolve) => (this.#finish = resolve));

  constructor(
    config: Config,
    log: Logger,
    engine: EngineName,
    relay: ChangeRelay,
    hooks: SupervisorHooks,
    runtime: SupervisorRuntime = { cluster, clock: systemClock },
  ) {
    this.#config = config;
    this.#log = log;
    this.#engine = engine;
    this.#relay = relay;
    this.#hooks = hooks;
    this.#cluster = runtime.cluster;
    this.#clock = runtime.clock;
    this.#cluster.on('exit', (w, code, signal) => this.#exited(w, code, signal));
  }

  /** The workers alive now. */
  #alive(): Worker[] {
    return [...this.#live.values()].map((l) => l.worker);
  }

  /** Forks every worker, unless the service is already stopping (or draining). */
  start(): void {
    if (this.#phase !== 'stopping' && this.#drainTimer === undefined) for (let i = 0; i < this.#config.AUTH_WORKERS; i++) this.#fork();
  }

  /**
   * SIGTERM/SIGINT: every worker answers `/ready` with 503 `draining` at once and goes on serving
   * for AUTH_SHUTDOWN_DELAY_MS (load balancers take the instance out meanwhile), then everything
   * stops as in {@link stop}. A second signal during the delay stops at once.
   */
  drainThenStop(): void {
    if (this.#phase === 'stopping') return;
    const delayMs = this.#config.AUTH_SHUTDOWN_DELAY_MS;
    const alive = this.#alive();
    if (this.#drainTimer !== undefined || delayMs === 0 || alive.length === 0) return this.stop(0);
    this.#log.info('draining', { delay_ms: delayMs });
    for (const w of alive) if (w.isConnected()) w.send({ t: 'drain' });
    this.#drainTimer = this.#clock.setTimeout(() => this.stop(0), delayMs);
  }

  /** Asks every worker to shut down; kills those still alive after the grace period. */
  stop(code: number): void {
    if (this.#phase === 'stopping') return;
    this.#phase = 'stopping';
    this.#clock.clearTimeout(this.#drainTimer);
    const alive = this.#alive();
    this.#relay.close();
    if (alive.length === 0) return this.#finish(code);
    for (const w of alive) if (w.isConnected()) w.send({ t: 'shutdown' });
    this.#clock.setTimeout(
      () => {
        this.#log.error('workers did not stop in time; killing them');
        for (const w of alive) w.process.kill('SIGKILL');
        this.#finish(code === 0 ? 1 : code);
      },
      SHUTDOWN_GRACE_MS + STOP_MARGIN_MS,
      { unref: true },
    );
    this.#exitCode = code;
  }

  /**
   * The service cannot start: says why, once, and stops with exit code 1, or 2 when the settings
   * do not fit the database (as for a bad setting: a supervisor should not restart it as is).
   */
  fatal(message: string, settings = false): void {
    if (this.#phase === 'stopping') return;
    this.#log.error('worker cannot start; stopping the service', { err: message });
    process.stderr.write(`rbac-gateway: cannot start: ${message}\n`);
    this.stop(settings ? 2 : 1);
  }

  #fork(): Worker {
    // Workers run the engine decided here, so `auto` is decided (and logged) once.
    const w = this.#cluster.fork({ AUTH_HTTP_ENGINE: this.#engine });
    this.#live.set(w.id, { worker: w, startedAt: this.#clock.now() });
    // A message sent to a worker that just died fails with EPIPE, emitted as 'error' on the
    // worker: unheard, it would take the primary (and so every worker) down. Its 'exit' follows.
    w.on('error', (err: NodeJS.ErrnoException) => this.#log.debug('message to a worker failed', { worker: w.id, err }));
    w.on('message', (m: unknown) => {
      if (isToPrimary(m)) this.#heard(w, m);
    });
    return w;
  }

  #heard(w: Worker, m: ToPrimary): void {
    if (m.t === 'ready') return this.#ready(m.port);
    if (m.t === 'metrics') return this.#hooks.scrape.answered(w, m.id, m.snapshot);
    if (m.t !== 'fatal') return this.#relay.fromWorker(w, m);
    // At start-up a worker that cannot start means the service cannot: stop. Later, a
    // replacement that cannot start (the database is down) is retried with backoff.
    if (this.#phase === 'starting') this.fatal(m.message, m.settings === true);
    else this.#log.error('replacement worker cannot start; retrying', { worker: w.id, err: m.message });
  }

  /** Logs 'listening' once, when the last of the first workers listens. */
  #ready(port: number): void {
    if (this.#phase !== 'starting' || ++this.#readyCount !== this.#config.AUTH_WORKERS) return;
    this.#phase = 'running';
    const c = this.#config;
    this.#log.info('listening', { host: c.AUTH_SERVER_HOST, port, workers: c.AUTH_WORKERS, database: c.AUTH_DATABASE_TYPE, engine: this.#engine });
    this.#hooks.listening();
  }

  #exited(w: Worker, code: number, signal: string): void {
    this.#relay.leave(w.id);
    this.#hooks.scrape.exited(w.id);
    const lived = this.#clock.now() - (this.#live.get(w.id)?.startedAt ?? this.#clock.now());
    this.#live.delete(w.id);
    if (this.#phase === 'stopping') {
      if (this.#live.size === 0) this.#finish(this.#exitCode);
      return;
    }
    if (this.#drainTimer !== undefined) {
      // The instance is going away: a worker that stopped (signalled itself) is not replaced.
      if (code === 0) this.#log.debug('worker stopped while draining', { worker: w.id });
      else this.#log.warn('worker exited while draining; not replaced', { worker: w.id, worker_pid: w.process.pid, code, signal });
      if (this.#live.size === 0) this.stop(0);
      return;
    }
    this.#restarts++;
    this.#hooks.restarted();
    this.#backoffMs = lived > STABLE_MS ? 0 : Math.min(MAX_BACKOFF_MS, Math.max(100, this.#backoffMs * 2));
    this.#log.warn('worker exited; replacing it', {
      worker: w.id,
      worker_pid: w.process.pid,
      code,
      signal,
      restarts: this.#restarts,
      backoff_ms: this.#backoffMs,
    });
    this.#clock.setTimeout(() => {
      if (this.#phase !== 'stopping' && this.#drainTimer === undefined) this.#fork();
    }, this.#backoffMs);
  }
}
