/** Compaction runs only once the garbage is at least this many values, and more than the live ones. */
const MIN_GARBAGE = 1024;

function grownTo(a: Uint32Array, atLeast: number): Uint32Array {
  if (a.length >= atLeast) return a;
  const b = new Uint32Array(Math.max(atLeast, Math.ceil(a.length * 1.5), 16));
  b.set(a);
  return b;
}

/**
 * An empty list, shared and never written: the capacities of a tight relation until its first
 * change, and every buffer of a relation with no node (the first node grows each into its own).
 */
const NONE: Uint32Array = new Uint32Array(0);

/**
 * An {@link Adjacency}'s buffers and counters: what crosses from the pool thread that built it.
 * Without `capacity` the relation is tight: every segment holds exactly its count, back to back
 * (see {@link Adjacency.tightState}), and the capacities are made only when a change needs them.
 */
export interface AdjacencyState {
  readonly span: Uint32Array;
  readonly values: Uint32Array;
  readonly capacity?: Uint32Array | undefined;
  readonly end: number;
  readonly garbage: number;
}

/**
 * One side of a relation (user → roles, role → permissions, …) in compressed-row form: every
 * node's neighbours are a segment of one flat `Uint32Array`, located by the node's start and count
 * (interleaved in `span`, so the check reads both from one cache line) and its capacity. A segment
 * is patched in place (a tail move inside it); when it is full it moves to the end of the buffer
 * with room to grow, leaving garbage that {@link Adjacency.compact} reclaims once it outweighs the
 * live values. The order inside a segment is the caller's: numeric for most, by name for members.
 *
 * `span` and `values` are public, read-only by convention, so the check loop can read them directly.
 */
export class Adjacency {
  /** Node n's segment starts at `span[2n]` and holds `span[2n + 1]` values. */
  span: Uint32Array = NONE;
  values: Uint32Array = NONE;
  #capacity: Uint32Array = NONE;
  /** Every segment's capacity is its count and `#capacity` is not made yet (see {@link AdjacencyState}). */
  #tight = false;
  #end = 0;
  #garbage = 0;

  /** The arrays the relation is made of (views, some perhaps of one buffer shared with others: see graph-image.ts). */
  get arrays(): readonly ArrayBufferView[] {
    return [this.span, this.values, this.#capacity];
  }

  /** The relation over buffers another thread filled (see {@link state}); it owns them from now on. */
  static fromState(s: AdjacencyState): Adjacency {
    const a = new Adjacency();
    a.span = s.span;
    a.values = s.values;
    a.#capacity = s.capacity ?? NONE;
    a.#tight = s.capacity === undefined;
    a.#end = s.end;
    a.#garbage = s.garbage;
    return a;
  }

  /** The buffers and counters, shared, not copied: for a transfer to another thread, after which this relation is not used. */
  state(): AdjacencyState {
    return { span: this.span, values: this.values, capacity: this.#tight ? undefined : this.#capacity, end: this.#end, garbage: this.#garbage };
  }

  /**
   * The state with every segment exactly its count, back to back, and no capacities: the least
   * memory a relation that may never change again can take. `span` and `values` are new arrays
   * (the caller packs them); this relation is not used after.
   */
  tightState(): AdjacencyState {
    const nodes = this.#nodes();
    const span = new Uint32Array(2 * nodes);
    let end = 0;
    for (let n = 0; n < nodes; n++) end += this.countOf(n);
    const values = new Uint32Array(end);
    end = 0;
    for (let n = 0; n < nodes; n++) {
      const count = this.countOf(n);
      const from = this.#startOf(n);
      values.set(this.values.subarray(from, from + count), end);
      span[2 * n] = end;
      span[2 * n + 1] = count;
      end += count;
    }
    return { span, values, end, garbage: 0 };
  }

  /** Nodes laid out (ids below it may have neighbours). */
  #nodes(): number {
    return this.#tight ? this.span.length >>> 1 : this.#capacity.length;
  }

  /** The capacities, made from the counts the first time a tight relation changes. */
  #capacities(): Uint32Array {
    if (this.#tight) {
      const nodes = this.span.length >>> 1;
      const capacity = new Uint32Array(nodes);
      for (let n = 0; n < nodes; n++) capacity[n] = this.countOf(n);
      this.#capacity = capacity;
      this.#tight = false;
    }
    return this.#capacity;
  }

  /** Drops every node and gives the buffers back: the relation is as new. */
  reset(): void {
    this.span = NONE;
    this.values = NONE;
    this.#capacity = NONE;
    this.#tight = false;
    this.#end = 0;
    this.#garbage = 0;
  }

  /** Makes room for nodes `0 … n-1`; a new node has no neighbours. */
  ensureNodes(n: number): void {
    if (this.#nodes() >= n) return;
    this.#capacity = grownTo(this.#capacities(), n);
    this.span = grownTo(this.span, 2 * this.#capacity.length);
  }

  /** How many neighbours `node` has. */
  countOf(node: number): number {
    return this.span[2 * node + 1] as number;
  }

  #startOf(node: number): number {
    return this.span[2 * node] as number;
  }

  #setCount(node: number, count: number): void {
    this.span[2 * node + 1] = count;
  }

