// Runs in a pool thread: one store connection per thread, opened on the first task. Each
// adapter has its own task file (sqlite-task, postgres-task), so a thread loads one driver.
import { setPriority } from 'node:os';
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import { FieldCipher } from '../../crypto/field-cipher.ts';
import { appError, toWire } from '../../errors/index.ts';
import { createLogger } from '../../log/index.ts';
import { encryptedMark, markMismatch, PLAINTEXT_MARK } from '../../store/encryption-mark.ts';
import type { StoreSettings } from '../../store/settings.ts';
import { callOf, isStoreMethod } from '../../store/calls.ts';
import { movableBuffers, type Store, type StoreMethod } from '../../store/port.ts';
import { storeFailure } from '../../store/transient.ts';
import { EncryptedStore } from '../../store/wrappers/encrypted.ts';
import { isSharedTask, type SharedTask, type Task, type TaskReply } from '../protocol.ts';

/** Runs a task: the store's method of the task's name, with its arguments. */
function run<K extends StoreMethod>(store: Store, task: Task<K>): Promise<unknown> {
  if (!isStoreMethod(task.method)) throw new Error(`no store method ${String(task.method)}`);
  return callOf(store, task.method, task.args);
}

/**
 * The adapter `open` opens, behind field encryption when the settings carry a key (derived here,
 * in the thread: PBKDF2 never runs on an event loop that serves requests). Before anything else
 * the database's encryption mark is claimed and compared: a mismatch is a failure of every task,
 * so the worker's first call (its start-up) fails with that message.
 */
async function openChecked<S extends StoreSettings>(open: (settings: S) => Store, settings: S): Promise<Store> {
  const adapter = open(settings);
  try {
    const cipher = settings.encryptionKey === undefined ? undefined : new FieldCipher(settings.encryptionKey);
    const wanted = cipher === undefined ? PLAINTEXT_MARK : encryptedMark(cipher.fingerprint);
    const why = markMismatch(await adapter.claimEncryption(wanted), wanted);
    if (why !== undefined) throw appError('ERR_STORE_ENCRYPTION_MISMATCH', { why });
    return cipher === undefined ? adapter : new EncryptedStore(adapter, cipher);
  } catch (err) {
    await adapter.close();
    throw err;
  }
}

/**
 * The replies as they cross back. Buffers the port says may move (a large graph image's) are
 * moved, not copied: the worker adopts them as they are (piscina moves a returned value that lists
 * its transferables).
 */
function sent<R extends object>(reply: R, values: readonly unknown[]): R {
  const buffers = values.flatMap((v) => movableBuffers(v) ?? []);
  if (buffers.length === 0) return reply;
  // What arrives is the reply itself: piscina unwraps a moved value on the other side.
  return move({
    get [transferableSymbol]() {
      return buffers;
    },
    get [valueSymbol]() {
      return reply;
    },
  }) as unknown as R;
}

/** One call's reply: its value, or its failure as `{code, message}`. */
async function replyOf(store: Promise<Store>, task: Task): Promise<TaskReply> {
  try {
    return { ok: true, value: await run(await store, task) };
  } catch (err) {
    return { ok: false, error: toWire(storeFailure(err, task.method)) };
  }
}

const valueOf = (r: TaskReply): unknown => (r.ok ? r.value : undefined);

/** The nice value of a background store thread: it yields a contended CPU to the HTTP workers. */
const BACKGROUND_NICE = 10;

/**
 * The task function of a pool thread whose store `open` opens. The pool picks the task file by
 * the settings' type, so the thread's settings are `S`.
 */
export function storeTask<S extends StoreSettings>(open: (settings: S) => Store): (task: Task | SharedTask) => Promise<TaskReply | TaskReply[]> {
  let opening: Promise<Store> | undefined;
  // On Linux a nice value is a thread's own (pid 0 is the calling thread): only this thread yields.
  if ((workerData as StoreSettings).background === true) {
    try {
      setPriority(0, BACKGROUND_NICE);
    } catch (err) {
      // Not permitted here (a sandbox's system call filter): the thread runs at normal priority, and says so.
      createLogger('warn', { role: 'store-thread' }).warn('store thread could not lower its CPU priority; it runs at normal priority', {
        nice: BACKGROUND_NICE,
        err,
      });
    }
  }
  // A failed opening (the database down at start-up) is tried again by the next task.
  const store = (): Promise<Store> =>
    (opening ??= openChecked(open, workerData as S).catch((err: unknown) => {
      opening = undefined;
      throw err;
    }));
  return async (task) => {
    if (!isSharedTask(task)) {
      const reply = await replyOf(store(), task);
      return sent(reply, [valueOf(reply)]);
    }
    const replies: TaskReply[] = [];
    for (const call of task.calls) replies.push(await replyOf(store(), call));
    return sent(replies, replies.map(valueOf));
  };
}
