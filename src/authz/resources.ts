import type { PermId } from './ids.ts';
import type { NameTable } from './name-table.ts';

/**
 * How a stored permission name reads (docs/authzen.md): no colon is a global grant, one colon
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
 * The known resources of `type` (docs/authzen.md): each id named by a granted `t:i:x`
 * permission, once, sorted by code point. Read from the permission names themselves, so no
 * second index has to be kept: only the names starting with `type:` are decoded. `granted`, when
 * given, says whether a permission is granted now (a graph with windows: some grants are not yet
 * or no longer active).
 */
export function knownResourceIds(permissions: NameTable<PermId>, type: string, granted?: (p: PermId) => boolean): string[] {
  const prefix = `${type}:`;
  const ids = new Set<string>();
  for (const p of permissions.ids()) {
    if (!permissions.startsWith(p, prefix) || (granted !== undefined && !granted(p))) continue;
    const { id } = readPermission(permissions.name(p));
    // An empty id (`t::a`) names no resource AuthZEN can ask about.
    if (id !== undefined && id !== '') ids.add(id);
  }
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
