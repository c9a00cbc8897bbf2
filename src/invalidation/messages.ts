import type { Change } from '../authz/changes.ts';

/** A committed change as it travels between workers (and, later, instances). Versioned. */
export interface ChangeMessage {
  readonly v: 1;
  readonly tenant: string;
  readonly revision: number;
  readonly change: Change;
}

/** Worker ↔ primary IPC messages. */
export type ToPrimary =
  | { readonly t: 'hello' }
  | { readonly t: 'ready'; readonly port: number }
  | { readonly t: 'fatal'; readonly message: string }
  /** Changes committed in one turn of the worker's event loop, in commit order. */
  | { readonly t: 'change'; readonly id: number; readonly msgs: readonly ChangeMessage[] }
  | { readonly t: 'ack'; readonly id: number };

export type ToWorker =
  | { readonly t: 'welcome' }
  | { readonly t: 'apply'; readonly id: number; readonly msgs: readonly ChangeMessage[] }
  | { readonly t: 'settled'; readonly id: number }
  /** Whether the instance's Redis subscription is live (sent on join and on every change). */
  | { readonly t: 'redis'; readonly subscribed: boolean }
  | { readonly t: 'shutdown' };

export function isToPrimary(m: unknown): m is ToPrimary {
  return typeof m === 'object' && m !== null && typeof (m as { t?: unknown }).t === 'string';
}
export const isToWorker = isToPrimary as unknown as (m: unknown) => m is ToWorker;
