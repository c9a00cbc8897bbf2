import type { TenantId } from '../authz/tenant.ts';

/** Slots a new index starts with (a power of two). */
const INITIAL_SLOTS = 1024;

/** Hex digit value of a character code ('0'-'9', 'a'-'f', 'A'-'F'). */
function hexDigit(code: number): number {
  return code <= 57 ? code - 48 : (code | 32) - 87;
}

/** The 32-bit number written by the 8 hex digits of `tenant` from `at`. */
function word(tenant: string, at: number): number {
  let w = 0;
  for (let i = at; i < at + 8; i++) w = (w << 4) | hexDigit(tenant.charCodeAt(i));
  return w >>> 0;
}

/**
 * The tenants that exist (have written at least once), as the first 64 bits of their ids (hex
 * SHA-256, so uniformly spread) in an open-addressing table of 32-bit pairs: 8 to 16 bytes per
 * tenant, looked up with no allocation. A lookup answers "maybe" (the prefix is there: go the
 * normal way) or "certainly not" (answer the empty client without the database). Entries are
 * never removed: a tenant deleted down to nothing is still a tenant with a revision.
 *
 * Hand-written because the libraries at hand key their sets by strings or by small integers;
 * this needs 64-bit keys without an object or a string per entry.
 */
export class ClientIndex {
  /** Pairs (high word, low word) of the prefixes; a pair of zeros is a free slot. */
  #slots = new Uint32Array(INITIAL_SLOTS * 2);
  #mask = INITIAL_SLOTS - 1;
  #count = 0;
  /** The all-zero prefix cannot be stored as a pair of zeros (that marks a free slot). */
  #hasZero = false;

  /** Tenants indexed. */
  get size(): number {
    return this.#count + (this.#hasZero ? 1 : 0);
  }

  /** Bytes the table takes. */
  get bytes(): number {
    return this.#slots.byteLength;
  }

  /** Whether the tenant may exist (false: it has certainly never written). Synchronous, allocation-free. */
  has(tenant: TenantId): boolean {
    const hi = word(tenant, 0);
    const lo = word(tenant, 8);
    if (hi === 0 && lo === 0) return this.#hasZero;
    const slots = this.#slots;
    for (let i = lo & this.#mask; ; i = (i + 1) & this.#mask) {
      const h = slots[2 * i] as number;
      const l = slots[2 * i + 1] as number;
      if (h === hi && l === lo) return true;
      if (h === 0 && l === 0) return false;
    }
  }

  add(tenant: TenantId): void {
    const hi = word(tenant, 0);
    const lo = word(tenant, 8);
    if (hi === 0 && lo === 0) {
      this.#hasZero = true;
      return;
    }
    if (this.#insert(this.#slots, this.#mask, hi, lo)) this.#count++;
    // At most half full, so that a miss ends after a slot or two.
    if (this.#count * 2 > this.#mask + 1) this.#grow();
  }

  /** Puts a prefix in `slots` unless it is there; whether it was new. */
  #insert(slots: Uint32Array, mask: number, hi: number, lo: number): boolean {
    for (let i = lo & mask; ; i = (i + 1) & mask) {
      const h = slots[2 * i] as number;
      const l = slots[2 * i + 1] as number;
      if (h === hi && l === lo) return false;
      if (h === 0 && l === 0) {
        slots[2 * i] = hi;
        slots[2 * i + 1] = lo;
        return true;
      }
    }
  }

  #grow(): void {
    const old = this.#slots;
    const slots = new Uint32Array(old.length * 2);
    const mask = slots.length / 2 - 1;
    for (let i = 0; i < old.length; i += 2) {
      const hi = old[i] as number;
      const lo = old[i + 1] as number;
      if (hi !== 0 || lo !== 0) this.#insert(slots, mask, hi, lo);
    }
    this.#slots = slots;
    this.#mask = mask;
  }
}
