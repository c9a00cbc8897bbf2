import type { WireError } from '../errors/index.ts';
import type { TenantId } from './tenant.ts';

/**
 * When an edge (a grant or a membership) is active (docs/api.md §12.1): from `notBefore` (on)
 * until `expiresAt` (off), in microseconds since the epoch; a missing bound is open. An edge
 * without either is permanent.
 */
export interface Window {
  readonly notBefore?: number;
  readonly expiresAt?: number;
}

/** The edges a change names: a grant (role → permission) or a membership (user → role). */
type GrantEdge = { readonly role: string; readonly permission: string };
type MemberEdge = { readonly user: string; readonly role: string };

/**
 * A committed write, as the store records it and as every cache applies it. `*.window` replaces
 * an edge's window (`{}` makes it permanent); `*.activate` and `*.expire` are the boundary
 * changes the service commits itself when a window's `notBefore` or `expiresAt` passes: each
 * names the bound it passed, and applies only while the edge still has that bound (a window
 * replaced in the meantime is left alone).
 */
export type Change =
  | { readonly op: 'role.create'; readonly role: string; readonly description: string }
  | { readonly op: 'role.delete'; readonly role: string }
  | ({ readonly op: 'permission.grant' } & GrantEdge & Window)
  | ({ readonly op: 'permission.revoke' } & GrantEdge)
  | ({ readonly op: 'permission.window' } & GrantEdge & Window)
  | ({ readonly op: 'permission.activate'; readonly notBefore: number } & GrantEdge)
  | ({ readonly op: 'permission.expire'; readonly expiresAt: number } & GrantEdge)
  | ({ readonly op: 'membership.add' } & MemberEdge & Window)
  | ({ readonly op: 'membership.remove' } & MemberEdge)
  | ({ readonly op: 'membership.window' } & MemberEdge & Window)
  | ({ readonly op: 'membership.activate'; readonly notBefore: number } & MemberEdge)
  | ({ readonly op: 'membership.expire'; readonly expiresAt: number } & MemberEdge);

export type ChangeOp = Change['op'];

/**
 * An import of a whole client (docs/api.md §17): one change at one revision, which carries
 * only how many export lines it added and removed. The edges it changed are not in it (a million
 * of them would not travel between processes): a graph cannot apply it, and is hydrated again.
 */
export interface ImportChange {
  readonly op: 'client.import';
  readonly added: number;
  readonly removed: number;
}

/** A change as the changelog, the fan-out and the caches see it: a write's change, or an import. */
export type LoggedChange = Change | ImportChange;

/**
 * The changes a graph can apply one by one; undefined when they hold an import, which a graph
 * reflects only by being hydrated again.
 */
export function edgeChanges(changes: readonly LoggedChange[]): readonly Change[] | undefined {
  return changes.some((c) => c.op === 'client.import') ? undefined : (changes as readonly Change[]);
}

export const CHANGE_OPS: readonly ChangeOp[] = [
  'role.create',
  'role.delete',
  'permission.grant',
  'permission.revoke',
  'permission.window',
  'permission.activate',
  'permission.expire',
  'membership.add',
  'membership.remove',
  'membership.window',
  'membership.activate',
  'membership.expire',
];

/** The boundary changes: committed by the service when a window's bound passes, never asked for. */
export type BoundaryChange = Extract<Change, { readonly op: `${string}.activate` | `${string}.expire` }>;

/** The window a change gives its edge, when it gives one (grant, add, window). */
export function windowOf(change: Change): Window | undefined {
  switch (change.op) {
    case 'permission.grant':
    case 'permission.window':
    case 'membership.add':
    case 'membership.window':
      return windowBetween(change.notBefore, change.expiresAt);
    default:
      return undefined;
  }
}

/** The window between two bounds (each may be open); undefined when both are: a permanent edge. */
export function windowBetween(notBefore: number | undefined, expiresAt: number | undefined): Window | undefined {
  if (notBefore === undefined) return expiresAt === undefined ? undefined : { expiresAt };
  return expiresAt === undefined ? { notBefore } : { notBefore, expiresAt };
}

/** A boundary change the store committed (TenantStore.commitBoundaries). */
export interface BoundaryCommitted {
  readonly tenant: TenantId;
  readonly revision: number;
  readonly change: BoundaryChange;
  /** The boundary (wire timestamp format): the changelog row's time. */
  readonly at: string;
}

/** Whether `w` is open at `nowMicros` (`notBefore` ≤ now < `expiresAt`); no window is always open. */
export function isOpen(w: Window | undefined, nowMicros: number): boolean {
  if (w === undefined) return true;
  return (w.notBefore === undefined || w.notBefore <= nowMicros) && (w.expiresAt === undefined || nowMicros < w.expiresAt);
}

/** A change as the changelog keeps it: each change of one write request has that request's revision. */
export interface ChangeRecord {
  readonly revision: number;
  readonly change: LoggedChange;
  /** When it committed, or for a boundary change the boundary itself (wire timestamp format). */
  readonly at: string;
}

/** The changes of one write request, as the caches apply them: all at one revision. */
export interface Commit {
  readonly revision: number;
  readonly changes: readonly LoggedChange[];
}

/** Changelog records (ascending, a request's rows together) as commits: one per revision. */
export function commitsOf(records: readonly ChangeRecord[]): Commit[] {
  const out: Array<{ revision: number; changes: LoggedChange[] }> = [];
  for (const r of records) {
    const last = out.at(-1);
    if (last !== undefined && last.revision === r.revision) last.changes.push(r.change);
    else out.push({ revision: r.revision, changes: [r.change] });
  }
  return out;
}

/** A windowed edge as stored: which edge, and its window. */
export type WindowedEdge = ({ readonly kind: 'permission' } & GrantEdge & Window) | ({ readonly kind: 'membership' } & MemberEdge & Window);

/** Everything a tenant holds at one revision, as read from the store in one transaction. */
export interface Snapshot {
  readonly revision: number;
  readonly roles: ReadonlyArray<readonly [role: string, description: string]>;
  /** Every grant and membership, active or not; those with a window are in `windows` too. */
  readonly grants: ReadonlyArray<readonly [role: string, permission: string]>;
  readonly memberships: ReadonlyArray<readonly [user: string, role: string]>;
  readonly windows: readonly WindowedEdge[];
}

/** What one change of a committed write did beyond itself. */
export interface ChangeEffect {
  /** For role.delete: what went with the role. */
  readonly permissionsRemoved?: number;
  readonly membershipsRemoved?: number;
}

/**
 * A committed write request: its changes, in order, all at one revision. A `*.window` asked for
 * an edge that did not exist commits as its creation (`permission.grant`, `membership.add`), so
 * `changes` are the changes as committed.
 */
export interface WriteCommitted {
  readonly ok: true;
  readonly revision: number;
  readonly changes: readonly Change[];
  /** Per change, in the same order. */
  readonly effects: readonly ChangeEffect[];
}

/** A write the store refused (404/409/412): nothing changed; `revision` is the tenant's current one. */
export interface WriteRefused {
  readonly ok: false;
  readonly error: WireError;
  readonly revision: number;
  /** Which change of the request was refused (absent when the request as a whole was: 412). */
  readonly index?: number;
}

export type WriteOutcome = WriteCommitted | WriteRefused;
