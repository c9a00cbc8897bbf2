import type { PermId, RoleId, UserId } from './ids.ts';
import type { Adjacency } from './adjacency.ts';
import type { NameTable } from './name-table.ts';

/**
 * Where user `u` is, or would go, among the members of role `r`, which are kept sorted by name
 * (so `members` and the holders of a permission read out in order, with no sort).
 */
export function memberPosition(membersOfRole: Adjacency, userNames: NameTable<UserId>, r: RoleId, u: UserId): number {
  let lo = 0;
  let hi = membersOfRole.countOf(r);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (userNames.compare(membersOfRole.at(r, mid) as UserId, u) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The users holding `p` through any role, in name order: the granting roles' member lists merged pairwise. */
export function holdersOf(p: PermId, rolesOfPerm: Adjacency, membersOfRole: Adjacency, userNames: NameTable<UserId>): Uint32Array {
  let merged: Uint32Array = new Uint32Array(0);
  for (const r of rolesOfPerm.copyOf(p)) merged = mergeByName(merged, membersOfRole.copyOf(r), userNames);
  return merged;
}

/** Two lists sorted by name merged into one, each user once. */
function mergeByName(a: Uint32Array, b: Uint32Array, userNames: NameTable<UserId>): Uint32Array {
  if (a.length === 0) return b;
  const out = new Uint32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const d = userNames.compare(a[i] as UserId, b[j] as UserId);
    if (d <= 0) out[n++] = a[i++] as number;
    else out[n++] = b[j++] as number;
    if (d === 0) j++;
  }
  while (i < a.length) out[n++] = a[i++] as number;
  while (j < b.length) out[n++] = b[j++] as number;
  return out.subarray(0, n);
}

/** The names of `ids`, in their order. */
export function namesOf<T extends number>(ids: Iterable<number>, table: NameTable<T>): string[] {
  const out: string[] = [];
  for (const id of ids) out.push(table.name(id as T));
  return out;
}
