import type { PermId, RoleId, UserId } from './ids.ts';
import type { Change } from './changes.ts';
import type { Adjacency } from './adjacency.ts';
import type { NameTable, Spelling } from './name-table.ts';
import { partsOf, type GraphImage } from './graph-image.ts';
import { estimatedBytes } from './estimate.ts';
import { ListMemo } from './list-memo.ts';
import { holdersOf, memberPosition, namesOf } from './members.ts';
import { knownResourceIds } from './resources.ts';
import { emptyParts, membersByRole, rolesByPermission, type AdoptedParts } from './snapshot-build.ts';

/** Result of applying a change: `applied`, or why it was not. */
export type ApplyResult = 'applied' | 'stale' | 'gap';

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The permission graph of one tenant at one revision. Pure and synchronous: every read route is
 * answered from here. Names are interned in three {@link NameTable}s and the relations are four
 * {@link Adjacency} buffers (user → roles, role → members sorted by name, role → permissions,
 * permission → roles; a small graph makes the second and fourth when first needed), so the
 * graph's memory is the byte length of the buffers behind them, which is what
 * {@link TenantGraph.estimatedBytes} reports. Lists come back sorted by code point (names are
 * ASCII, so UTF-16 order is code-point order) and are memoised until the next change.
 */
export class TenantGraph {
  #revision: number;
  readonly #userNames: NameTable<UserId>;
  readonly #roleNames: NameTable<RoleId>;
  readonly #permNames: NameTable<PermId>;
  readonly #rolesOfUser: Adjacency;
  /** Per role, its members sorted by name (`members`, `whichUsersCan`); see {@link AdoptedParts}. */
  #members: Adjacency | undefined;
  readonly #permsOfRole: Adjacency;
  /** Per permission, its roles; see {@link AdoptedParts}. */
  #rolesByPerm: Adjacency | undefined;
  readonly #descriptions: Array<string | undefined>;
  /** Lists derived from this revision; forgotten at the next change. */
  readonly #memo = new ListMemo<string>();
  /** Per permission, its holders' names: kept across changes that do not touch that permission. */
  readonly #holderLists = new ListMemo<PermId>();
  /** Per resource type, its known ids: kept until a permission appears or disappears. */
  readonly #resourceLists = new ListMemo<string>();

  /** An empty graph at `revision`, or one over `parts` already built (see snapshot-build.ts). */
  constructor(revision = 0, parts: AdoptedParts = emptyParts()) {
    this.#revision = revision;
    this.#userNames = parts.userNames;
    this.#roleNames = parts.roleNames;
    this.#permNames = parts.permNames;
    this.#rolesOfUser = parts.rolesOfUser;
    this.#members = parts.membersOfRole;
    this.#permsOfRole = parts.permsOfRole;
    this.#rolesByPerm = parts.rolesOfPerm;
    this.#descriptions = parts.descriptions;
  }

  get #membersOfRole(): Adjacency {
    return (this.#members ??= membersByRole(this.#rolesOfUser, this.#userNames, this.#roleNames.idEnd));
  }

  get #rolesOfPerm(): Adjacency {
    return (this.#rolesByPerm ??= rolesByPermission(this.#permsOfRole, this.#roleNames.idEnd, this.#permNames.idEnd));
  }

  /** The graph over an image's buffers, as a pool thread built it (no copy, no rebuild). */
  static fromImage(image: GraphImage): TenantGraph {
    return new TenantGraph(image.revision, partsOf(image));
  }

  /** The revision this graph reflects. */
  get revision(): number {
    return this.#revision;
  }

