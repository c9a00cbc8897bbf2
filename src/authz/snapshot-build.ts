import type { PermId, RoleId, UserId } from './ids.ts';
import type { Snapshot } from './changes.ts';
import { Adjacency } from './adjacency.ts';
import { NameTable } from './name-table.ts';

/** The buffers a {@link TenantGraph} is made of. */
export interface GraphParts {
  readonly userNames: NameTable<UserId>;
  readonly roleNames: NameTable<RoleId>;
  readonly permNames: NameTable<PermId>;
  readonly rolesOfUser: Adjacency;
  readonly membersOfRole: Adjacency;
  readonly permsOfRole: Adjacency;
  readonly rolesOfPerm: Adjacency;
  readonly descriptions: Array<string | undefined>;
}

/** The parts of an empty graph. */
export function emptyParts(): GraphParts {
  return {
    userNames: new NameTable(),
    roleNames: new NameTable(),
    permNames: new NameTable(),
    rolesOfUser: new Adjacency(),
    membersOfRole: new Adjacency(),
    permsOfRole: new Adjacency(),
    rolesOfPerm: new Adjacency(),
    descriptions: [],
  };
}

/**
 * Builds the parts of a snapshot's graph in bulk: each relation is counted, laid out once and
 * filled, with no per-row insert. Users are interned in name order, so appending them to their
 * roles in id order leaves every role's members sorted by name without comparing a name.
 * Grants and memberships naming an unknown role are ignored, as the changes would be.
 */
export function buildFromSnapshot(s: Snapshot): GraphParts {
  const parts = emptyParts();
  const { roleNames, descriptions } = parts;
  for (const [role, description] of s.roles) {
    if (roleNames.id(role) !== undefined) continue;
    descriptions[roleNames.intern(role)] = description;
  }
  buildGrants(parts, s.grants);
  buildMemberships(parts, s.memberships);
  return parts;
}

function buildGrants(parts: GraphParts, grants: Snapshot['grants']): void {
  const { roleNames, permNames, permsOfRole, rolesOfPerm } = parts;
  const roleOf = new Uint32Array(grants.length);
  const permOf = new Uint32Array(grants.length);
  let n = 0;
  for (const [role, permission] of grants) {
    const r = roleNames.id(role);
    if (r === undefined) continue;
    roleOf[n] = r;
    permOf[n++] = permNames.intern(permission);
  }
  fill(permsOfRole, roleNames.idEnd, roleOf, permOf, n);
  fill(rolesOfPerm, permNames.idEnd, permOf, roleOf, n);
}

function buildMemberships(parts: GraphParts, memberships: Snapshot['memberships']): void {
  const { roleNames, userNames, rolesOfUser, membersOfRole } = parts;
  const userOf = new Uint32Array(memberships.length);
  const roleOf = new Uint32Array(memberships.length);
  let n = 0;
  // Stores send the rows by user: a user's rows come together and are interned once.
  let lastUser: string | undefined;
  let lastId = 0;
  for (const [user, role] of memberships) {
    const r = roleNames.id(role);
    if (r === undefined) continue;
    if (user !== lastUser) {
      lastId = userNames.intern(user);
      lastUser = user;
    }
    roleOf[n] = r;
    userOf[n++] = lastId;
  }
  fill(rolesOfUser, userNames.idEnd, userOf, roleOf, n);
  const perRole = new Uint32Array(roleNames.idEnd);
  for (let i = 0; i < userNames.idEnd; i++) forEachRole(rolesOfUser, i, (r) => (perRole[r] = (perRole[r] as number) + 1));
  membersOfRole.reserve(perRole);
  // Appending the users in name order leaves every role's members sorted by name.
  for (const u of usersByName(userNames)) forEachRole(rolesOfUser, u, (r) => membersOfRole.push(r, u));
}

function forEachRole(rolesOfUser: Adjacency, u: number, visit: (r: number) => void): void {
  for (let i = 0; i < rolesOfUser.countOf(u); i++) visit(rolesOfUser.at(u, i));
}

/** Every user id, in name order: one sort of the ids, skipped when the rows came sorted already. */
function usersByName(userNames: NameTable<UserId>): Uint32Array {
  const ids = new Uint32Array(userNames.idEnd);
  let sorted = true;
  for (let i = 0; i < ids.length; i++) {
    ids[i] = i;
    if (i > 0 && sorted && userNames.compare((i - 1) as UserId, i as UserId) > 0) sorted = false;
  }
  return sorted ? ids : ids.sort((a, b) => userNames.compare(a as UserId, b as UserId));
}

/** Lays out `adjacency` over `nodes` nodes from `n` pairs (from[i] → to[i]), each segment sorted, repeats dropped. */
function fill(adjacency: Adjacency, nodes: number, from: Uint32Array, to: Uint32Array, n: number): void {
  const counts = new Uint32Array(nodes);
  for (let i = 0; i < n; i++) {
    const node = from[i] as number;
    counts[node] = (counts[node] as number) + 1;
  }
  adjacency.reserve(counts);
  for (let i = 0; i < n; i++) adjacency.push(from[i] as number, to[i] as number);
  for (let node = 0; node < nodes; node++) adjacency.sortUnique(node);
}
