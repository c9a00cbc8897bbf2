import type { Worker } from 'node:cluster';
import type { Logger } from '../log/index.ts';
import type { BusMessage } from '../invalidation/messages.ts';
import type { ToWorker } from '../ipc/protocol.ts';
import { systemClock, type Clock, type Timer } from '../time/clock.ts';

interface PendingChange {
  /** The worker that committed the change (waiting for `settled`). */
  readonly origin: Worker;
  readonly originId: number;
  readonly waiting: Set<number>;
  readonly timer: Timer;
}

/**
 * The IPC fan-out of committed changes. A change from one worker goes to every other joined
 * worker; the origin hears `settled` when all acknowledged. A worker that does not acknowledge in
 * time is killed (the supervisor replaces it), so no worker goes on serving a stale graph.
 */
export class ChangeHub {
  readonly #joined = new Map<number, Worker>();
  readonly #pending = new Map<number, PendingChange>();
  readonly #ackTimeoutMs: number;
  readonly #log: Logger;
  readonly #clock: Clock;
  #nextId = 1;

  /** `clock`: the acknowledgement timeout's (a test moves it by hand). */
  constructor(ackTimeoutMs: number, log: Logger, clock: Clock = systemClock) {
    this.#ackTimeoutMs = ackTimeoutMs;
    this.#log = log;
    this.#clock = clock;
  }

  /** The worker receives changes from now on. */
  join(w: Worker): void {
    this.#joined.set(w.id, w);
    send(w, { t: 'welcome' });
  }

  /** Sends a message to every joined worker. */
  broadcast(m: ToWorker): void {
    for (const w of this.#joined.values()) send(w, m);
  }

  /** The worker is gone: stop waiting for it. */
  leave(id: number): void {
    this.#joined.delete(id);
    for (const [gid, p] of this.#pending) {
      if (p.waiting.delete(id) && p.waiting.size === 0) this.#settle(gid);
    }
  }

  /**
   * Fans changes out to every joined worker but their origin. `origin` undefined: the change came
   * from another instance (through Redis); nobody waits for it, so its acknowledgements are not
   * awaited either (a worker that missed it catches up at its next revalidation).
   */
  change(origin: Worker | undefined, originId: number, msgs: readonly BusMessage[]): void {
    const gid = this.#nextId++;
    const waiting = new Set<number>();
    for (const [id, w] of this.#joined) {
      if (id === origin?.id) continue;
      if (send(w, { t: 'apply', id: gid, msgs })) waiting.add(id);
    }
    if (origin === undefined) return;
    if (waiting.size === 0) {
      send(origin, { t: 'settled', id: originId });
      return;
    }
    const timer = this.#clock.setTimeout(() => this.#expire(gid), this.#ackTimeoutMs);
    this.#pending.set(gid, { origin, originId, waiting, timer });
  }

  ack(from: Worker, gid: number): void {
    const p = this.#pending.get(gid);
    if (p !== undefined && p.waiting.delete(from.id) && p.waiting.size === 0) this.#settle(gid);
  }

  #expire(gid: number): void {
    const p = this.#pending.get(gid);
    if (p === undefined) return;
    for (const id of [...p.waiting]) {
      const w = this.#joined.get(id);
      this.#log.warn('worker did not acknowledge a change in time; replacing it', { worker: id, worker_pid: w?.process.pid, timeout_ms: this.#ackTimeoutMs });
      w?.process.kill('SIGKILL');
      this.leave(id);
    }
  }

  #settle(gid: number): void {
    const p = this.#pending.get(gid);
    if (p === undefined) return;
    this.#clock.clearTimeout(p.timer);
    this.#pending.delete(gid);
    send(p.origin, { t: 'settled', id: p.originId });
  }
}

function send(w: Worker, m: ToWorker): boolean {
  if (!w.isConnected()) return false;
  try {
    w.send(m); // false only means the channel is backed up: the message is still queued
    return true;
  } catch {
    return false;
  }
}
