import type { BoundaryChange, Change, Window, WindowedEdge, WriteRefused } from '../authz/changes.ts';
import { errorMessage } from '../errors/index.ts';

/*
 * What both adapters share about windows and write requests: how a change is laid out in a
 * changelog row, the window a write commits, the boundary changes and their audit rows. The SQL
 * stays in the adapters.
 */

/** The wire timestamp (UTC, six fractional digits, no zone) of `micros` since the epoch. */
export function wireOfMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  return new Date(ms).toISOString().slice(0, 23) + String(micros - ms * 1000).padStart(3, '0');
}

/** Microseconds since the epoch of a wire timestamp: the commit time a window is compared with. */
export function microsOfWire(text: string): number {
  return Date.parse(`${text.slice(0, 23)}Z`) * 1000 + Number(text.slice(23, 26));
}

/**
 * The window a write stores and commits: a `notBefore` at or before the commit time (`nowMicros`)
 * is dropped (the edge is active at once and gets no activate change); absent bounds are left out.
 */
export function settledWindow(w: Window, nowMicros: number): Window {
  const notBefore = w.notBefore !== undefined && w.notBefore > nowMicros ? w.notBefore : undefined;
  if (notBefore === undefined) return w.expiresAt === undefined ? {} : { expiresAt: w.expiresAt };
  return w.expiresAt === undefined ? { notBefore } : { notBefore, expiresAt: w.expiresAt };
}

/** A changelog row's columns beyond its client, revision, position and time. */
export interface ChangeColumns {
  readonly op: string;
  readonly role: string;
  readonly permission: string | null;
  readonly user: string | null;
  readonly description: string | null;
  readonly notBefore: number | null;
  readonly expiresAt: number | null;
}

/** How `change` is laid out in the changelog (the reverse of changeFromRow). */
export function columnsOf(change: Change): ChangeColumns {
  const bounds = 'notBefore' in change || 'expiresAt' in change ? (change as Window) : {};
  return {
    op: change.op,
    role: change.role,
    permission: 'permission' in change ? change.permission : null,
    user: 'user' in change ? change.user : null,
    description: change.op === 'role.create' ? change.description : null,
    notBefore: bounds.notBefore ?? null,
    expiresAt: bounds.expiresAt ?? null,
  };
}

/** The `/api/...` path of the edge a change names (a boundary's audit resource), names as they are. */
export function edgeResource(change: BoundaryChange): string {
  return 'permission' in change ? `/api/permission/${change.role}/${change.permission}` : `/api/membership/${change.user}/${change.role}`;
}

/** A due boundary as an adapter reads it (any adapter's row, columns named as in the SQL). */
export interface DueBoundary {
  readonly kind: 'permission' | 'membership';
  readonly which: 'activate' | 'expire';
  readonly role: string;
  /** The permission (of a grant) or the user (of a membership). */
  readonly other: string;
  /** The bound that passed, in microseconds since the epoch. */
  readonly bound: number;
}

/** The due boundary of a row read by the adapter's boundary query. */
export function dueBoundaryOf(r: Record<string, unknown>): DueBoundary {
  return {
    kind: r.kind === 'membership' ? 'membership' : 'permission',
    which: r.which === 'expire' ? 'expire' : 'activate',
    role: String(r.role),
    other: String(r.other),
    bound: Number(r.bound),
  };
}

/** The change that commits a due boundary. */
export function boundaryChangeOf(b: DueBoundary): BoundaryChange {
  const { role, bound } = b;
  if (b.kind === 'permission') {
    return b.which === 'activate'
      ? { op: 'permission.activate', role, permission: b.other, notBefore: bound }
      : { op: 'permission.expire', role, permission: b.other, expiresAt: bound };
  }
  return b.which === 'activate'
    ? { op: 'membership.activate', role, user: b.other, notBefore: bound }
    : { op: 'membership.expire', role, user: b.other, expiresAt: bound };
}

/** The credential of the audit rows of boundary changes: the service itself. */
export const SYSTEM_CREDENTIAL = 'system';

/** If-Match did not match (docs/api.md §12.4): the request as a whole is refused, no change named. */
export function preconditionFailed(expected: number, current: number): WriteRefused {
  return {
    ok: false,
    error: { code: 'ERR_CONSISTENCY_PRECONDITION_FAILED', message: errorMessage('ERR_CONSISTENCY_PRECONDITION_FAILED', { expected, current }) },
    revision: current,
  };
}

/** Thrown by an adapter asked to write a boundary change: only commitBoundaries commits those. */
export function boundaryAsked(change: Change): Error {
  return new Error(`${change.op} is committed by the service at its boundary, never written`);
}

/** An edge with the bounds of its row (null or absent: open, left out; PostgreSQL's BIGINT may come as text). */
export function windowedEdge(edge: WindowedEdge, notBefore: unknown, expiresAt: unknown): WindowedEdge {
  const nb = notBefore === null || notBefore === undefined ? {} : { notBefore: Number(notBefore) };
  const exp = expiresAt === null || expiresAt === undefined ? {} : { expiresAt: Number(expiresAt) };
  return { ...edge, ...nb, ...exp };
}
