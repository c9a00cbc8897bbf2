import type { PermId, RoleId, UserId } from './ids.ts';
import { windowBetween, windowOf, type Change, type Window } from './changes.ts';
import type { Adjacency } from './adjacency.ts';
import type { NameTable } from './name-table.ts';
import type { ListMemo } from './list-memo.ts';
import { memberPosition } from './members.ts';
import { membersByRole, rolesByPermission, type AdoptedParts } from './snapshot-build.ts';
import { EdgeWindows, type MicroClock } from './windows.ts';

/** The lists of a graph that outlive a change, which its edits forget when they no longer hold. */
export interface KeptLists {
  /** Per permission, its holders: forgotten when they may have changed. */
  readonly holders: ListMemo<PermId>;
  /** Per resource type, its known ids: forgotten when a permission appears or goes. */
  readonly resources: ListMemo<string>;
}

/**
 * The names and relations of one tenant graph, and the edits that keep both sides of each
 * relation, and the edges' windows, in step. {@link TenantGraph} answers the reads.
 */
export class GraphRelations {
  readonly userNames: NameTable<UserId>;
  readonly roleNames: NameTable<RoleId>;
  readonly permNames: NameTable<PermId>;
  readonly rolesOfUser: Adjacency;
  readonly permsOfRole: Adjacency;
  readonly descriptions: Array<string | undefined>;
  /** Per role, its members sorted by name; see {@link AdoptedParts}. */
  #members: Adjacency | undefined;
  /** Per permission, its roles; see {@link AdoptedParts}. */
  #rolesByPerm: Adjacency | undefined;
  /** The windows of the edges that have one; undefined while none has (most graphs). */
  windows: EdgeWindows | undefined;
  readonly #clock: MicroClock;
  readonly #kept: KeptLists;

  constructor(parts: AdoptedParts, clock: MicroClock, kept: KeptLists) {
    this.userNames = parts.userNames;
    this.roleNames = parts.roleNames;
    this.permNames = parts.permNames;
    this.rolesOfUser = parts.rolesOfUser;
    this.#members = parts.membersOfRole;
    this.permsOfRole = parts.permsOfRole;
    this.#rolesByPerm = parts.rolesOfPerm;
    this.descriptions = parts.descriptions;
    this.#clock = clock;
    this.#kept = kept;
    for (const e of parts.windows) {
      const r = this.roleNames.id(e.role);
      const x = e.kind === 'permission' ? this.permNames.id(e.permission) : this.userNames.id(e.user);
      if (r === undefined || x === undefined) continue;
      if (e.kind === 'permission') this.#timed().setGrant(r, x as PermId, e);
      else this.#timed().setMember(r, x as UserId, e);
    }
  }

  get membersOfRole(): Adjacency {
    return (this.#members ??= membersByRole(this.rolesOfUser, this.userNames, this.roleNames.idEnd));
  }

  get rolesOfPerm(): Adjacency {
    return (this.#rolesByPerm ??= rolesByPermission(this.permsOfRole, this.roleNames.idEnd, this.permNames.idEnd));
  }

  /** The relations that exist (a small graph's reverse ones may be left out until needed), for the memory estimate. */
  get present(): ReadonlyArray<NameTable<number> | Adjacency | undefined> {
    return [this.userNames, this.roleNames, this.permNames, this.rolesOfUser, this.#members, this.permsOfRole, this.#rolesByPerm];
  }

  /** Applies one committed change (docs/api.md §5, §12.1). */
  apply(change: Change): void {
    // A change patches both sides of a relation: a side left out must be made from the other first.
    this.#members ??= this.membersOfRole;
    this.#rolesByPerm ??= this.rolesOfPerm;
    this.#edit(change);
    // The last window went: the check loop is the one of a graph without windows again.
    if (this.windows?.size === 0) this.windows = undefined;
  }

  #edit(change: Change): void {
    switch (change.op) {
      case 'role.create':
        return this.#createRole(change.role, change.description);
      case 'role.delete':
        return this.#deleteRole(change.role);
      case 'permission.grant':
      case 'permission.window':
        return this.#grant(change.role, change.permission, windowOf(change));
      case 'permission.revoke':
        return this.#revoke(change.role, change.permission);
      case 'permission.activate':
      case 'permission.expire':
        return this.#passGrantBound(change);
      case 'membership.add':
      case 'membership.window':
        return this.#addMember(change.user, change.role, windowOf(change));
      case 'membership.remove':
        return this.#removeMember(change.user, change.role);
      case 'membership.activate':
      case 'membership.expire':
        return this.#passMemberBound(change);
    }
  }

  #timed(): EdgeWindows {
    return (this.windows ??= new EdgeWindows(this.#clock));
  }

  /** The holders of every permission of role `r` may have changed. */
  #forgetHoldersOfRole(r: RoleId): void {
    const rp = this.permsOfRole;
    for (let i = 0; i < rp.countOf(r); i++) this.#kept.holders.delete(rp.at(r, i) as PermId);
  }

  #createRole(role: string, description: string): void {
    if (this.roleNames.id(role) !== undefined) return;
    const r = this.roleNames.intern(role);
    this.permsOfRole.ensureNodes(this.roleNames.idEnd);
    this.membersOfRole.ensureNodes(this.roleNames.idEnd);
    this.descriptions[r] = description;
  }

  #deleteRole(role: string): void {
    const r = this.roleNames.id(role);
    if (r === undefined) return;
    this.#forgetHoldersOfRole(r);
    for (const p of this.permsOfRole.copyOf(r)) this.#unlinkGrant(r, p as PermId);
    for (const u of this.membersOfRole.copyOf(r)) this.#unlinkMember(u as UserId, r);
    this.permsOfRole.clear(r);
    this.membersOfRole.clear(r);
    this.descriptions[r] = undefined;
    this.roleNames.release(r);
    if (this.roleNames.size > 0) return;
    // The last role went, and every grant and membership with it: give the memory back.
    this.roleNames.reset();
    this.permsOfRole.reset();
    this.membersOfRole.reset();
    this.descriptions.length = 0;
  }

