/** Names a memo keeps across its lists before it forgets the older ones (a few megabytes at most). */
const DEFAULT_BUDGET = 1 << 15;

/**
 * Lists built from the graph (names decoded from its tables), kept so that paging through one
 * does not rebuild it per page. They are not part of the graph's estimate, so the memo is bounded:
 * once its lists hold more than `budget` names, the older ones are forgotten and only the list just
 * built is kept (however long: the one being paged through).
 */
export class ListMemo<K> {
  /** Made by the first list: most graphs of a many-client deployment are only ever checked. */
  #lists: Map<K, readonly string[]> | undefined;
  readonly #budget: number;
  #names = 0;

  constructor(budget = DEFAULT_BUDGET) {
    this.#budget = budget;
  }

  get size(): number {
    return this.#lists?.size ?? 0;
  }

  get(key: K): readonly string[] | undefined {
    return this.#lists?.get(key);
  }

  set(key: K, list: readonly string[]): void {
    this.delete(key);
    if (this.#names + list.length > this.#budget) this.clear();
    (this.#lists ??= new Map()).set(key, list);
    this.#names += list.length;
  }

  delete(key: K): void {
    const list = this.#lists?.get(key);
    if (list === undefined) return;
    this.#lists?.delete(key);
    this.#names -= list.length;
  }

  clear(): void {
    this.#lists?.clear();
    this.#names = 0;
  }
}
