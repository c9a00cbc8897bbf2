import type { Change } from './changes.ts';

/*
 * A client's data as it leaves and comes back (docs/api.md §17): the rows of an export, read
 * page by page, and the contents of an import, as plain arrays that cross threads cheaply.
 * Bounds are microseconds since the epoch, `null` when open.
 */

/** One export line's data: a role, a grant or a membership, in the export's order. */
export type ExportRow =
  | readonly [kind: 'role', role: string, description: string]
  | readonly [kind: 'permission', role: string, permission: string, notBefore: number | null, expiresAt: number | null]
  | readonly [kind: 'membership', role: string, user: string, notBefore: number | null, expiresAt: number | null];

export type ExportKind = ExportRow[0];

/** The export's sections, in order. */
export const EXPORT_KINDS: readonly ExportKind[] = ['role', 'permission', 'membership'];

/**
 * Where a page of the export ends: the last row's kind and keys (`other` is the permission or
 * the user; '' for a role). The next page starts after it. Keys compare by code point.
 */
export interface ExportPosition {
  readonly kind: ExportKind;
  readonly role: string;
  readonly other: string;
}

/** A page of the export, read in one transaction with the tenant's revision at that moment. */
export interface ExportPage {
  readonly revision: number;
  readonly rows: readonly ExportRow[];
}

/** The position after `row`. */
export function positionAfter(row: ExportRow): ExportPosition {
  return { kind: row[0], role: row[1], other: row[0] === 'role' ? '' : row[2] };
}

/** An edge of an import: role, then permission or user, and its settled window. */
export type ImportEdge = readonly [role: string, other: string, notBefore: number | null, expiresAt: number | null];

/** What an import's body holds, checked (valid names, windows, no duplicates, every edge's role declared). */
export interface ImportFile {
  readonly roles: ReadonlyArray<readonly [role: string, description: string]>;
  readonly grants: readonly ImportEdge[];
  readonly memberships: readonly ImportEdge[];
}

/** `merge` adds what is missing (descriptions updated), `replace` makes the client's data exactly the file. */
export type ImportMode = 'merge' | 'replace';

/** An import's effect in counts: the client after it, and the export lines added and removed. */
export interface ImportCounts {
  readonly roles: number;
  readonly permissions: number;
  readonly memberships: number;
  readonly added: number;
  readonly removed: number;
}

/** What an import did (or, dry, would do) at `revision`: the revision it committed, or the one it read when nothing changed or when dry. */
export interface ImportDone extends ImportCounts {
  readonly ok: true;
  readonly revision: number;
  /** Whether it changed anything (then it committed `revision`, unless dry). */
  readonly changed: boolean;
  /**
   * Dry only: the difference as writes in an order that applies (creations, removals, window
   * changes as removal then addition, additions, role deletions), for the preview's pairs.
   */
  readonly changes?: readonly Change[];
}
