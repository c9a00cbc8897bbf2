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
  const known = memberships.filter(([, role]) => roleNames.id(role) !== undefined);
  // Interning in name order makes id order name order (until later writes add users).
  const names = [...new Set(known.map(([user]) => user))].sort();
  for (const name of names) userNames.intern(name);
  const userOf = new Uint32Array(known.length);
  const roleOf = new Uint32Array(known.length);
  known.forEach(([user, role], i) => {
    userOf[i] = userNames.id(user) as number;
    roleOf[i] = roleNames.id(role) as number;
  });
  fill(rolesOfUser, userNames.idEnd, userOf, roleOf, known.length);
  const perRole = new Uint32Array(roleNames.idEnd);
  for (let u = 0; u < userNames.idEnd; u++) for (let i = 0; i < (rolesOfUser.count[u] as number); i++) {
    const r = rolesOfUser.at(u, i);
    perRole[r] = (perRole[r] as number) + 1;
  }
  membersOfRole.reserve(perRole);
  for (let u = 0; u < userNames.idEnd; u++) for (let i = 0; i < (rolesOfUser.count[u] as number); i++) membersOfRole.push(rolesOfUser.at(u, i), u);
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
