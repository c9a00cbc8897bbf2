const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Where `name` is, or would go, in a list sorted by code point (names are ASCII: UTF-16 order is code-point order). */
function indexOf(list: readonly string[], name: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as string) < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A set of names with its sorted list kept up to date: one insert or delete moves the tail of an
 * array (a memory move, no sort), so a search can page through the list at any revision without
 * rebuilding it. After many changes at once ({@link SortedNames.invalidate}), the list is rebuilt
 * on the next read instead.
 */
export class SortedNames {
  #list: string[] | undefined = [];
  readonly #all = new Set<string>();

  get size(): number {
    return this.#all.size;
  }

  add(name: string): void {
    if (this.#all.has(name)) return;
    this.#all.add(name);
    if (this.#list !== undefined) this.#list.splice(indexOf(this.#list, name), 0, name);
  }

  delete(name: string): void {
    if (!this.#all.delete(name) || this.#list === undefined) return;
    this.#list.splice(indexOf(this.#list, name), 1);
  }

  /** Many changes follow: sort once at the next read rather than move the tail per change. */
  invalidate(): void {
    this.#list = undefined;
  }

  /** The names, sorted; do not modify. */
  sorted(): readonly string[] {
    this.#list ??= [...this.#all].sort(byCodePoint);
    return this.#list;
  }
}
