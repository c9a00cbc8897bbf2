import type { ChangeToWorker } from '../invalidation/messages.ts';
import { isToWorker, type ToPrimary } from '../ipc/protocol.ts';

/** What the worker does with each message of the primary (ipc/protocol.ts). */
export interface PrimaryHandlers {
  /** The change fan-out's messages, for the IPC bus. */
  change(m: ChangeToWorker): void;
  /** Whether the instance's Redis subscription is live. */
  redis(subscribed: boolean): void;
  drain(): void;
  shutdown(): void;
  /** A scrape: answer with a `metrics` message of the same id. */
  metrics(id: number): void;
  /** The primary is gone. */
  disconnected(): void;
}

/** Routes one message from the primary to its handler; anything else is ignored. */
export function dispatch(m: unknown, h: PrimaryHandlers): void {
  if (!isToWorker(m)) return;
  switch (m.t) {
    case 'welcome':
    case 'apply':
    case 'settled':
      return h.change(m);
    case 'redis':
      return h.redis(m.subscribed);
    case 'drain':
      return h.drain();
    case 'shutdown':
      return h.shutdown();
    case 'metrics':
      return h.metrics(m.id);
  }
}

/** The worker's one listener of its primary's channel: every message goes through {@link dispatch}. */
export function listenToPrimary(h: PrimaryHandlers): void {
  process.on('message', (m: unknown) => dispatch(m, h));
  process.on('disconnect', () => h.disconnected());
}

/** Sends the supervisor a message of the protocol (dropped when the primary is gone). */
export function tell(m: ToPrimary): void {
  process.send?.(m);
}
