import type { PermId, RoleId, UserId } from './ids.ts';
import type { Snapshot, WindowedEdge } from './changes.ts';
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
  /** The edges with a window (docs/api.md §12.1): few, kept by name beside the buffers. */
  readonly windows: readonly WindowedEdge[];
}

/**
 * The parts a graph adopts: the two reverse relations may be left out (a small graph's image, see
 * graph-image.ts), and the graph makes them from the others when first needed.
 */
export type AdoptedParts = Omit<GraphParts, 'membersOfRole' | 'rolesOfPerm'> & {
  readonly membersOfRole: Adjacency | undefined;
  readonly rolesOfPerm: Adjacency | undefined;
};

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
    windows: [],
  };
}

/** Visits every membership as (user, role), a user's rows one after another where the source can. */
export type Memberships = (visit: (user: string, role: string) => void) => void;

/**
 * A tenant's rows as its store's one hydration read gives them: roles and grants as pairs,
 * memberships as the database aggregates them (see {@link groupedMemberships}).
 */
export interface TenantRows {
  readonly revision: number;
  readonly roles: Snapshot['roles'];
  readonly grants: Snapshot['grants'];
  readonly memberships: Memberships;
  /** Every grant and membership with a window (each is among `grants` or `memberships` too). */
  readonly windows: readonly WindowedEdge[];
}

/** The rows of a tenant the database does not know: revision 0, nothing in it. */
export const NO_ROWS: TenantRows = { revision: 0, roles: [], grants: [], memberships: () => undefined, windows: [] };

/** The rows as a {@link Snapshot}: memberships one pair each, by user then role in code point order. */
export function snapshotOfRows(rows: TenantRows): Snapshot {
  const memberships: Array<readonly [string, string]> = [];
  rows.memberships((user, role) => memberships.push([user, role]));
  memberships.sort(([u1, r1], [u2, r2]) => (u1 < u2 ? -1 : u1 > u2 ? 1 : r1 < r2 ? -1 : r1 > r2 ? 1 : 0));
  return { revision: rows.revision, roles: rows.roles, grants: rows.grants, memberships, windows: rows.windows };
}

/** The parts of a snapshot's graph (see {@link buildFromRows}). */
export function buildFromSnapshot(s: Snapshot): GraphParts {
  const memberships: Memberships = (visit) => {
    for (const [user, role] of s.memberships) visit(user, role);
  };
  return buildFromRows(s.roles, s.grants, memberships, s.windows);
}

/**
 * Builds the parts of a graph in bulk: each relation is counted, laid out once and filled, with
 * no per-row insert. Users are interned in name order, so appending them to their roles in id
 * order leaves every role's members sorted by name without comparing a name. Grants and
 * memberships naming an unknown role are ignored, as the changes would be.
 */
export function buildFromRows(
  roles: Snapshot['roles'],
  grants: Snapshot['grants'],
  memberships: Memberships,
  windows: readonly WindowedEdge[] = [],
): GraphParts {
  const parts = { ...emptyParts(), windows };
  const { roleNames, descriptions } = parts;
  for (const [role, description] of roles) {
    if (roleNames.id(role) !== undefined) continue;
    descriptions[roleNames.intern(role)] = description;
  }
  buildGrants(parts, grants);
  buildMemberships(parts, memberships);
  return parts;
}

/**
 * Memberships as a database can aggregate them: one row per user with its roles joined by
 * `separator`, a character no name may hold (docs/api.md §4). Far fewer rows and strings to make
 * than one row per membership.
 */
export function groupedMemberships(rows: ReadonlyArray<readonly [user: string, roles: string]>, separator: string): Memberships {
  return (visit) => {
    for (const [user, roles] of rows) {
      for (let start = 0; ;) {
        const end = roles.indexOf(separator, start);
        visit(user, end === -1 ? roles.slice(start) : roles.slice(start, end));
        if (end === -1) break;
        start = end + 1;
      }
    }
  };
}

/**
 * Memberships as one text: a line per user, `user<sep>role<sep>role…`, lines joined by `lineSep`;
 * neither separator may be in a name (docs/api.md §4). One value to carry instead of a row per
 * membership.
 */
export function joinedMemberships(text: string, lineSep: string, sep: string): Memberships {
  return (visit) => {
    for (let at = 0; at < text.length;) {
      let lineEnd = text.indexOf(lineSep, at);
      if (lineEnd === -1) lineEnd = text.length;
      let end = text.indexOf(sep, at);
      if (end !== -1 && end < lineEnd) {
        const user = text.slice(at, end);
        do {
          const start = end + 1;
          end = text.indexOf(sep, start);
          if (end === -1 || end > lineEnd) end = lineEnd;
          visit(user, text.slice(start, end));
        } while (end < lineEnd);
      }
      at = lineEnd + 1;
    }
  };
}

/** A copy of `a` with twice the room. */
function doubled(a: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
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

function buildMemberships(parts: GraphParts, memberships: Memberships): void {
  const { roleNames, userNames, rolesOfUser, membersOfRole } = parts;
  let userOf = new Uint32Array(1024);
  let roleOf = new Uint32Array(1024);
  let n = 0;
  // Stores send the rows by user: a user's rows come together and are interned once.
  let lastUser: string | undefined;
  let lastId = 0;
  memberships((user, role) => {
    const r = roleNames.id(role);
    if (r === undefined) return;
    if (user !== lastUser) {
      lastId = userNames.intern(user);
      lastUser = user;
    }
    if (n === userOf.length) {
      userOf = doubled(userOf);
      roleOf = doubled(roleOf);
    }
    roleOf[n] = r;
    userOf[n++] = lastId;
  });
  fill(rolesOfUser, userNames.idEnd, userOf, roleOf, n);
  fillMembers(membersOfRole, rolesOfUser, userNames, roleNames.idEnd);
}

/** Per role, its members sorted by name, laid out from every user's roles. */
function fillMembers(membersOfRole: Adjacency, rolesOfUser: Adjacency, userNames: NameTable<UserId>, roles: number): void {
  const perRole = new Uint32Array(roles);
  for (let i = 0; i < userNames.idEnd; i++) forEachRole(rolesOfUser, i, (r) => (perRole[r] = (perRole[r] as number) + 1));
  membersOfRole.reserve(perRole);
  // Appending the users in name order leaves every role's members sorted by name.
  for (const u of usersByName(userNames)) forEachRole(rolesOfUser, u, (r) => membersOfRole.push(r, u));
}

/** Per role over `roles` roles, its members sorted by name: the relation the users' roles imply. */
export function membersByRole(rolesOfUser: Adjacency, userNames: NameTable<UserId>, roles: number): Adjacency {
  const membersOfRole = new Adjacency();
  fillMembers(membersOfRole, rolesOfUser, userNames, roles);
  return membersOfRole;
}

/** Per permission over `perms` permissions, its roles: the relation the roles' permissions imply. */
export function rolesByPermission(permsOfRole: Adjacency, roles: number, perms: number): Adjacency {
  let n = 0;
  for (let r = 0; r < roles; r++) n += permsOfRole.countOf(r);
  const permOf = new Uint32Array(n);
  const roleOf = new Uint32Array(n);
  n = 0;
  for (let r = 0; r < roles; r++) {
    for (let i = 0; i < permsOfRole.countOf(r); i++) {
      permOf[n] = permsOfRole.at(r, i);
      roleOf[n++] = r;
    }
  }
  const rolesOfPerm = new Adjacency();
  fill(rolesOfPerm, perms, permOf, roleOf, n);
  return rolesOfPerm;
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
