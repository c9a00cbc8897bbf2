/**
 * The reference model of one client's RBAC data: what every read route must answer after a given
 * sequence of committed writes. The property test drives it write by write; the benchmarks build
 * it from their seeded changes and check sampled answers of the server against it.
 */
import type { Change } from '../../src/authz/changes.ts';

export interface RoleState {
  description: string;
  perms: Set<string>;
  members: Set<string>;
}

/** Binary (code unit) order, as the service sorts its lists. */
export const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

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

  roleList(): Array<{ role: string; description: string }> {
    return sorted(this.roles.keys()).map((role) => ({ role, description: (this.roles.get(role) as RoleState).description }));
  }
  rolePermissions(role: string): Array<{ name: string }> {
    return sorted((this.roles.get(role) as RoleState).perms).map((name) => ({ name }));
  }
  members(role: string): Array<{ user: string }> {
    return sorted((this.roles.get(role) as RoleState).members).map((user) => ({ user }));
  }
  userRoleNames(user: string): string[] {
    return sorted([...this.roles].filter(([, s]) => s.members.has(user)).map(([r]) => r));
  }
  userRoles(user: string): Array<{ role: string }> {
    return this.userRoleNames(user).map((role) => ({ role }));
  }
  userPermissions(user: string): Array<{ name: string }> {
    const out: string[] = [];
    for (const r of this.userRoleNames(user)) out.push(...(this.roles.get(r) as RoleState).perms);
    return sorted(out).map((name) => ({ name }));
  }
  whichRolesCan(perm: string): Array<{ role: string }> {
    return sorted([...this.roles].filter(([, s]) => s.perms.has(perm)).map(([r]) => r)).map((role) => ({ role }));
  }
  whichUsersCan(perm: string): Array<{ user: string }> {
    const out: string[] = [];
    for (const s of this.roles.values()) if (s.perms.has(perm)) out.push(...s.members);
    return sorted(out).map((user) => ({ user }));
  }
  hasPermission(user: string, perm: string): boolean {
    for (const s of this.roles.values()) if (s.members.has(user) && s.perms.has(perm)) return true;
    return false;
  }
}