  /** The graph's memory in bytes, for the cache budget (see {@link estimatedBytes}). Memoised lists are not counted. */
  get estimatedBytes(): number {
    const parts = [this.#userNames, this.#roleNames, this.#permNames, this.#rolesOfUser, this.#members, this.#permsOfRole, this.#rolesByPerm];
    return estimatedBytes(parts, this.#descriptions);
  }

  /**
   * Applies the change committed at `revision`. Only the next revision is applied: an older one is
   * `stale` (already reflected), a later one is a `gap` and the caller must replay or rehydrate.
   */
  apply(change: Change, revision: number): ApplyResult {
    if (revision <= this.#revision) return 'stale';
    if (revision !== this.#revision + 1) return 'gap';
    // A change patches both sides of a relation: a side left out must be made from the other first.
    this.#members ??= this.#membersOfRole;
    this.#rolesByPerm ??= this.#rolesOfPerm;
    switch (change.op) {
      case 'role.create':
        this.#createRole(change.role, change.description);
        break;
      case 'role.delete':
        this.#deleteRole(change.role);
        break;
      case 'permission.grant':
        this.#grant(change.role, change.permission);
        break;
      case 'permission.revoke':
        this.#revoke(change.role, change.permission);
        break;
      case 'membership.add':
        this.#addMember(change.user, change.role);
        break;
      case 'membership.remove':
        this.#removeMember(change.user, change.role);
        break;
    }
    this.#revision = revision;
    if (this.#memo.size > 0) this.#memo.clear();
    return 'applied';
  }

  // ---- the hot path -------------------------------------------------------------------------

  /** Whether `user` holds `permission` through any role. Allocation-free. */
  check(user: string, permission: string): boolean {
    const u = this.#userNames.id(user);
    if (u === undefined) return false;
    const p = this.#permNames.id(permission);
    return p !== undefined && this.#holds(u, p);
  }

  /** {@link check} of two spelled names (a path's, decoded in place): no string on the way. */
  checkSpelled(user: Spelling, permission: Spelling): boolean {
    const u = this.#userNames.idOf(user);
    if (u === undefined) return false;
    const p = this.#permNames.idOf(permission);
    return p !== undefined && this.#holds(u, p);
  }

  /**
   * Whether `user` holds any of up to three permissions (an AuthZEN evaluation's candidates, spelled
   * in buffers but for a plain first one): one user look-up for all of them, allocation-free.
   */
  checkAny(user: string, a: string | Spelling | undefined, b: Spelling | undefined, c: Spelling | undefined): boolean {
    const u = this.#userNames.id(user);
    if (u === undefined) return false;
    const pa = a === undefined ? undefined : typeof a === 'string' ? this.#permNames.id(a) : this.#permNames.idOf(a);
    if (pa !== undefined && this.#holds(u, pa)) return true;
    const pb = b === undefined ? undefined : this.#permNames.idOf(b);
    if (pb !== undefined && this.#holds(u, pb)) return true;
    const pc = c === undefined ? undefined : this.#permNames.idOf(c);
    return pc !== undefined && this.#holds(u, pc);
  }

  /** The check loop: the user's roles, each a binary search of its sorted permissions. Inlined reads of the buffers, no calls per role. */
  #holds(u: UserId, p: PermId): boolean {
    const ur = this.#rolesOfUser;
    const rp = this.#permsOfRole;
    const roles = ur.values;
    const perms = rp.values;
    const from = ur.span[2 * u] as number;
    const to = from + (ur.span[2 * u + 1] as number);
    for (let i = from; i < to; i++) {
      const r = roles[i] as number;
      let lo = rp.span[2 * r] as number;
      let hi = lo + (rp.span[2 * r + 1] as number);
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const v = perms[mid] as number;
        if (v === p) return true;
        if (v < p) lo = mid + 1;
        else hi = mid;
      }
    }
    return false;
  }

  // ---- reads --------------------------------------------------------------------------------

  /** Whether the user has at least one membership (users exist only through them). */
  hasUser(user: string): boolean {
    return this.#userNames.id(user) !== undefined;
  }

  /** How many permissions the role has; undefined when the role does not exist. */
  permissionCount(role: string): number | undefined {
    const r = this.#roleNames.id(role);
    return r === undefined ? undefined : this.#permsOfRole.countOf(r);
  }

  /** The ids `i` of every granted permission `t:i:x` of type `t`, sorted (the known resources of §11.4). */
  knownResources(type: string): readonly string[] {
    let list = this.#resourceLists.get(type);
    if (list === undefined) {
      list = knownResourceIds(this.#permNames, type);
      if (list.length > 0) this.#resourceLists.set(type, list);
    }
    return list;
  }

  /**
   * A sorted list derived from this revision, built once by `build` and kept until the next
   * change (searches page through it). `key` must name everything the list depends on.
   */
  remember(key: string, build: () => string[]): readonly string[] {
    const memoKey = `x\0${key}`;
    const known = this.#memo.get(memoKey);
    if (known !== undefined) return known;
    const list = build().sort(byCodePoint);
    // Empty answers (unknown ids, any string) are cheap to rebuild: only real ones are kept.
    if (list.length > 0) this.#memo.set(memoKey, list);
    return list;
  }

  /** Whether the role has the permission; undefined when the role does not exist. */
  roleHasPermission(role: string, permission: string): boolean | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    const p = this.#permNames.id(permission);
    return p !== undefined && this.#permsOfRole.has(r, p);
  }

  /** Whether the user is a member of the role; undefined when the role does not exist. */
  isMember(user: string, role: string): boolean | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    const u = this.#userNames.id(user);
    return u !== undefined && this.#rolesOfUser.has(u, r);
  }

  description(role: string): string | undefined {
    const r = this.#roleNames.id(role);
    return r === undefined ? undefined : this.#descriptions[r];
  }

  /** All role names, sorted. */
  roles(): readonly string[] {
    return this.#memoised('roles', () => [...this.#roleNames.ids()].map((r) => this.#roleNames.name(r)).sort(byCodePoint));
  }

  /** Permissions of a role, sorted; undefined when the role does not exist. */
  rolePermissions(role: string): readonly string[] | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`rp\0${role}`, () => namesOf(this.#permsOfRole.copyOf(r), this.#permNames).sort(byCodePoint));
  }

  /** Members of a role, sorted (as they are stored); undefined when the role does not exist. */
  members(role: string): readonly string[] | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`m\0${role}`, () => namesOf(this.#membersOfRole.copyOf(r), this.#userNames));
  }

  userRoles(user: string): readonly string[] {
    const u = this.#userNames.id(user);
    if (u === undefined) return [];
    return this.#memoised(`ur\0${user}`, () => namesOf(this.#rolesOfUser.copyOf(u), this.#roleNames).sort(byCodePoint));
  }

  userPermissions(user: string): readonly string[] {
    const u = this.#userNames.id(user);
    if (u === undefined) return [];
    return this.#memoised(`up\0${user}`, () => {
      const perms = new Set<PermId>();
      for (const r of this.#rolesOfUser.copyOf(u)) for (const p of this.#permsOfRole.copyOf(r)) perms.add(p as PermId);
      return namesOf(perms, this.#permNames).sort(byCodePoint);
    });
  }

  whichRolesCan(permission: string): readonly string[] {
    const p = this.#permNames.id(permission);
    if (p === undefined) return [];
    return this.#memoised(`wr\0${permission}`, () => namesOf(this.#rolesOfPerm.copyOf(p), this.#roleNames).sort(byCodePoint));
  }

  /**
   * The users holding the permission through any role, sorted: a merge of the granting roles'
   * member lists, which are kept sorted by name through every write. Kept until a change touches
   * this permission's roles or their members.
   */
  whichUsersCan(permission: string): readonly string[] {
    const p = this.#permNames.id(permission);
    if (p === undefined) return [];
    let list = this.#holderLists.get(p);
    if (list === undefined) this.#holderLists.set(p, (list = namesOf(holdersOf(p, this.#rolesOfPerm, this.#membersOfRole, this.#userNames), this.#userNames)));
    return list;
  }

  // ---- internals ----------------------------------------------------------------------------

  #memoised(key: string, build: () => string[]): readonly string[] {
    let list = this.#memo.get(key);
    if (list === undefined) this.#memo.set(key, (list = build()));
    return list;
  }

  /** The holders of every permission of role `r` may have changed. */
  #forgetHoldersOfRole(r: RoleId): void {
    if (this.#holderLists.size === 0) return;
    const rp = this.#permsOfRole;
    for (let i = 0; i < rp.countOf(r); i++) this.#holderLists.delete(rp.at(r, i) as PermId);
  }

  #createRole(role: string, description: string): void {
    if (this.#roleNames.id(role) !== undefined) return;
    const r = this.#roleNames.intern(role);
    this.#permsOfRole.ensureNodes(this.#roleNames.idEnd);
    this.#membersOfRole.ensureNodes(this.#roleNames.idEnd);
    this.#descriptions[r] = description;
  }

  #deleteRole(role: string): void {
    const r = this.#roleNames.id(role);
    if (r === undefined) return;
    this.#forgetHoldersOfRole(r);
    for (const p of this.#permsOfRole.copyOf(r)) this.#unlinkGrant(r, p as PermId);
    for (const u of this.#membersOfRole.copyOf(r)) this.#unlinkMember(u as UserId, r);
    this.#permsOfRole.clear(r);
    this.#membersOfRole.clear(r);
    this.#descriptions[r] = undefined;
    this.#roleNames.release(r);
    if (this.#roleNames.size > 0) return;
    // The last role went, and every grant and membership with it: give the memory back.
    this.#roleNames.reset();
    this.#permsOfRole.reset();
    this.#membersOfRole.reset();
    this.#descriptions.length = 0;
  }

  #grant(role: string, permission: string): void {
    const r = this.#roleNames.id(role);
    if (r === undefined) return;
    let p = this.#permNames.id(permission);
    if (p === undefined) {
      p = this.#permNames.intern(permission);
      this.#rolesOfPerm.ensureNodes(this.#permNames.idEnd);
      this.#resourceLists.clear();
    }
    if (!this.#permsOfRole.insertSorted(r, p)) return;
    this.#rolesOfPerm.insertSorted(p, r);
    this.#holderLists.delete(p);
  }

  #revoke(role: string, permission: string): void {
    const r = this.#roleNames.id(role);
    const p = this.#permNames.id(permission);
    if (r === undefined || p === undefined || !this.#permsOfRole.removeSorted(r, p)) return;
    this.#unlinkGrant(r, p);
  }

  /** Removes the permission → role side of a grant, and the permission when nothing grants it. */
  #unlinkGrant(r: RoleId, p: PermId): void {
    this.#rolesOfPerm.removeSorted(p, r);
    this.#holderLists.delete(p);
    if (this.#rolesOfPerm.countOf(p) !== 0) return;
    this.#rolesOfPerm.clear(p);
    this.#permNames.release(p);
    if (this.#permNames.size === 0) {
      this.#permNames.reset();
      this.#rolesOfPerm.reset();
    }
    this.#resourceLists.clear();
  }

  #addMember(user: string, role: string): void {
    const r = this.#roleNames.id(role);
    if (r === undefined) return;
    let u = this.#userNames.id(user);
    if (u === undefined) {
      u = this.#userNames.intern(user);
      this.#rolesOfUser.ensureNodes(this.#userNames.idEnd);
    }
    if (!this.#rolesOfUser.insertSorted(u, r)) return;
    this.#membersOfRole.insertAt(r, memberPosition(this.#membersOfRole, this.#userNames, r, u), u);
    this.#forgetHoldersOfRole(r);
  }

  #removeMember(user: string, role: string): void {
    const r = this.#roleNames.id(role);
    const u = this.#userNames.id(user);
    if (r === undefined || u === undefined || !this.#rolesOfUser.has(u, r)) return;
    this.#membersOfRole.removeAt(r, memberPosition(this.#membersOfRole, this.#userNames, r, u));
    this.#unlinkMember(u, r);
    this.#forgetHoldersOfRole(r);
  }

  /** Removes the user → role side of a membership, and the user when it has no role left. */
  #unlinkMember(u: UserId, r: RoleId): void {
    this.#rolesOfUser.removeSorted(u, r);
    if (this.#rolesOfUser.countOf(u) !== 0) return;
    this.#rolesOfUser.clear(u);
    this.#userNames.release(u);
    if (this.#userNames.size === 0) {
      this.#userNames.reset();
      this.#rolesOfUser.reset();
    }
  }
}
