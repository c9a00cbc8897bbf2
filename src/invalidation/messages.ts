import type { LoggedChange } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';

/**
 * A committed write request's changes as they travel between workers (and, through Redis,
 * instances). Versioned. Without `changes` it is a revision hint (workers only): the tenant is at `revision` in the
 * database (a refused write read it there); a worker behind it catches up from the changelog.
 */
export interface ChangeMessage {
  readonly v: 1;
  readonly tenant: TenantId;
  readonly revision: number;
  /** The request's changes, in order, all at `revision`. */
  readonly changes?: readonly LoggedChange[];
  /** When the change committed (ms since the epoch), for the invalidation delay. */
  readonly at?: number;
  /** Committed by another instance (it came through Redis). */
  readonly remote?: boolean;
}

/**
 * The change fan-out's IPC messages, worker → primary: join the receivers (`hello`), changes
 * of one fan-out batch of the worker's write pipeline, in commit order (`change`), and the
 * acknowledgement of an `apply` (`ack`). The primary's other messages are in ipc/protocol.ts.
 */
export type ChangeToPrimary =
  { readonly t: 'hello' } | { readonly t: 'change'; readonly id: number; readonly msgs: readonly ChangeMessage[] } | { readonly t: 'ack'; readonly id: number };

/** The change fan-out's IPC messages, primary → worker. */
export type ChangeToWorker =
  | { readonly t: 'welcome' }
  | { readonly t: 'apply'; readonly id: number; readonly msgs: readonly ChangeMessage[] }
  | { readonly t: 'settled'; readonly id: number };

/**
 * Whether an IPC message has the shape every message of the service has (`{t: string}`). IPC
 * comes only from our own processes, so the tag is what tells the messages apart.
 */
export function isTagged(m: unknown): m is { readonly t: string } {
  return typeof m === 'object' && m !== null && typeof (m as { t?: unknown }).t === 'string';
}
