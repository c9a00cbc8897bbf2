/**
 * How a stored permission name reads (CONTRACT.md §11.4): no colon is a global grant, one colon
 * `t:a` a grant on every resource of type t, two or more `t:i:a` a grant on resource i of type t,
 * whose id is everything between the first and the last colon.
 */
export interface PermissionReading {
  readonly type: string | undefined;
  readonly id: string | undefined;
  readonly action: string;
}

/** The reading of a permission name. */
export function readPermission(name: string): PermissionReading {
  const first = name.indexOf(':');
  if (first < 0) return { type: undefined, id: undefined, action: name };
  const last = name.lastIndexOf(':');
  if (first === last) return { type: name.slice(0, first), id: undefined, action: name.slice(first + 1) };
  return { type: name.slice(0, first), id: name.slice(first + 1, last), action: name.slice(last + 1) };
}

/**
 * The known resources of a tenant: per type, each id named by a granted `t:i:x` permission with
 * the number of such permissions, so that the last revoke of one forgets the resource. Kept up to
 * date as permissions appear and disappear, so a resource search never scans every permission.
 */
export class ResourceIndex {
  readonly #byType = new Map<string, Map<string, number>>();

  /** A permission was granted for the first time (by any role). An empty id (`t::a`) names no resource AuthZEN can ask about. */
  add(permission: string): void {
    const { type, id } = readPermission(permission);
    if (type === undefined || id === undefined || id === '') return;
    let ids = this.#byType.get(type);
    if (ids === undefined) this.#byType.set(type, (ids = new Map()));
    ids.set(id, (ids.get(id) ?? 0) + 1);
  }

  /** A permission is no longer granted by any role. */
  remove(permission: string): void {
    const { type, id } = readPermission(permission);
    if (type === undefined || id === undefined || id === '') return;
    const ids = this.#byType.get(type);
    const count = ids?.get(id);
    if (ids === undefined || count === undefined) return;
    if (count > 1) ids.set(id, count - 1);
    else if (ids.delete(id) && ids.size === 0) this.#byType.delete(type);
  }

  /** The ids of `type`, unsorted. */
  ids(type: string): string[] {
    return [...(this.#byType.get(type)?.keys() ?? [])];
  }
}
