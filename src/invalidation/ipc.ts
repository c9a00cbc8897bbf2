import type { BusMessage, ChangeToPrimary, ChangeToWorker } from './messages.ts';
import type { Bus } from './port.ts';

/** The way to the primary: sends one message; false when the primary is gone. */
export interface IpcChannel {
  send(m: ChangeToPrimary): boolean;
}

/** The worker process's own channel to its primary. */
export const processChannel: IpcChannel = {
  send(m) {
    if (!process.connected || process.send === undefined) return false;
    // process.send returning false only means the channel is backed up: the message is queued.
    process.send(m);
    return true;
  },
};

/**
 * The IPC bus as the worker holds it: the primary's change messages are handed to `receive` by
 * the worker's one message dispatcher (the channel carries the supervisor's messages too), and
 * `disconnected` when the primary is gone.
 */
export interface IpcBus extends Bus {
  /**
   * Announces this worker to the primary and resolves when it is counted among the receivers
   * of changes. Call it before hydrating anything, so no change can slip past this worker.
   */
  join(): Promise<void>;
  receive(m: ChangeToWorker): void;
  disconnected(): void;
}

/**
 * The IPC adapter, worker side: changes go to the primary, which fans them out to the other
 * workers and answers `settled` once all acknowledged. If the primary is gone, publishing resolves
 * at once: the change is committed, and there is nobody left to tell.
 */
export function ipcBus(channel: IpcChannel = processChannel): IpcBus {
  const pending = new Map<number, () => void>();
  let nextId = 1;
  let closed = false;
  const settle = (id: number): void => {
    pending.get(id)?.();
    pending.delete(id);
  };
  const releaseAll = (): void => {
    for (const done of pending.values()) done();
    pending.clear();
  };
  let handler: ((msg: BusMessage) => Promise<void>) | undefined;
  let welcomed: (() => void) | undefined;

  return {
    join() {
      return new Promise<void>((resolve) => {
        welcomed = resolve;
        if (!channel.send({ t: 'hello' })) resolve();
      });
    },
    receive(m) {
      if (closed) return;
      if (m.t === 'welcome') {
        welcomed?.();
      } else if (m.t === 'settled') {
        settle(m.id);
      } else {
        const apply = handler ?? (() => Promise.resolve());
        // Acknowledge even when applying failed: the handler drops what it could not update.
        void Promise.allSettled(m.msgs.map((msg) => apply(msg))).finally(() => channel.send({ t: 'ack', id: m.id }));
      }
    },
    disconnected: releaseAll,
    publish(msgs) {
      // One message for the batch: one hop to the primary, one per worker, one acknowledgement.
      const id = nextId++;
      const done = new Promise<void>((resolve) => pending.set(id, resolve));
      if (!channel.send({ t: 'change', id, msgs })) settle(id);
      return done;
    },
    subscribe(h) {
      handler = h;
    },
    async close() {
      closed = true;
      releaseAll();
    },
  };
}
