/**
 * The change feed newest first. GET /api/changes pages forward from `since`, so the console reads
 * it backwards in windows of revisions: the rows of (lo, hi] with `since=lo`, then the window
 * below. A window whose rows do not fit one answer is narrowed and read again, so no answer holds
 * more than {@link ROWS_PER_ANSWER} rows but for one revision's own (a batch: at most 1000).
 */
import type { ChangeRow } from '../client/index.ts';
import { api, must } from './session.ts';

const ROWS_PER_ANSWER = 1000;
/** Matching rows a page gathers before it stops. */
const ROWS_PER_PAGE = 100;
/** Answers a page may ask for: a filter that matches little stops there, and Older goes on. */
const ANSWERS_PER_PAGE = 10;
const FIRST_WINDOW = 250;

export interface TimelinePage {
  /** Newest first. */
  readonly rows: readonly ChangeRow[];
  /** Revisions read: above `below` and at most `upTo`. */
  readonly upTo: number;
  readonly below: number;
}

/** Which rows a page shows: every field given must equal the row's. */
export interface ChangeFilter {
  readonly role: string;
  readonly user: string;
  readonly permission: string;
}

export function matches(row: ChangeRow, f: ChangeFilter): boolean {
  return (f.role === '' || row.role === f.role) && (f.user === '' || row.user === f.user) && (f.permission === '' || row.permission === f.permission);
}

/** The page of rows at revision `upTo` and below, newest first: up to {@link ROWS_PER_PAGE} matching rows. */
export async function olderChanges(upTo: number, filter: ChangeFilter): Promise<TimelinePage> {
  const rows: ChangeRow[] = [];
  let hi = upTo;
  let width = FIRST_WINDOW;
  for (let answers = 0; hi > 0 && rows.length < ROWS_PER_PAGE && answers < ANSWERS_PER_PAGE; answers++) {
    const lo = Math.max(0, hi - width);
    const res = await api().changes(lo, { limit: ROWS_PER_ANSWER });
    const got = must(res);
    const last = got[got.length - 1];
    // Cut before reaching `hi`: the window holds too many rows for one answer.
    if (res.nextCursor !== undefined && last !== undefined && last.revision < hi && width > 1) {
      width = Math.max(1, Math.floor(width / 4));
      continue;
    }
    const window = got.filter((r) => r.revision <= hi && matches(r, filter));
    for (let i = window.length - 1; i >= 0; i--) rows.push(window[i] as ChangeRow);
    hi = lo;
    width = Math.min(ROWS_PER_ANSWER, width * 2);
  }
  return { rows, upTo, below: hi };
}
