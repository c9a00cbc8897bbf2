/**
 * Interned integer ids. Names are stored once per tenant graph; relations hold small integers,
 * branded so that a role id can never be passed where a permission id is expected.
 */
declare const brand: unique symbol;
export type Id<Kind extends string> = number & { readonly [brand]: Kind };
export type RoleId = Id<'role'>;
export type PermId = Id<'permission'>;
export type UserId = Id<'user'>;

/** Two-way map between names and dense ids; released ids are reused so churn does not grow it. */
export class Interner<T extends number> {
  readonly #ids = new Map<string, T>();
  readonly #names: Array<string | undefined> = [];
  readonly #free: T[] = [];

  /** Number of live names. */
  get size(): number {
    return this.#ids.size;
  }

  id(name: string): T | undefined {
    return this.#ids.get(name);
  }

  name(id: T): string {
    const n = this.#names[id];
    if (n === undefined) throw new Error(`id ${id} is not live`);
    return n;
  }

  /** The id of `name`, assigning one if it has none. */
  intern(name: string): T {
    const known = this.#ids.get(name);
    if (known !== undefined) return known;
    const id = this.#free.pop() ?? (this.#names.length as T);
    this.#names[id] = name;
    this.#ids.set(name, id);
    return id;
  }

  release(id: T): void {
    const n = this.#names[id];
    if (n === undefined) return;
    this.#ids.delete(n);
    this.#names[id] = undefined;
    this.#free.push(id);
  }

  names(): IterableIterator<string> {
    return this.#ids.keys();
  }
}
