/** One page of a sorted list: the items, and the last one when more follow. */
export interface Page {
  readonly items: readonly string[];
  /** Set when the page was cut: the key the next page starts after. */
  readonly after: string | undefined;
}

/**
 * Keyset pagination over a list sorted by code point: the items strictly after `after`, at most
 * `limit` of them. Keyed by name rather than offset, so a write between two pages neither skips
 * nor repeats an item that was there all along.
 */
export function pageAfter(list: readonly string[], after: string | undefined, limit: number | undefined): Page {
  let start = 0;
  if (after !== undefined) {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((list[mid] as string) <= after) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  if (limit === undefined || start + limit >= list.length) {
    return { items: start === 0 ? list : list.slice(start), after: undefined };
  }
  const items = list.slice(start, start + limit);
  return { items, after: items[items.length - 1] };
}
