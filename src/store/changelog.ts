import type { ImportChange, LoggedChange, Window } from '../authz/changes.ts';

/** The columns of a changelog row, as any adapter reads them. */
export interface ChangelogColumns {
  readonly op: unknown;
  readonly role: unknown;
  readonly permission?: unknown;
  readonly user?: unknown;
  /** Already decoded by the adapter (each stores it its own way). */
  readonly description: string;
  /** Microseconds since the epoch, or null (PostgreSQL's BIGINT may come as text). */
  readonly notBefore?: unknown;
  readonly expiresAt?: unknown;
}

/** A bound column as a number, undefined when null. */
const bound = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));

/** The window of a row, absent bounds left out (so a change without one compares equal to one written without). */
function windowOfRow(r: ChangelogColumns): Window {
  const [notBefore, expiresAt] = [bound(r.notBefore), bound(r.expiresAt)];
  if (notBefore === undefined) return expiresAt === undefined ? {} : { expiresAt };
  return expiresAt === undefined ? { notBefore } : { notBefore, expiresAt };
}

/** A bound a boundary change must carry. */
function required(v: unknown, op: string): number {
  const n = bound(v);
  if (n === undefined) throw new Error(`changelog row of ${op} without its bound`);
  return n;
}

/**
 * An import's changelog row keeps its counts in the description column, as JSON: the row names
 * no role (its `role` is ''), and a description is what only role.create otherwise stores.
 */
export function importDescription(change: ImportChange): string {
  return JSON.stringify({ added: change.added, removed: change.removed });
}

function importOfRow(r: ChangelogColumns): ImportChange {
  const counts = JSON.parse(r.description) as { added?: unknown; removed?: unknown };
  return { op: 'client.import', added: Number(counts.added ?? 0), removed: Number(counts.removed ?? 0) };
}

/** Rebuilds a change from its changelog row (the same for every adapter). */
export function changeFromRow(r: ChangelogColumns): LoggedChange {
  const role = String(r.role);
  const [permission, user] = [String(r.permission), String(r.user)];
  switch (r.op) {
    case 'role.create':
      return { op: 'role.create', role, description: r.description };
    case 'role.delete':
      return { op: 'role.delete', role };
    case 'permission.grant':
    case 'permission.window':
      return { op: r.op, role, permission, ...windowOfRow(r) };
    case 'permission.revoke':
      return { op: r.op, role, permission };
    case 'permission.activate':
      return { op: r.op, role, permission, notBefore: required(r.notBefore, r.op) };
    case 'permission.expire':
      return { op: r.op, role, permission, expiresAt: required(r.expiresAt, r.op) };
    case 'membership.add':
    case 'membership.window':
      return { op: r.op, role, user, ...windowOfRow(r) };
    case 'membership.remove':
      return { op: r.op, role, user };
    case 'membership.activate':
      return { op: r.op, role, user, notBefore: required(r.notBefore, r.op) };
    case 'membership.expire':
      return { op: r.op, role, user, expiresAt: required(r.expiresAt, r.op) };
    case 'client.import':
      return importOfRow(r);
    default:
      throw new Error(`unknown op in changelog: ${String(r.op)}`);
  }
}
