import { STORE_METHODS, type Store, type StoreMethod, type StoreRoles } from './port.ts';
import { PassingStore } from './wrappers/passing.ts';

type Role = keyof StoreRoles;

/** Each store call → the role whose list in {@link STORE_METHODS} names it. */
const ROLE_OF: ReadonlyMap<StoreMethod, Role> = new Map(
  (Object.keys(STORE_METHODS) as Role[]).flatMap((role) => STORE_METHODS[role].map((method): [StoreMethod, Role] => [method, role])),
);

/**
 * The base of an adapter made of its roles (one object each, in files of their own): every store
 * call is the method of the same name of the role that {@link STORE_METHODS} files it under. The
 * adapter's class writes no call itself, only how it opens and closes, so a method added to a
 * port is written in the role's file and reaches callers with no line here or in the adapter's
 * index.
 */
export abstract class ComposedStore extends PassingStore implements Store {
  readonly #roles: StoreRoles;

  constructor(roles: StoreRoles) {
    super();
    this.#roles = roles;
  }

  protected pass(method: StoreMethod, args: readonly unknown[]): Promise<unknown> {
    const role = this.#roles[ROLE_OF.get(method) as Role] as unknown as Record<StoreMethod, (...a: readonly unknown[]) => Promise<unknown>>;
    return Reflect.apply(role[method], role, args);
  }

  abstract close(): Promise<void>;
}
