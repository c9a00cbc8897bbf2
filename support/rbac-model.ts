/**
 * The reference model of one client's RBAC data: what every read route must answer after a given
 * sequence of committed writes. The property test drives it write by write; the durability,
 * cluster and workflow tests record what the service acknowledged in it; the unit tests of the
 * graph replay random changes through it; the AuthZEN model (authzen-model.ts) reads it; the
 * benchmarks build it from their seeded changes and check sampled answers of the server against it.
 */
import { isOpen, windowBetween, windowOf, type Change, type Snapshot, type Window, type WindowedEdge } from '../src/authz/changes.ts';

export interface RoleState {
  description: string;
  perms: Set<string>;
  members: Set<string>;
}

/** Binary (code unit) order, as the service sorts its lists. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Distinct, in binary (code unit) order. */
export const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort(byCodePoint);

/** The key of an edge's window in the model. */
const grantKey = (role: string, permission: string): string => `p\0${role}\0${permission}`;
const memberKey = (user: string, role: string): string => `m\0${role}\0${user}`;

export class RbacModel {
  /** Every role with its grants and members, active or not (docs/api.md §12.1). */
  readonly roles = new Map<string, RoleState>();
  /** The windows of the edges that have one, by {@link grantKey} / {@link memberKey}. */
  readonly windows = new Map<string, Window>();
  /** What time it is (microseconds) for the reads: only edges whose window is open then count. */
  clock: () => number = () => Date.now() * 1000;
  revision = 0;

  /** The model after `changes`, each committed at the next revision. */
  static of(changes: Iterable<Change>): RbacModel {
    const m = new RbacModel();
    for (const c of changes) m.apply(c);
    return m;
  }

  /** Applies a committed change (revision + 1); a change the service would refuse is a bug of the caller. */
  apply(c: Change): void {
    this.revision++;
    if (c.op === 'role.create') {
      this.roles.set(c.role, { description: c.description, perms: new Set(), members: new Set() });
      return;
    }
    const state = this.roles.get(c.role);
    if (state === undefined) throw new Error(`${c.op} on ${c.role}, which the model does not hold`);
    switch (c.op) {
      case 'role.delete':
        for (const p of state.perms) this.windows.delete(grantKey(c.role, p));
        for (const u of state.members) this.windows.delete(memberKey(u, c.role));
        return void this.roles.delete(c.role);
      case 'permission.grant':
      case 'permission.window':
        state.perms.add(c.permission);
        return this.#setWindow(grantKey(c.role, c.permission), windowOf(c));
      case 'membership.add':
      case 'membership.window':
        state.members.add(c.user);
        return this.#setWindow(memberKey(c.user, c.role), windowOf(c));
      case 'permission.revoke':
        this.windows.delete(grantKey(c.role, c.permission));
        return void state.perms.delete(c.permission);
      case 'membership.remove':
        this.windows.delete(memberKey(c.user, c.role));
        return void state.members.delete(c.user);
      case 'permission.activate':
      case 'permission.expire':
        return this.#passBound(grantKey(c.role, c.permission), c, () => state.perms.delete(c.permission));
      case 'membership.activate':
      case 'membership.expire':
        return this.#passBound(memberKey(c.user, c.role), c, () => state.members.delete(c.user));
    }
  }

