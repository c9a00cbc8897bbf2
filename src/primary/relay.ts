import type { Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { startRedisBridge, type RedisBridge } from '../invalidation/index.ts';
import type { Logger } from '../log/index.ts';
import type { ChangeHub } from './hub.ts';
import type { ToPrimary } from '../ipc/protocol.ts';
import { isRevocation, type BusMessage, type ChangeMessage } from '../invalidation/messages.ts';
import type { Tracer } from '../trace/index.ts';

/** The workers' change traffic: their IPC fan-out (the hub) and, when configured, the other instances (Redis). */
export class ChangeRelay {
  readonly #hub: ChangeHub;
  readonly #redis: RedisBridge | undefined;
  readonly #namesOverRedis: boolean;

  /**
   * `namesOverRedis` false (field encryption is on): a change goes to the other instances as its
   * tenant and revision only, and they read it from the changelog, where it is encrypted.
   */
  constructor(hub: ChangeHub, redis: RedisBridge | undefined, namesOverRedis = true) {
    this.#hub = hub;
    this.#redis = redis;
    this.#namesOverRedis = namesOverRedis;
  }

  /** Routes a worker's `hello`, `change` and `ack`; other messages are not change traffic. */
  fromWorker(w: Worker, m: ToPrimary): void {
    switch (m.t) {
      case 'hello':
        this.#hub.join(w);
        if (this.#redis !== undefined) this.#hub.broadcast({ t: 'redis', subscribed: this.#redis.subscribed });
        break;
      case 'change':
        this.#hub.change(w, m.id, m.msgs);
        this.#publish(m.msgs);
        break;
      case 'ack':
        this.#hub.ack(w, m.id);
        break;
    }
  }

  /**
   * Changes this process committed itself (the boundary changes of timed access): to every worker
   * of this instance and, through Redis, the other instances. Nobody waits for them to apply.
   */
  fromPrimary(msgs: readonly ChangeMessage[]): void {
    this.#hub.change(undefined, 0, msgs);
    this.#publish(msgs);
  }

  /**
   * Committed changes and revocations to the other instances. Revision hints stay inside the
   * instance: the others catch up through revalidation. A revocation names no client data.
   */
  #publish(msgs: readonly BusMessage[]): void {
    if (this.#redis === undefined) return;
    for (const msg of msgs) {
      if (isRevocation(msg)) {
        this.#redis.publish(msg);
        continue;
      }
      if (msg.changes === undefined) continue;
      const { tenant, revision, at } = msg;
      this.#redis.publish(this.#namesOverRedis ? msg : at === undefined ? { v: 1, tenant, revision } : { v: 1, tenant, revision, at });
    }
  }

  /** The worker is gone: no change waits for its acknowledgement. */
  leave(workerId: number): void {
    this.#hub.leave(workerId);
  }

  /** Stops bridging to the other instances (the workers' IPC needs no closing). */
  close(): void {
    void this.#redis?.close();
  }
}

/** The relay of this instance, bridged through Redis to the other instances when `redisUrl` is set. */
export async function startRelay(redisUrl: string | undefined, hub: ChangeHub, log: Logger, namesOverRedis: boolean, tracer: Tracer): Promise<ChangeRelay> {
  if (redisUrl === undefined) return new ChangeRelay(hub, undefined);
  const redis = await startRedisBridge({
    url: redisUrl,
    instance: randomUUID(),
    log,
    tracer,
    onChange: (msg) => hub.change(undefined, 0, [msg]),
    onState: (subscribed) => hub.broadcast({ t: 'redis', subscribed }),
  });
  return new ChangeRelay(hub, redis, namesOverRedis);
}