  /** Grants (or, when granted already, sets the window of) role → permission. */
  #grant(role: string, permission: string, window: Window | undefined): void {
    const r = this.roleNames.id(role);
    if (r === undefined) return;
    let p = this.permNames.id(permission);
    if (p === undefined) {
      p = this.permNames.intern(permission);
      this.rolesOfPerm.ensureNodes(this.permNames.idEnd);
      this.#kept.resources.clear();
    }
    if (this.permsOfRole.insertSorted(r, p)) this.rolesOfPerm.insertSorted(p, r);
    if (window !== undefined || this.windows?.grantWindow(r, p) !== undefined) this.#timed().setGrant(r, p, window);
    this.#kept.holders.delete(p);
  }

  #revoke(role: string, permission: string): void {
    const r = this.roleNames.id(role);
    const p = this.permNames.id(permission);
    if (r === undefined || p === undefined || !this.permsOfRole.removeSorted(r, p)) return;
    this.#unlinkGrant(r, p);
  }

  /** A grant's `notBefore` or `expiresAt` passed: dropped, or the grant with it; nothing when its window was replaced since. */
  #passGrantBound(change: Extract<Change, { op: 'permission.activate' | 'permission.expire' }>): void {
    const r = this.roleNames.id(change.role);
    const p = this.permNames.id(change.permission);
    const w = r === undefined || p === undefined ? undefined : this.windows?.grantWindow(r, p);
    if (w === undefined) return;
    if (change.op === 'permission.expire') {
      if (w.expiresAt === change.expiresAt) this.#revoke(change.role, change.permission);
    } else if (w.notBefore === change.notBefore) this.#timed().setGrant(r as RoleId, p as PermId, windowBetween(undefined, w.expiresAt));
  }

  /** Removes the permission → role side of a grant (and its window), and the permission when nothing grants it. */
  #unlinkGrant(r: RoleId, p: PermId): void {
    this.windows?.setGrant(r, p, undefined);
    this.rolesOfPerm.removeSorted(p, r);
    this.#kept.holders.delete(p);
    if (this.rolesOfPerm.countOf(p) !== 0) return;
    this.rolesOfPerm.clear(p);
    this.permNames.release(p);
    if (this.permNames.size === 0) {
      this.permNames.reset();
      this.rolesOfPerm.reset();
    }
    this.#kept.resources.clear();
  }

  /** Adds (or, when a member already, sets the window of) user → role. */
  #addMember(user: string, role: string, window: Window | undefined): void {
    const r = this.roleNames.id(role);
    if (r === undefined) return;
    let u = this.userNames.id(user);
    if (u === undefined) {
      u = this.userNames.intern(user);
      this.rolesOfUser.ensureNodes(this.userNames.idEnd);
    }
    if (this.rolesOfUser.insertSorted(u, r)) this.membersOfRole.insertAt(r, memberPosition(this.membersOfRole, this.userNames, r, u), u);
    if (window !== undefined || this.windows?.memberWindow(r, u) !== undefined) this.#timed().setMember(r, u, window);
    this.#forgetHoldersOfRole(r);
  }

  #removeMember(user: string, role: string): void {
    const r = this.roleNames.id(role);
    const u = this.userNames.id(user);
    if (r === undefined || u === undefined || !this.rolesOfUser.has(u, r)) return;
    this.membersOfRole.removeAt(r, memberPosition(this.membersOfRole, this.userNames, r, u));
    this.#unlinkMember(u, r);
    this.#forgetHoldersOfRole(r);
  }

  /** A membership's `notBefore` or `expiresAt` passed: dropped, or the membership with it; nothing when its window was replaced since. */
  #passMemberBound(change: Extract<Change, { op: 'membership.activate' | 'membership.expire' }>): void {
    const r = this.roleNames.id(change.role);
    const u = this.userNames.id(change.user);
    const w = r === undefined || u === undefined ? undefined : this.windows?.memberWindow(r, u);
    if (w === undefined) return;
    if (change.op === 'membership.expire') {
      if (w.expiresAt === change.expiresAt) this.#removeMember(change.user, change.role);
    } else if (w.notBefore === change.notBefore) this.#timed().setMember(r as RoleId, u as UserId, windowBetween(undefined, w.expiresAt));
  }

  /** Removes the user → role side of a membership (and its window), and the user when it has no role left. */
  #unlinkMember(u: UserId, r: RoleId): void {
    this.windows?.setMember(r, u, undefined);
    this.rolesOfUser.removeSorted(u, r);
    if (this.rolesOfUser.countOf(u) !== 0) return;
    this.rolesOfUser.clear(u);
    this.userNames.release(u);
    if (this.userNames.size === 0) {
      this.userNames.reset();
      this.rolesOfUser.reset();
    }
  }
}
