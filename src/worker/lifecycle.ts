import type { Config } from '../config/index.ts';
import { AppError } from '../errors/index.ts';
import { SHUTDOWN_GRACE_MS } from '../ipc/timing.ts';
import type { Logger } from '../log/index.ts';
import { tell } from './ipc.ts';

/** What the lifecycle drives once the worker is started. */
export interface Stoppable {
  /** Shutdown has begun: `/ready` answers 503 `draining` while everything is still served. */
  drain(): void;
  /** Graceful stop: no new connections, requests in flight finish (at most `graceMs`), store closed. */
  stop(graceMs: number): Promise<void>;
}

/**
 * A worker process's signals, drain and stop. It listens before the worker is started: a stop
 * asked for during start-up (SIGTERM right after launch) is carried out once started, instead of
 * going unheard.
 */
export class WorkerLifecycle {
  readonly #config: Config;
  readonly #log: Logger;
  #worker: Stoppable | undefined;
  #stopAsked: string | undefined;
  #draining = false;
  #signals = 0;

  constructor(config: Config, log: Logger) {
    this.#config = config;
    this.#log = log;
  }

  /**
   * A signal sent to the worker itself (a kill of the whole process group) is carried out as the
   * primary carries out its own: draining at once, stopping after AUTH_SHUTDOWN_DELAY_MS. A
   * second signal stops at once.
   */
  listenToSignals(): void {
    process.on('SIGTERM', () => this.#signalled('SIGTERM'));
    process.on('SIGINT', () => this.#signalled('SIGINT'));
  }

  /** The primary's word to stop (or a signal's): once only. */
  stop(reason: string): void {
    if (this.#stopAsked !== undefined) return;
    this.#stopAsked = reason;
    if (this.#worker !== undefined) this.#stopStarted(this.#worker, reason);
  }

  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#worker?.drain();
  }

  /**
   * The worker is started: carries out a stop or a drain asked for meanwhile. False when it is
   * stopping already (it must not be announced as ready).
   */
  started(worker: Stoppable): boolean {
    this.#worker = worker;
    if (this.#stopAsked !== undefined) {
      this.#stopStarted(worker, this.#stopAsked);
      return false;
    }
    if (this.#draining) worker.drain();
    return true;
  }

  /** The worker cannot start: the primary is told why, then the process exits. */
  failed(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    tell({ t: 'fatal', message, settings: err instanceof AppError && err.code === 'ERR_STORE_ENCRYPTION_MISMATCH' });
    this.#log.error('worker cannot start', { err });
    setTimeout(() => process.exit(1), 100);
  }

  /** The primary is gone: exit, so that no orphan serves a stale graph. */
  orphaned(): void {
    this.#log.warn('primary is gone; exiting');
    process.exit(1);
  }

  #signalled(signal: string): void {
    if (++this.#signals > 1 || this.#config.AUTH_SHUTDOWN_DELAY_MS === 0) return this.stop(signal);
    this.drain();
    setTimeout(() => this.stop(signal), this.#config.AUTH_SHUTDOWN_DELAY_MS);
  }

  /** Graceful stop of a started worker, then exit (0, or 1 when the stop failed). */
  #stopStarted(worker: Stoppable, reason: string): void {
    this.#log.info('worker stopping', { reason });
    worker.stop(SHUTDOWN_GRACE_MS).then(
      () => process.exit(0),
      (err: unknown) => {
        this.#log.error('worker stop failed', { err });
        process.exit(1);
      },
    );
  }
}
