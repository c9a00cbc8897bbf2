/** Marks a released id's start in `#span`. */
const DEAD = 0xffffffff;
/** Hash slot states: 0 is empty, -1 a deleted entry (probing continues past it), else id + 1. */
const EMPTY = 0;
const DELETED = -1;

/** Spreads every input bit over the low bits the table indexes by (MurmurHash3's finaliser). */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * FNV-1a over pairs of UTF-16 code units (half the steps of one per unit: this is most of a
 * check's look-up), mixed. {@link NameTable} computes the same from its characters.
 */
function hashOf(name: string): number {
  let h = 0x811c9dc5;
  const n = name.length;
  let i = 0;
  for (; i + 1 < n; i += 2) h = Math.imul(h ^ (name.charCodeAt(i) | (name.charCodeAt(i + 1) << 16)), 0x01000193);
  if (i < n) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return mix(h);
}

/**
 * A name as character codes in a buffer: a path segment decoded in place by the HTTP layer, looked
 * up without ever becoming a string.
 */
export interface Spelling {
  readonly codes: Uint8Array;
  readonly length: number;
}

/** {@link hashOf} of a spelling: the same number for the same characters. */
function hashOfSpelling(s: Spelling): number {
  const codes = s.codes;
  const n = s.length;
  let h = 0x811c9dc5;
  let i = 0;
  for (; i + 1 < n; i += 2) h = Math.imul(h ^ ((codes[i] as number) | ((codes[i + 1] as number) << 16)), 0x01000193);
  if (i < n) h = Math.imul(h ^ (codes[i] as number), 0x01000193);
  return mix(h);
}

/** `n` rounded up to a power of two, at least 16. */
function powerOfTwo(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}

function grown<A extends Uint8Array | Uint16Array | Uint32Array | Int32Array>(a: A, atLeast: number, make: (n: number) => A): A {
  if (a.length >= atLeast) return a;
  const b = make(Math.max(atLeast, Math.ceil(a.length * 1.5), 16));
  b.set(a);
  return b;
}

/**
 * The buffers of a table with no name, shared by every such table and never written: the first
 * name grows each into one of its own. A table adopted from another thread (see
 * {@link NameTable.fromState}) then allocates nothing it would throw away at once.
 */
const NO_CHARS: Uint8Array = new Uint8Array(0);
const NO_SPAN: Uint32Array = new Uint32Array(0);
const NO_FREE: Uint32Array = new Uint32Array(0);
/** One empty pair: a look-up ends at once, and the first name rehashes before it is placed. */
const NO_SLOTS: Int32Array = new Int32Array(2);

/** A {@link NameTable}'s buffers and counters: what crosses from the pool thread that built it. */
export interface NameTableState {
  readonly chars: Uint8Array | Uint16Array;
  readonly charsEnd: number;
  readonly garbageChars: number;
  readonly span: Uint32Array;
  readonly idEnd: number;
  /** Absent when no id is free (a table fresh from a snapshot). */
  readonly free?: Uint32Array | undefined;
  readonly freeCount: number;
  readonly slots: Int32Array;
  readonly deletedSlots: number;
  readonly size: number;
}

/**
 * Interned names of one kind (users, roles or permissions) in flat typed arrays: the characters
 * of every name in one buffer (one byte each while every name is Latin-1, two once one is not),
 * each id's start and length, and an open-addressing hash from name to id. Looking a name up
 * allocates nothing, and the memory is exactly its {@link NameTable.arrays}: no string, Map or object
 * per name. Released ids are reused; the characters are compacted once most are garbage.
 */
export class NameTable<T extends number> {
  #chars: Uint8Array | Uint16Array = NO_CHARS;
  #charsEnd = 0;
  #garbageChars = 0;
  /** Id i's name is `#span[2i + 1]` characters from `#span[2i]` (DEAD when released): one cache line for both. */
  #span: Uint32Array = NO_SPAN;
  /** One past the highest id ever assigned. */
  #idEnd = 0;
  #free: Uint32Array = NO_FREE;
  #freeCount = 0;
  /** Pairs (hash, id + 1): a probe compares hashes before it touches any characters. */
  #slots: Int32Array = NO_SLOTS;
  #deletedSlots = 0;
  #size = 0;

  /** The table over buffers another thread filled (see {@link state}); it owns them from now on. */
  static fromState<T extends number>(s: NameTableState): NameTable<T> {
    const t = new NameTable<T>();
    t.#chars = s.chars;
    t.#charsEnd = s.charsEnd;
    t.#garbageChars = s.garbageChars;
    t.#span = s.span;
    t.#idEnd = s.idEnd;
    t.#free = s.free ?? NO_FREE;
    t.#freeCount = s.freeCount;
    t.#slots = s.slots;
    t.#deletedSlots = s.deletedSlots;
    t.#size = s.size;
    return t;
  }

  /** The buffers and counters, shared, not copied: for a transfer to another thread, after which this table is not used. */
  state(): NameTableState {
    return {
      chars: this.#chars,
      charsEnd: this.#charsEnd,
      garbageChars: this.#garbageChars,
      span: this.#span,
      idEnd: this.#idEnd,
      free: this.#free,
      freeCount: this.#freeCount,
      slots: this.#slots,
      deletedSlots: this.#deletedSlots,
      size: this.#size,
    };
  }

  /**
   * The state with each buffer cut to what is used (the hash keeps its size, a power of two): views
   * of this table's buffers, for the caller to pack; this table is not used after.
   */
  tightState(): NameTableState {
    const free = this.#freeCount === 0 ? undefined : this.#free.subarray(0, this.#freeCount);
    return { ...this.state(), chars: this.#chars.subarray(0, this.#charsEnd), span: this.#span.subarray(0, 2 * this.#idEnd), free };
  }

  /** Number of live names. */
  get size(): number {
    return this.#size;
  }

  /** One past the highest id in use: ids below it are live or free. */
  get idEnd(): number {
    return this.#idEnd;
  }

  /** The arrays the table is made of (views, some perhaps of one buffer shared with others: see graph-image.ts). */
  get arrays(): readonly ArrayBufferView[] {
    return [this.#chars, this.#span, this.#free, this.#slots];
  }

  isLive(id: number): boolean {
    return id < this.#idEnd && this.#span[2 * id] !== DEAD;
  }

  /** The id of `name`, or undefined. Allocation-free: this is the check's look-up. */
  id(name: string): T | undefined {
    const slots = this.#slots;
    const mask = (slots.length >>> 1) - 1;
    const hash = hashOf(name) | 0;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const s = slots[2 * i + 1] as number;
      if (s === EMPTY) return undefined;
      if (slots[2 * i] === hash && s > 0 && this.#equals(s - 1, name)) return (s - 1) as T;
    }
  }

  /** {@link id} of a spelled name (the hot path's, without a string): written twice on purpose, the probe loop is the check's cost. */
  idOf(s: Spelling): T | undefined {
    const slots = this.#slots;
    const mask = (slots.length >>> 1) - 1;
    const hash = hashOfSpelling(s) | 0;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const v = slots[2 * i + 1] as number;
      if (v === EMPTY) return undefined;
      if (slots[2 * i] === hash && v > 0 && this.#equalsSpelling(v - 1, s)) return (v - 1) as T;
    }
  }

  #equalsSpelling(id: number, s: Spelling): boolean {
    const span = this.#span;
    const length = span[2 * id + 1] as number;
    if (length !== s.length) return false;
    const chars = this.#chars;
    const codes = s.codes;
    const at = span[2 * id] as number;
    for (let k = 0; k < length; k++) if (chars[at + k] !== codes[k]) return false;
    return true;
  }

  #equals(id: number, name: string): boolean {
    const span = this.#span;
    const length = span[2 * id + 1] as number;
    if (length !== name.length) return false;
    const chars = this.#chars;
    const at = span[2 * id] as number;
    for (let k = 0; k < length; k++) if (chars[at + k] !== name.charCodeAt(k)) return false;
    return true;
  }

  /** The name of a live id. */
  name(id: T): string {
    if (!this.isLive(id)) throw new Error(`id ${id} is not live`);
    const at = this.#span[2 * id] as number;
    return String.fromCharCode.apply(null, this.#chars.subarray(at, at + (this.#span[2 * id + 1] as number)) as unknown as number[]);
  }

  /** Code-point order of two live ids' names (names are compared as UTF-16 code units, as `<` does). */
  compare(a: T, b: T): number {
    if (a === b) return 0;
    const chars = this.#chars;
    const span = this.#span;
    const la = span[2 * a + 1] as number;
    const lb = span[2 * b + 1] as number;
    const sa = span[2 * a] as number;
    const sb = span[2 * b] as number;
    const n = la < lb ? la : lb;
    for (let k = 0; k < n; k++) {
      const d = (chars[sa + k] as number) - (chars[sb + k] as number);
      if (d !== 0) return d;
    }
    return la - lb;
  }

  /** Whether the name of live `id` starts with `prefix`. */
  startsWith(id: T, prefix: string): boolean {
    if ((this.#span[2 * id + 1] as number) < prefix.length) return false;
    const at = this.#span[2 * id] as number;
    for (let k = 0; k < prefix.length; k++) if (this.#chars[at + k] !== prefix.charCodeAt(k)) return false;
    return true;
  }

  /** The id of `name`, assigning one if it has none. */
  intern(name: string): T {
    const known = this.id(name);
    if (known !== undefined) return known;
    const id = this.#freeCount > 0 ? (this.#free[--this.#freeCount] as number) : this.#idEnd++;
    if (this.#span.length < 2 * this.#idEnd) this.#span = grown(this.#span, 2 * this.#idEnd, (n) => new Uint32Array(n).fill(DEAD));
    this.#span[2 * id] = this.#append(name);
    this.#span[2 * id + 1] = name.length;
    this.#size++;
    if ((this.#size + this.#deletedSlots) * 10 > (this.#slots.length >>> 1) * 7) this.#rehash();
    this.#place(id, hashOf(name));
    return id as T;
  }

  /** Forgets every name and gives the buffers back: the table is as new. */
  reset(): void {
    this.#chars = NO_CHARS;
    this.#charsEnd = 0;
    this.#garbageChars = 0;
    this.#span = NO_SPAN;
    this.#idEnd = 0;
    this.#free = NO_FREE;
    this.#freeCount = 0;
    this.#slots = NO_SLOTS;
    this.#deletedSlots = 0;
    this.#size = 0;
  }

  /** Forgets a live id's name; the id may be handed out again. */
  release(id: T): void {
    if (!this.isLive(id)) return;
    const slots = this.#slots;
    const mask = (slots.length >>> 1) - 1;
    let i = this.#hashOfId(id) & mask;
    while (slots[2 * i + 1] !== id + 1) i = (i + 1) & mask;
    slots[2 * i + 1] = DELETED;
    this.#deletedSlots++;
    this.#garbageChars += this.#span[2 * id + 1] as number;
    this.#span[2 * id] = DEAD;
    this.#free = grown(this.#free, this.#freeCount + 1, (n) => new Uint32Array(n));
    this.#free[this.#freeCount++] = id;
    this.#size--;
    if (this.#garbageChars > 4096 && this.#garbageChars * 2 > this.#charsEnd) this.#compactChars();
  }

  /** Every live id, in id order. */
  *ids(): IterableIterator<T> {
    for (let id = 0; id < this.#idEnd; id++) if (this.#span[2 * id] !== DEAD) yield id as T;
  }

  /** Stores the characters, widening the buffer to two bytes a character for a name beyond Latin-1. */
  #append(name: string): number {
    const at = this.#charsEnd;
    let chars = this.#chars;
    if (chars.length < at + name.length) chars = this.#chars = this.#resized(chars, Math.max(at + name.length, Math.ceil(chars.length * 1.5)));
    for (let k = 0; k < name.length; k++) {
      const c = name.charCodeAt(k);
      if (c > 0xff && chars instanceof Uint8Array) chars = this.#chars = Uint16Array.from(chars);
      chars[at + k] = c;
    }
    this.#charsEnd = at + name.length;
    return at;
  }

  /** A copy of `chars` in a buffer of `n` characters, of the same width. */
  #resized(chars: Uint8Array | Uint16Array, n: number): Uint8Array | Uint16Array {
    const copy = chars instanceof Uint16Array ? new Uint16Array(n) : new Uint8Array(n);
    copy.set(chars.subarray(0, this.#charsEnd));
    return copy;
  }

  #hashOfId(id: number): number {
    let h = 0x811c9dc5;
    const at = this.#span[2 * id] as number;
    const end = at + (this.#span[2 * id + 1] as number);
    const chars = this.#chars;
    let k = at;
    for (; k + 1 < end; k += 2) h = Math.imul(h ^ ((chars[k] as number) | ((chars[k + 1] as number) << 16)), 0x01000193);
    if (k < end) h = Math.imul(h ^ (chars[k] as number), 0x01000193);
    return mix(h);
  }

  #place(id: number, hash: number): void {
    const slots = this.#slots;
    const mask = (slots.length >>> 1) - 1;
    let i = hash & mask;
    while ((slots[2 * i + 1] as number) > 0) i = (i + 1) & mask;
    if (slots[2 * i + 1] === DELETED) this.#deletedSlots--;
    slots[2 * i] = hash | 0;
    slots[2 * i + 1] = id + 1;
  }

  /** Rebuilds the hash at a load of at most a half, dropping deleted slots. */
  #rehash(): void {
    this.#slots = new Int32Array(2 * powerOfTwo(this.#size * 2));
    this.#deletedSlots = 0;
    for (let id = 0; id < this.#idEnd; id++) if (this.#span[2 * id] !== DEAD) this.#place(id, this.#hashOfId(id));
  }

  #compactChars(): void {
    const old = this.#chars;
    const live = this.#charsEnd - this.#garbageChars;
    const chars = old instanceof Uint16Array ? new Uint16Array(Math.max(256, live)) : new Uint8Array(Math.max(256, live));
    let end = 0;
    for (let id = 0; id < this.#idEnd; id++) {
      const at = this.#span[2 * id] as number;
      if (at === DEAD) continue;
      const length = this.#span[2 * id + 1] as number;
      chars.set(old.subarray(at, at + length), end);
      this.#span[2 * id] = end;
      end += length;
    }
    this.#chars = chars;
    this.#charsEnd = end;
    this.#garbageChars = 0;
  }
}
