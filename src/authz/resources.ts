import { SortedNames } from './sorted.ts';

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
 * the number of such permissions (so the last revoke of one forgets the resource), and the ids
 * sorted. Kept up to date as permissions appear and disappear, so a resource search never scans
 * every permission nor sorts again after a write.
 */
export class ResourceIndex {
  readonly #byType = new Map<string, { readonly counts: Map<string, number>; readonly ids: SortedNames }>();

  /** A permission was granted for the first time (by any role). An empty id (`t::a`) names no resource AuthZEN can ask about. */
  add(permission: string): void {
    const { type, id } = readPermission(permission);
    if (type === undefined || id === undefined || id === '') return;
    let known = this.#byType.get(type);
    if (known === undefined) this.#byType.set(type, (known = { counts: new Map(), ids: new SortedNames() }));
    const count = known.counts.get(id) ?? 0;
    known.counts.set(id, count + 1);
    if (count === 0) known.ids.add(id);
  }

  /** A permission is no longer granted by any role. */
  remove(permission: string): void {
    const { type, id } = readPermission(permission);
    if (type === undefined || id === undefined || id === '') return;
    const known = this.#byType.get(type);
    const count = known?.counts.get(id);
    if (known === undefined || count === undefined) return;
    if (count > 1) return void known.counts.set(id, count - 1);
    known.counts.delete(id);
    known.ids.delete(id);
    if (known.counts.size === 0) this.#byType.delete(type);
  }

  /** The ids of `type`, sorted. */
  ids(type: string): readonly string[] {
    return this.#byType.get(type)?.ids.sorted() ?? [];
  }
}
