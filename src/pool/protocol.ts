import type { WireError } from '../errors/index.ts';
import type { StoreCalls, StoreMethod } from '../store/port.ts';

/**
 * One store call carried to a pool thread: the method's name and its arguments, typed by the
 * port. The thread calls the method of that name on its store; nothing here names a method.
 */
export interface Task<K extends StoreMethod = StoreMethod> {
  readonly method: K;
  readonly args: Parameters<StoreCalls[K]>;
}

/**
 * A task's answer: the method's value as structured clone carries it (a Buffer arrives as a
 * Uint8Array), or a failure as `{code, message}`, never as an Error instance.
 */
export type TaskReply = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: WireError };

/**
 * Several store calls carried by one task (hydrations that queued while every thread was busy):
 * one message each way instead of one per call. The thread runs them in order and answers one
 * {@link TaskReply} per call, in the same order.
 */
export interface SharedTask {
  readonly calls: readonly Task[];
}

export function isSharedTask(task: Task | SharedTask): task is SharedTask {
  return 'calls' in task;
}
