import { isTagged, type ChangeMessage, type ChangeToPrimary, type ChangeToWorker } from './messages.ts';
import type { Bus } from './port.ts';

/** Sends to the primary; false when it is gone. */
function send(m: ChangeToPrimary): boolean {
  if (!process.connected || process.send === undefined) return false;
  // process.send returning false only means the channel is backed up: the message is queued.
  process.send(m);
  return true;
}

/**
 * The IPC adapter, worker side: changes go to the primary, which fans them out to the other
 * workers and answers `settled` once all acknowledged. If the primary is gone, publishing resolves
 * at once: the change is committed, and there is nobody left to tell.
 */
export function ipcBus(): Bus & { join(): Promise<void> } {
  const pending = new Map<number, () => void>();
  let nextId = 1;
  const settle = (id: number): void => {
    pending.get(id)?.();
    pending.delete(id);
  };
  let handler: ((msg: ChangeMessage) => Promise<void>) | undefined;
  let welcomed: (() => void) | undefined;

  // The primary's other messages (ipc/protocol.ts) share the channel: only these are ours.
  const onMessage = (raw: unknown): void => {
    if (!isTagged(raw)) return;
    const m = raw as ChangeToWorker;
    if (m.t === 'welcome') {
      welcomed?.();
    } else if (m.t === 'settled') {
      settle(m.id);
    } else if (m.t === 'apply') {
      const apply = handler ?? (() => Promise.resolve());
      // Acknowledge even when applying failed: the handler drops what it could not update.
      void Promise.allSettled(m.msgs.map((msg) => apply(msg))).finally(() => send({ t: 'ack', id: m.id }));
    }
  };
  process.on('message', onMessage);
  const releaseAll = (): void => {
    for (const done of pending.values()) done();
    pending.clear();
  };
  process.on('disconnect', releaseAll);

  return {
    /**
     * Announces this worker to the primary and resolves when it is counted among the receivers
     * of changes. Call it before hydrating anything, so no change can slip past this worker.
     */
    join() {
      return new Promise<void>((resolve) => {
        welcomed = resolve;
        if (!send({ t: 'hello' })) resolve();
      });
    },
    publish(msgs) {
      // One message for the batch: one hop to the primary, one per worker, one acknowledgement.
      const id = nextId++;
      const done = new Promise<void>((resolve) => pending.set(id, resolve));
      if (!send({ t: 'change', id, msgs })) settle(id);
      return done;
    },
    subscribe(h) {
      handler = h;
    },
    async close() {
      process.off('message', onMessage);
      releaseAll();
    },
  };
}
