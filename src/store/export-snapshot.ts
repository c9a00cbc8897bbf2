import type { Snapshot } from '../authz/changes.ts';
import { EXPORT_KINDS, type ExportPage, type ExportPosition, type ExportRow } from '../authz/transfer.ts';

/** Code point order (names are ASCII, where it is also UTF-16 order). */
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Whether `row` comes after `p` in the export's order. */
function isAfter(row: ExportRow, p: ExportPosition): boolean {
  const kind = EXPORT_KINDS.indexOf(row[0]) - EXPORT_KINDS.indexOf(p.kind);
  if (kind !== 0) return kind > 0;
  if (row[1] !== p.role) return row[1] > p.role;
  return row[0] !== 'role' && row[2] > p.other;
}

/**
 * A page of the export cut from a whole snapshot, for a store that cannot read rows in the
 * export's order (names sealed by field encryption sort by their ciphertext): every row is
 * built and sorted, then the page after `after` is kept.
 */
export function exportPageOf(s: Snapshot, after: ExportPosition | undefined, limit: number): ExportPage {
  const grantWindows = new Map<string, readonly [number | null, number | null]>();
  const memberWindows = new Map<string, readonly [number | null, number | null]>();
  for (const w of s.windows) {
    const bounds = [w.notBefore ?? null, w.expiresAt ?? null] as const;
    if (w.kind === 'permission') grantWindows.set(`${w.role}\0${w.permission}`, bounds);
    else memberWindows.set(`${w.role}\0${w.user}`, bounds);
  }
  const open = [null, null] as const;
  const byKeys = (a: ExportRow, b: ExportRow): number => byCodePoint(a[1], b[1]) || byCodePoint(a[0] === 'role' ? '' : a[2], b[0] === 'role' ? '' : b[2]);
  const roles: ExportRow[] = s.roles.map(([role, description]) => ['role', role, description]);
  const grants: ExportRow[] = s.grants.map(([role, permission]) => ['permission', role, permission, ...(grantWindows.get(`${role}\0${permission}`) ?? open)]);
  const members: ExportRow[] = s.memberships.map(([user, role]) => ['membership', role, user, ...(memberWindows.get(`${role}\0${user}`) ?? open)]);
  const rows = [...roles.sort(byKeys), ...grants.sort(byKeys), ...members.sort(byKeys)];
  const start = after === undefined ? 0 : rows.findIndex((r) => isAfter(r, after));
  return { revision: s.revision, rows: start < 0 ? [] : rows.slice(start, start + limit) };
}