  #setWindow(key: string, w: Window | undefined): void {
    if (w === undefined) this.windows.delete(key);
    else this.windows.set(key, w);
  }

  /** A bound passed: dropped (activate) or the edge with it (expire), only while the edge still has that very bound. */
  #passBound(key: string, c: Extract<Change, { op: `${string}.activate` | `${string}.expire` }>, remove: () => void): void {
    const w = this.windows.get(key);
    if (w === undefined) return;
    if ('expiresAt' in c) {
      if (w.expiresAt !== c.expiresAt) return;
      this.windows.delete(key);
      remove();
    } else if (w.notBefore === c.notBefore) this.#setWindow(key, windowBetween(undefined, w.expiresAt));
  }

  /** The role's permissions active now (per {@link clock}). */
  activePerms(role: string): string[] {
    const s = this.roles.get(role);
    if (s === undefined) return [];
    const now = this.clock();
    return [...s.perms].filter((p) => isOpen(this.windows.get(grantKey(role, p)), now));
  }

  /** The role's members active now. */
  activeMembers(role: string): string[] {
    const s = this.roles.get(role);
    if (s === undefined) return [];
    const now = this.clock();
    return [...s.members].filter((u) => isOpen(this.windows.get(memberKey(u, role)), now));
  }

  /** The window of an edge, when it has one. */
  grantWindow(role: string, permission: string): Window | undefined {
    return this.windows.get(grantKey(role, permission));
  }
  memberWindow(user: string, role: string): Window | undefined {
    return this.windows.get(memberKey(user, role));
  }

  /**
   * Applies a change as the graph takes any change it is given (src/authz/graph.ts): creating a
   * role it holds, or changing one it does not hold, changes nothing but the revision.
   */
  applyLeniently(c: Change): void {
    const held = this.roles.has(c.role);
    if (c.op === 'role.create' ? held : !held) this.revision++;
    else this.apply(c);
  }

  /** The model as a snapshot of the store (roles, grants and memberships in the order they came). */
  snapshot(): Snapshot {
    const all = [...this.roles];
    return {
      revision: this.revision,
      roles: all.map(([role, s]) => [role, s.description] as const),
      grants: all.flatMap(([role, s]) => [...s.perms].map((p) => [role, p] as const)),
      memberships: all.flatMap(([role, s]) => [...s.members].map((u) => [u, role] as const)),
      windows: [...this.windows].map(([key, w]): WindowedEdge => {
        const [kind, role, other] = key.split('\0') as [string, string, string];
        return kind === 'p' ? { kind: 'permission', role, permission: other, ...w } : { kind: 'membership', role, user: other, ...w };
      }),
    };
  }

  // ---- names, sorted (edges active now) ----

  roleNames(): string[] {
    return sorted(this.roles.keys());
  }
  /** Every user who is an active member of some role. */
  userNames(): string[] {
    return sorted([...this.roles.keys()].flatMap((r) => this.activeMembers(r)));
  }
  /** Every permission actively granted to some role. */
  permissionNames(): string[] {
    return sorted([...this.roles.keys()].flatMap((r) => this.activePerms(r)));
  }
  userRoleNames(user: string): string[] {
    return sorted([...this.roles].filter(([r, s]) => s.members.has(user) && this.#open(memberKey(user, r))).map(([r]) => r));
  }
  userPermissionNames(user: string): string[] {
    return sorted(this.userRoleNames(user).flatMap((r) => this.activePerms(r)));
  }
  /** The roles actively granted `perm`. */
  roleNamesWith(perm: string): string[] {
    return sorted([...this.roles].filter(([r, s]) => s.perms.has(perm) && this.#open(grantKey(r, perm))).map(([r]) => r));
  }
  /** The users holding `perm` through some role, now. */
  userNamesWith(perm: string): string[] {
    return sorted(this.roleNamesWith(perm).flatMap((r) => this.activeMembers(r)));
  }
  hasPermission(user: string, perm: string): boolean {
    for (const [r, s] of this.roles)
      if (s.members.has(user) && s.perms.has(perm) && this.#open(memberKey(user, r)) && this.#open(grantKey(r, perm))) return true;
    return false;
  }

  /** Whether the edge of `key` is active now (no window: always). */
  #open(key: string): boolean {
    return this.windows.size === 0 || isOpen(this.windows.get(key), this.clock());
  }

  // ---- the read routes' data, as the wire carries it ----

  roleList(): Array<{ role: string; description: string }> {
    return this.roleNames().map((role) => ({ role, description: (this.roles.get(role) as RoleState).description }));
  }
  rolePermissions(role: string): Array<{ name: string }> {
    return sorted(this.activePerms(role)).map((name) => ({ name }));
  }
  members(role: string): Array<{ user: string }> {
    return sorted(this.activeMembers(role)).map((user) => ({ user }));
  }
  userRoles(user: string): Array<{ role: string }> {
    return this.userRoleNames(user).map((role) => ({ role }));
  }
  userPermissions(user: string): Array<{ name: string }> {
    return this.userPermissionNames(user).map((name) => ({ name }));
  }
  whichRolesCan(perm: string): Array<{ role: string }> {
    return this.roleNamesWith(perm).map((role) => ({ role }));
  }
  whichUsersCan(perm: string): Array<{ user: string }> {
    return this.userNamesWith(perm).map((user) => ({ user }));
  }
}
