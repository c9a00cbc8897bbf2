import type { Logger } from '../log/index.ts';
import type { BusMessage } from './messages.ts';
import type { Tracer } from '../trace/index.ts';

/**
 * The invalidation bus: how a worker tells every other holder of tenant graphs about the changes
 * it committed. `publish` sends them as one message and resolves once every other worker has
 * applied them (or was replaced), which is what lets a write's response promise read-your-writes
 * on any connection.
 */
export interface Bus {
  publish(msgs: readonly BusMessage[]): Promise<void>;
  /** The handler for changes committed (and tokens revoked) elsewhere; the bus acknowledges when it resolves. */
  subscribe(handler: (msg: BusMessage) => Promise<void>): void;
  close(): Promise<void>;
}

/**
 * The primary's side of the bus between instances: changes committed by this instance's workers
 * go out, changes committed by other instances come in (see invalidation/redis.ts).
 */
export interface RedisBridge {
  /** Publishes a change committed (or a token revoked) here; one that cannot be sent is caught by revalidation. */
  publish(msg: BusMessage): void;
  /** Whether the subscription is live (for /ready). */
  readonly subscribed: boolean;
  close(): Promise<void>;
}

export interface RedisBridgeOptions {
  readonly url: string;
  /** This instance's id: its own messages coming back are ignored. */
  readonly instance: string;
  /** A change committed (or a token revoked) by another instance. */
  readonly onChange: (msg: BusMessage) => void;
  /** The subscription went up or down. After it comes back up, messages may have been missed. */
  readonly onState: (subscribed: boolean) => void;
  readonly log: Logger;
  /** With traces on, each message published and each one received is a span (`redis.publish`, `redis.receive`). */
  readonly tracer: Tracer;
}
