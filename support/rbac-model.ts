/**
 * The reference model of one client's RBAC data: what every read route must answer after a given
 * sequence of committed writes. The property test drives it write by write; the durability,
 * cluster and workflow tests record what the service acknowledged in it; the unit tests of the
 * graph replay random changes through it; the AuthZEN model (authzen-model.ts) reads it; the
 * benchmarks build it from their seeded changes and check sampled answers of the server against it.
 */
import type { Change, Snapshot } from '../src/authz/changes.ts';

export interface RoleState {
  description: string;
  perms: Set<string>;
  members: Set<string>;
}

/** Binary (code unit) order, as the service sorts its lists. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Distinct, in binary (code unit) order. */
export const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort(byCodePoint);

export class RbacModel {
  readonly roles = new Map<string, RoleState>();
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
    if (c.op === 'role.delete') this.roles.delete(c.role);
    else if (c.op === 'permission.grant') state.perms.add(c.permission);
    else if (c.op === 'permission.revoke') state.perms.delete(c.permission);
    else if (c.op === 'membership.add') state.members.add(c.user);
    else state.members.delete(c.user);
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
    };
  }

  // ---- names, sorted ----

  roleNames(): string[] {
    return sorted(this.roles.keys());
  }
  /** Every user who is a member of some role. */
  userNames(): string[] {
    return sorted([...this.roles.values()].flatMap((s) => [...s.members]));
  }
  /** Every permission granted to some role. */
  permissionNames(): string[] {
    return sorted([...this.roles.values()].flatMap((s) => [...s.perms]));
  }
  userRoleNames(user: string): string[] {
    return sorted([...this.roles].filter(([, s]) => s.members.has(user)).map(([r]) => r));
  }
  userPermissionNames(user: string): string[] {
    return sorted(this.userRoleNames(user).flatMap((r) => [...(this.roles.get(r) as RoleState).perms]));
  }
  /** The roles granted `perm`. */
  roleNamesWith(perm: string): string[] {
    return sorted([...this.roles].filter(([, s]) => s.perms.has(perm)).map(([r]) => r));
  }
  /** The users holding `perm` through some role. */
  userNamesWith(perm: string): string[] {
    return sorted([...this.roles.values()].filter((s) => s.perms.has(perm)).flatMap((s) => [...s.members]));
  }
  hasPermission(user: string, perm: string): boolean {
    for (const s of this.roles.values()) if (s.members.has(user) && s.perms.has(perm)) return true;
    return false;
  }

  // ---- the read routes' data, as the wire carries it ----

  roleList(): Array<{ role: string; description: string }> {
    return this.roleNames().map((role) => ({ role, description: (this.roles.get(role) as RoleState).description }));
  }
  rolePermissions(role: string): Array<{ name: string }> {
    return sorted((this.roles.get(role) as RoleState).perms).map((name) => ({ name }));
  }
  members(role: string): Array<{ user: string }> {
    return sorted((this.roles.get(role) as RoleState).members).map((user) => ({ user }));
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
