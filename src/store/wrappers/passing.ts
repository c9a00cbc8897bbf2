import { ALL_STORE_METHODS, type StoreCalls, type StoreMethod } from '../port.ts';

/**
 * The base of a store that stands in front of another (a wrapper, the pool): every store call
 * it does not define itself is defined at construction to hand its name and arguments to
 * {@link PassingStore.pass}. A subclass writes only the methods it changes, and a method added
 * to a port reaches it with no line written here.
 */
// Merged with the interface below, which types the calls the constructor defines.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export abstract class PassingStore {
  constructor() {
    for (const method of ALL_STORE_METHODS) {
      if (method in this) continue;
      Object.defineProperty(this, method, { value: (...args: unknown[]) => this.pass(method, args), writable: true, configurable: true });
    }
  }

  /** Runs store call `method` with `args` (typed by the caller: `Parameters<StoreCalls[method]>`). */
  protected abstract pass(method: StoreMethod, args: readonly unknown[]): Promise<unknown>;
}

// The calls defined in the constructor, as the compiler sees them. The merge is sound because
// the constructor defines every name the compiler adds (ALL_STORE_METHODS is checked against
// the ports in port.ts).
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface PassingStore extends StoreCalls {}

/** Calls `method` of `store` with `args`. */
export function callOf(store: StoreCalls, method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
  const fn = store[method] as (...a: readonly unknown[]) => Promise<unknown>;
  return Reflect.apply(fn, store, args) as Promise<unknown>;
}
