import type { ChangeMessage } from './messages.ts';

/**
 * The invalidation bus: how a worker tells every other holder of tenant graphs about the changes
 * it committed. `publish` sends them as one message and resolves once every other worker has
 * applied them (or was replaced), which is what lets a write's response promise read-your-writes
 * on any connection.
 */
export interface Bus {
  publish(msgs: readonly ChangeMessage[]): Promise<void>;
  /** The handler for changes committed elsewhere; the bus acknowledges when it resolves. */
  subscribe(handler: (msg: ChangeMessage) => Promise<void>): void;
  close(): Promise<void>;
}

/** For a process that is the only holder of graphs. */
export const noopBus: Bus = {
  publish: () => Promise.resolve(),
  subscribe: () => undefined,
  close: () => Promise.resolve(),
};
