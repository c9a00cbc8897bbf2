import type { WireError } from '../errors/index.ts';

/** A committed write, as the store records it and as every cache applies it. */
export type Change =
  | { readonly op: 'role.create'; readonly role: string; readonly description: string }
  | { readonly op: 'role.delete'; readonly role: string }
  | { readonly op: 'permission.grant'; readonly role: string; readonly permission: string }
  | { readonly op: 'permission.revoke'; readonly role: string; readonly permission: string }
  | { readonly op: 'membership.add'; readonly user: string; readonly role: string }
  | { readonly op: 'membership.remove'; readonly user: string; readonly role: string };

export type ChangeOp = Change['op'];

export const CHANGE_OPS: readonly ChangeOp[] = ['role.create', 'role.delete', 'permission.grant', 'permission.revoke', 'membership.add', 'membership.remove'];

/** A change as the changelog keeps it. */
export interface ChangeRecord {
  readonly revision: number;
  readonly change: Change;
  /** When it committed (wire timestamp format). */
  readonly at: string;
}

/** Everything a tenant holds at one revision, as read from the store in one transaction. */
export interface Snapshot {
  readonly revision: number;
  readonly roles: ReadonlyArray<readonly [role: string, description: string]>;
  readonly grants: ReadonlyArray<readonly [role: string, permission: string]>;
  readonly memberships: ReadonlyArray<readonly [user: string, role: string]>;
}

/** What a committed write reports back. */
export interface WriteCommitted {
  readonly ok: true;
  readonly revision: number;
  readonly change: Change;
  /** For role.delete: what went with the role. */
  readonly permissionsRemoved?: number;
  readonly membershipsRemoved?: number;
}

/** A write the store refused (404/409): nothing changed; `revision` is the tenant's current one. */
export interface WriteRefused {
  readonly ok: false;
  readonly error: WireError;
  readonly revision: number;
}

export type WriteOutcome = WriteCommitted | WriteRefused;
