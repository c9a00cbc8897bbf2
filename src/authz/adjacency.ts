/** Compaction runs only once the garbage is at least this many values, and more than the live ones. */
const MIN_GARBAGE = 1024;

function grownTo(a: Uint32Array, atLeast: number): Uint32Array {
  if (a.length >= atLeast) return a;
  const b = new Uint32Array(Math.max(atLeast, Math.ceil(a.length * 1.5), 16));
  b.set(a);
  return b;
}

/**
 * One side of a relation (user → roles, role → permissions, …) in compressed-row form: every
 * node's neighbours are a segment of one flat `Uint32Array`, located by per-node start, count and
 * capacity arrays. A segment is patched in place (a tail move inside it); when it is full it moves
 * to the end of the buffer with room to grow, leaving garbage that {@link Adjacency.compact}
 * reclaims once it outweighs the live values. The order inside a segment is the caller's: numeric
 * for most, by name for role members.
 *
 * The arrays are public and read-only by convention so the check loop can read them directly.
 */
export class Adjacency {
  start: Uint32Array = new Uint32Array(16);
  count: Uint32Array = new Uint32Array(16);
  capacity: Uint32Array = new Uint32Array(16);
  values: Uint32Array = new Uint32Array(64);
  #end = 0;
  #garbage = 0;

  /** Bytes held by the buffers. */
  get bytes(): number {
    return this.start.byteLength + this.count.byteLength + this.capacity.byteLength + this.values.byteLength;
  }

  /** Drops every node and gives the buffers back: the relation is as new. */
  reset(): void {
    this.start = new Uint32Array(16);
    this.count = new Uint32Array(16);
    this.capacity = new Uint32Array(16);
    this.values = new Uint32Array(64);
    this.#end = 0;
    this.#garbage = 0;
  }

  /** Makes room for nodes `0 … n-1`; a new node has no neighbours. */
  ensureNodes(n: number): void {
    if (this.start.length >= n) return;
    this.start = grownTo(this.start, n);
    this.count = grownTo(this.count, n);
    this.capacity = grownTo(this.capacity, n);
  }

  /** Lays out empty segments with exactly `counts[n]` room each, for a bulk build with {@link Adjacency.push}. */
  reserve(counts: Uint32Array): void {
    const nodes = counts.length;
    this.start = new Uint32Array(nodes);
    this.count = new Uint32Array(nodes);
    this.capacity = counts.slice();
    let end = 0;
    for (let n = 0; n < nodes; n++) {
      this.start[n] = end;
      end += counts[n] as number;
    }
    this.values = new Uint32Array(Math.max(end, 16));
    this.#end = end;
    this.#garbage = 0;
  }

  /** Appends during a bulk build (room was reserved). */
  push(node: number, value: number): void {
    const at = (this.start[node] as number) + (this.count[node] as number);
    this.values[at] = value;
    this.count[node] = (this.count[node] as number) + 1;
  }

  /** Sorts a segment numerically and drops repeated values (a bulk build's duplicates). */
  sortUnique(node: number): void {
    const from = this.start[node] as number;
    const n = this.count[node] as number;
    if (n < 2) return;
    const seg = this.values.subarray(from, from + n).sort();
    let kept = 1;
    for (let i = 1; i < n; i++) if (seg[i] !== seg[kept - 1]) seg[kept++] = seg[i] as number;
    this.count[node] = kept;
  }

  /** Where `value` is, or would go, in a numerically sorted segment. */
  lowerBound(node: number, value: number): number {
    let lo = 0;
    let hi = this.count[node] as number;
    const base = this.start[node] as number;
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
    return i < (this.count[node] as number) && this.values[(this.start[node] as number) + i] === value;
  }

  /** The `i`-th neighbour of `node`. */
  at(node: number, i: number): number {
    return this.values[(this.start[node] as number) + i] as number;
  }

  /** A copy of the segment (for iterating while the relation changes). */
  copyOf(node: number): Uint32Array {
    const from = this.start[node] as number;
    return this.values.slice(from, from + (this.count[node] as number));
  }

  /** Inserts `value` at position `i` of the segment, moving the tail. */
  insertAt(node: number, i: number, value: number): void {
    if (this.count[node] === this.capacity[node]) this.#relocate(node);
    const from = (this.start[node] as number) + i;
    const end = (this.start[node] as number) + (this.count[node] as number);
    this.values.copyWithin(from + 1, from, end);
    this.values[from] = value;
    this.count[node] = (this.count[node] as number) + 1;
  }

  /** Inserts into a numerically sorted segment; false when already there. */
  insertSorted(node: number, value: number): boolean {
    const i = this.lowerBound(node, value);
    if (i < (this.count[node] as number) && this.at(node, i) === value) return false;
    this.insertAt(node, i, value);
    return true;
  }

  /** Removes position `i` of the segment, moving the tail. */
  removeAt(node: number, i: number): void {
    const from = (this.start[node] as number) + i;
    const end = (this.start[node] as number) + (this.count[node] as number);
    this.values.copyWithin(from, from + 1, end);
    this.count[node] = (this.count[node] as number) - 1;
  }

  /** Removes from a numerically sorted segment; false when absent. */
  removeSorted(node: number, value: number): boolean {
    const i = this.lowerBound(node, value);
    if (i >= (this.count[node] as number) || this.at(node, i) !== value) return false;
    this.removeAt(node, i);
    return true;
  }

  /** Drops every neighbour of `node` and its room. */
  clear(node: number): void {
    this.#garbage += this.capacity[node] as number;
    this.count[node] = 0;
    this.capacity[node] = 0;
    this.start[node] = 0;
    if (this.#garbage >= MIN_GARBAGE && this.#garbage > this.#end - this.#garbage) this.compact();
  }

  /** Moves a full segment to the end of the buffer with room to grow (or grows it there in place). */
  #relocate(node: number): void {
    const cap = this.capacity[node] as number;
    const next = cap + Math.max(2, cap >> 1);
    const from = this.start[node] as number;
    if (cap > 0 && from + cap === this.#end && this.#end + next - cap <= this.values.length) {
      this.capacity[node] = next;
      this.#end += next - cap;
      return;
    }
    if (this.#end + next > this.values.length && this.#garbage >= MIN_GARBAGE && this.#garbage > this.#end - this.#garbage) this.compact();
    this.values = grownTo(this.values, this.#end + next);
    this.values.copyWithin(this.#end, this.start[node] as number, (this.start[node] as number) + (this.count[node] as number));
    this.#garbage += this.capacity[node] as number;
    this.start[node] = this.#end;
    this.capacity[node] = next;
    this.#end += next;
  }

  /** Rewrites the buffer with only the live segments, each with room for exactly its neighbours. */
  compact(): void {
    let live = 0;
    for (let n = 0; n < this.start.length; n++) live += this.count[n] as number;
    const values = new Uint32Array(Math.max(16, Math.ceil(live * 1.25)));
    let end = 0;
    for (let n = 0; n < this.start.length; n++) {
      const c = this.count[n] as number;
      values.set(this.values.subarray(this.start[n] as number, (this.start[n] as number) + c), end);
      this.start[n] = end;
      this.capacity[n] = c;
      end += c;
    }
    this.values = values;
    this.#end = end;
    this.#garbage = 0;
  }
}