  /** Lays out empty segments with exactly `counts[n]` room each, for a bulk build with {@link Adjacency.push}. */
  reserve(counts: Uint32Array): void {
    const nodes = counts.length;
    this.span = new Uint32Array(2 * nodes);
    this.#capacity = counts.slice();
    this.#tight = false;
    let end = 0;
    for (let n = 0; n < nodes; n++) {
      this.span[2 * n] = end;
      end += counts[n] as number;
    }
    this.values = new Uint32Array(Math.max(end, 16));
    this.#end = end;
    this.#garbage = 0;
  }

  /** Appends during a bulk build (room was reserved). */
  push(node: number, value: number): void {
    const count = this.countOf(node);
    this.values[this.#startOf(node) + count] = value;
    this.#setCount(node, count + 1);
  }

  /** Sorts a segment numerically and drops repeated values (a bulk build's duplicates). */
  sortUnique(node: number): void {
    const from = this.#startOf(node);
    const n = this.countOf(node);
    if (n < 2) return;
    const seg = this.values.subarray(from, from + n).sort();
    let kept = 1;
    for (let i = 1; i < n; i++) if (seg[i] !== seg[kept - 1]) seg[kept++] = seg[i] as number;
    this.#setCount(node, kept);
  }

  /** Where `value` is, or would go, in a numerically sorted segment. */
  lowerBound(node: number, value: number): number {
    let lo = 0;
    let hi = this.countOf(node);
    const base = this.#startOf(node);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.values[base + mid] as number) < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether a numerically sorted segment holds `value`. */
  has(node: number, value: number): boolean {
    const i = this.lowerBound(node, value);
    return i < this.countOf(node) && this.at(node, i) === value;
  }

  /** The `i`-th neighbour of `node`. */
  at(node: number, i: number): number {
    return this.values[this.#startOf(node) + i] as number;
  }

  /** A copy of the segment (for iterating while the relation changes). */
  copyOf(node: number): Uint32Array {
    const from = this.#startOf(node);
    return this.values.slice(from, from + this.countOf(node));
  }

  /** Inserts `value` at position `i` of the segment, moving the tail. */
  insertAt(node: number, i: number, value: number): void {
    const count = this.countOf(node);
    if (count === this.#capacities()[node]) this.#relocate(node);
    const from = this.#startOf(node) + i;
    this.values.copyWithin(from + 1, from, this.#startOf(node) + count);
    this.values[from] = value;
    this.#setCount(node, count + 1);
  }

  /** Inserts into a numerically sorted segment; false when already there. */
  insertSorted(node: number, value: number): boolean {
    const i = this.lowerBound(node, value);
    if (i < this.countOf(node) && this.at(node, i) === value) return false;
    this.insertAt(node, i, value);
    return true;
  }

  /** Removes position `i` of the segment, moving the tail. */
  removeAt(node: number, i: number): void {
    const count = this.countOf(node);
    const from = this.#startOf(node) + i;
    this.values.copyWithin(from, from + 1, this.#startOf(node) + count);
    this.#setCount(node, count - 1);
  }

  /** Removes from a numerically sorted segment; false when absent. */
  removeSorted(node: number, value: number): boolean {
    const i = this.lowerBound(node, value);
    if (i >= this.countOf(node) || this.at(node, i) !== value) return false;
    this.removeAt(node, i);
    return true;
  }

  /** Drops every neighbour of `node` and its room. */
  clear(node: number): void {
    const capacity = this.#capacities();
    this.#garbage += capacity[node] as number;
    capacity[node] = 0;
    this.span[2 * node] = 0;
    this.#setCount(node, 0);
    if (this.#worthCompacting()) this.compact();
  }

  #worthCompacting(): boolean {
    return this.#garbage >= MIN_GARBAGE && this.#garbage > this.#end - this.#garbage;
  }

  /** Moves a full segment to the end of the buffer with room to grow (or grows it there in place). */
  #relocate(node: number): void {
    const capacity = this.#capacities();
    const cap = capacity[node] as number;
    const next = cap + Math.max(2, cap >> 1);
    if (cap > 0 && this.#startOf(node) + cap === this.#end && this.#end + next - cap <= this.values.length) {
      capacity[node] = next;
      this.#end += next - cap;
      return;
    }
    if (this.#end + next > this.values.length && this.#worthCompacting()) this.compact();
    this.values = grownTo(this.values, this.#end + next);
    const from = this.#startOf(node);
    this.values.copyWithin(this.#end, from, from + this.countOf(node));
    this.#garbage += cap;
    this.span[2 * node] = this.#end;
    capacity[node] = next;
    this.#end += next;
  }

  /** Rewrites the buffer with only the live segments, each with room for exactly its neighbours. */
  compact(): void {
    const capacity = this.#capacities();
    const nodes = capacity.length;
    let live = 0;
    for (let n = 0; n < nodes; n++) live += this.countOf(n);
    const values = new Uint32Array(Math.max(16, Math.ceil(live * 1.25)));
    let end = 0;
    for (let n = 0; n < nodes; n++) {
      const count = this.countOf(n);
      const from = this.#startOf(n);
      values.set(this.values.subarray(from, from + count), end);
      this.span[2 * n] = end;
      capacity[n] = count;
      end += count;
    }
    this.values = values;
    this.#end = end;
    this.#garbage = 0;
  }
}
