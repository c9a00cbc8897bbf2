import type { EngineResponse, Handler, Listener } from '../engine/port.ts';

/** On shutdown, connections close after this long without a new request (and none in flight). */
const DRAIN_QUIET_MS = 100;

/**
 * Counts requests so that shutdown can wait for them: every request received (`served`, guarded
 * handlers count it) and every one still answering asynchronously (`inFlight`, see {@link track}).
 */
export class Drain {
  /** Requests received so far; shutdown waits until it stops moving. */
  #served = 0;
  #inFlight = 0;
  #draining = false;
  readonly #onBegin: () => void;

  /** `onBegin`: told once shutdown begins, so that answers from then on close their connections. */
  constructor(onBegin: () => void) {
    this.#onBegin = onBegin;
  }

  /** Whether shutdown has begun: `/ready` then answers 503 `draining`. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Shutdown has begun, serving goes on: `/ready` says `draining` (load balancers take the
   * instance out) and every answer closes its connection, so that clients reconnect elsewhere.
   */
  begin(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#onBegin();
  }

  /**
   * Wraps a handler so that its request counts, and so that a bug in its synchronous part goes
   * to `onThrow` (which answers 500) instead of taking the process down.
   */
  guard(handler: Handler, onThrow: (res: EngineResponse, err: unknown) => void): Handler {
    return (res, req) => {
      this.#served++;
      try {
        handler(res, req);
      } catch (err) {
        onThrow(res, err);
      }
    };
  }

  /** Counts an asynchronous answer as in flight until `work` settles (it must not reject). */
  track(work: Promise<void>): void {
    this.#inFlight++;
    void work.finally(() => {
      this.#inFlight--;
    });
  }

  /** Counts an answer as in flight until {@link leave} (once per enter): a callback's, without a promise. */
  enter(): void {
    this.#inFlight++;
  }

  leave(): void {
    this.#inFlight--;
  }

  /** Stops accepting, waits for requests in flight (at most `graceMs`), then closes connections. */
  close(listener: Listener, graceMs: number): Promise<void> {
    return new Promise<void>((done) => {
      this.begin();
      listener.stopAccepting();
      const deadline = Date.now() + graceMs;
      let seen = -1;
      // Requests already sent on open connections are still read and answered: connections
      // close once nothing is in flight and no request arrived for a quiet period.
      const check = (): void => {
        if ((this.#inFlight === 0 && this.#served === seen) || Date.now() >= deadline) {
          listener.closeConnections();
          done();
          return;
        }
        seen = this.#served;
        setTimeout(check, DRAIN_QUIET_MS);
      };
      check();
    });
  }
}
