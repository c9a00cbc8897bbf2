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
 * A token revoked (docs/api.md §3): refused from now on, on every worker and instance, until
 * `until` (its expiry, ms since the epoch). It travels the changes' way, with their
 * acknowledgements, but carries no revision: it changes no graph. It names no client data (a
 * jti is a random id), so it crosses Redis as it is, encryption or not.
 */
export interface RevocationMessage {
  readonly v: 1;
  /** The token's jti. */
  readonly revoked: string;
  readonly until: number;
  /** Came from another instance (through Redis). */
  readonly remote?: boolean;
}

/** What the bus carries: committed changes and token revocations. */
export type BusMessage = ChangeMessage | RevocationMessage;

/** Whether a bus message is a token revocation. */
export const isRevocation = (m: BusMessage): m is RevocationMessage => 'revoked' in m;

/**
 * The change fan-out's IPC messages, worker → primary: join the receivers (`hello`), changes
 * of one fan-out batch of the worker's write pipeline, in commit order (`change`), and the
 * acknowledgement of an `apply` (`ack`). The primary's other messages are in ipc/protocol.ts.
 */
export type ChangeToPrimary =
  { readonly t: 'hello' } | { readonly t: 'change'; readonly id: number; readonly msgs: readonly BusMessage[] } | { readonly t: 'ack'; readonly id: number };

/** The change fan-out's IPC messages, primary → worker. */
export type ChangeToWorker =
  | { readonly t: 'welcome' }
  | { readonly t: 'apply'; readonly id: number; readonly msgs: readonly BusMessage[] }
  | { readonly t: 'settled'; readonly id: number };

/**
 * Whether an IPC message has the shape every message of the service has (`{t: string}`). IPC
 * comes only from our own processes, so the tag is what tells the messages apart.
 */
export function isTagged(m: unknown): m is { readonly t: string } {
  return typeof m === 'object' && m !== null && typeof (m as { t?: unknown }).t === 'string';
}
