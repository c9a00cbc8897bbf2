import { Interner, type PermId, type RoleId, type UserId } from './ids.ts';
import type { Change, Snapshot } from './changes.ts';
import { HolderIndex } from './holders.ts';
import { ResourceIndex } from './resources.ts';

/** Result of applying a change: `applied`, or why it was not. */
export type ApplyResult = 'applied' | 'stale' | 'gap';

// Rough per-item costs in bytes (V8 Map/Set entries, arrays, string headers). The estimate only
// has to be proportional: it bounds the cache, it is not an accounting.
const BASE_BYTES = 1024;
const ROLE_BYTES = 360;
const PERM_BYTES = 200;
const USER_BYTES = 200;
const EDGE_BYTES = 64;

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The permission graph of one tenant at one revision. Pure and synchronous: every read route is
 * answered from here. Lists come back sorted by code point (names are ASCII, so UTF-16 order is
 * code-point order) and are memoised until the next change.
 */
export class TenantGraph {
  #revision: number;
  readonly #roles = new Interner<RoleId>();
  readonly #perms = new Interner<PermId>();
  readonly #users = new Interner<UserId>();
  readonly #description: Array<string | undefined> = [];
  readonly #rolePerms: Array<Set<PermId> | undefined> = [];
  readonly #roleUsers: Array<Set<UserId> | undefined> = [];
  readonly #permRoles: Array<Set<RoleId> | undefined> = [];
  /** Per user, the roles as a plain array: the check loop iterates it without an iterator. */
  readonly #userRoles: Array<RoleId[] | undefined> = [];
  /** The resource ids named by granted `t:i:a` permissions, per type (CONTRACT.md §11.4). */
  readonly #resources = new ResourceIndex();
  /** Per permission, the users holding it (through any role), sorted. */
  readonly #holders = new HolderIndex((u) => this.#users.name(u));
  #edges = 0;
  #nameBytes = 0;
  #memo = new Map<string, readonly string[]>();

  constructor(revision = 0) {
    this.#revision = revision;
  }

  static fromSnapshot(s: Snapshot): TenantGraph {
    const g = new TenantGraph(s.revision);
    for (const [role, description] of s.roles) g.#createRole(role, description);
    for (const [role, permission] of s.grants) g.#grant(role, permission);
    for (const [user, role] of s.memberships) g.#addMember(user, role);
    return g;
  }

  /** The revision this graph reflects. */
  get revision(): number {
    return this.#revision;
  }

  /** Approximate heap size, for the cache budget. */
  get estimatedBytes(): number {
    return (
      BASE_BYTES +
      this.#roles.size * ROLE_BYTES +
      this.#perms.size * PERM_BYTES +
      this.#users.size * USER_BYTES +
      this.#edges * EDGE_BYTES +
      this.#holders.entries * EDGE_BYTES +
      this.#nameBytes
    );
  }

  /**
   * Applies the change committed at `revision`. Only the next revision is applied: an older one is
   * `stale` (already reflected), a later one is a `gap` and the caller must replay or rehydrate.
   */
  apply(change: Change, revision: number): ApplyResult {
    if (revision <= this.#revision) return 'stale';
    if (revision !== this.#revision + 1) return 'gap';
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
    if (this.#memo.size > 0) this.#memo = new Map();
    return 'applied';
  }

  // ---- the hot path -------------------------------------------------------------------------

  /** Whether `user` holds `permission` through any role. Allocation-free. */
  check(user: string, permission: string): boolean {
    const u = this.#users.id(user);
    if (u === undefined) return false;
    const p = this.#perms.id(permission);
    if (p === undefined) return false;
    const roles = this.#userRoles[u];
    if (roles === undefined) return false;
    for (let i = 0; i < roles.length; i++) {
      if (this.#rolePerms[roles[i] as RoleId]?.has(p) === true) return true;
    }
    return false;
  }

  /**
   * Whether `user` holds any of up to three permissions (an AuthZEN evaluation's candidates):
   * one user look-up for all of them, allocation-free.
   */
  checkAny(user: string, a: string, b: string | undefined, c: string | undefined): boolean {
    const u = this.#users.id(user);
    if (u === undefined) return false;
    const roles = this.#userRoles[u];
    if (roles === undefined) return false;
    return this.#holds(roles, a) || (b !== undefined && this.#holds(roles, b)) || (c !== undefined && this.#holds(roles, c));
  }

  #holds(roles: readonly RoleId[], permission: string): boolean {
    const p = this.#perms.id(permission);
    if (p === undefined) return false;
    for (let i = 0; i < roles.length; i++) {
      if (this.#rolePerms[roles[i] as RoleId]?.has(p) === true) return true;
    }
    return false;
  }

  // ---- reads --------------------------------------------------------------------------------

  /** Whether the user has at least one membership (users exist only through them). */
  hasUser(user: string): boolean {
    return this.#users.id(user) !== undefined;
  }

  /** How many permissions the role has; undefined when the role does not exist. */
  permissionCount(role: string): number | undefined {
    const r = this.#roles.id(role);
    return r === undefined ? undefined : this.#rolePerms[r]?.size;
  }

  /** The ids `i` of every granted permission `t:i:x` of type `t`, sorted (the known resources of §11.4). */
  knownResources(type: string): readonly string[] {
    return this.#resources.ids(type);
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

  hasRole(role: string): boolean {
    return this.#roles.id(role) !== undefined;
  }

  /** Whether the role has the permission; undefined when the role does not exist. */
  roleHasPermission(role: string, permission: string): boolean | undefined {
    const r = this.#roles.id(role);
    if (r === undefined) return undefined;
    const p = this.#perms.id(permission);
    return p !== undefined && this.#rolePerms[r]?.has(p) === true;
  }

  /** Whether the user is a member of the role; undefined when the role does not exist. */
  isMember(user: string, role: string): boolean | undefined {
    const r = this.#roles.id(role);
    if (r === undefined) return undefined;
    const u = this.#users.id(user);
    return u !== undefined && this.#roleUsers[r]?.has(u) === true;
  }

  description(role: string): string | undefined {
    const r = this.#roles.id(role);
    return r === undefined ? undefined : this.#description[r];
  }

  /** All role names, sorted. */
  roles(): readonly string[] {
    return this.#memoised('roles', () => [...this.#roles.names()]);
  }

  /** Permissions of a role, sorted; undefined when the role does not exist. */
  rolePermissions(role: string): readonly string[] | undefined {
    const r = this.#roles.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`rp\0${role}`, () => this.#namesOf(this.#rolePerms[r], this.#perms));
  }

  /** Members of a role, sorted; undefined when the role does not exist. */
  members(role: string): readonly string[] | undefined {
    const r = this.#roles.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`m\0${role}`, () => this.#namesOf(this.#roleUsers[r], this.#users));
  }

  userRoles(user: string): readonly string[] {
    const u = this.#users.id(user);
    if (u === undefined) return [];
    return this.#memoised(`ur\0${user}`, () => this.#namesOf(this.#userRoles[u], this.#roles));
  }

  userPermissions(user: string): readonly string[] {
    const u = this.#users.id(user);
    if (u === undefined) return [];
    return this.#memoised(`up\0${user}`, () => {
      const perms = new Set<PermId>();
      for (const r of this.#userRoles[u] ?? []) for (const p of this.#rolePerms[r] ?? []) perms.add(p);
      return this.#namesOf(perms, this.#perms);
    });
  }

  whichRolesCan(permission: string): readonly string[] {
    const p = this.#perms.id(permission);
    if (p === undefined) return [];
    return this.#memoised(`wr\0${permission}`, () => this.#namesOf(this.#permRoles[p], this.#roles));
  }

  /** The users holding the permission through any role, sorted: kept up to date by every change, never rebuilt per read. */
  whichUsersCan(permission: string): readonly string[] {
    const p = this.#perms.id(permission);
    return p === undefined ? [] : this.#holders.holders(p);
  }

  // ---- internals ----------------------------------------------------------------------------

  #memoised(key: string, build: () => string[]): readonly string[] {
    let list = this.#memo.get(key);
    if (list === undefined) {
      list = build().sort(byCodePoint);
      this.#memo.set(key, list);
    }
    return list;
  }

  #namesOf<T extends number>(ids: Iterable<T> | undefined, interner: Interner<T>): string[] {
    const out: string[] = [];
    if (ids !== undefined) for (const id of ids) out.push(interner.name(id));
    return out;
  }

  #createRole(role: string, description: string): void {
    if (this.#roles.id(role) !== undefined) return;
    const r = this.#roles.intern(role);
    this.#description[r] = description;
    this.#rolePerms[r] = new Set();
    this.#roleUsers[r] = new Set();
    this.#nameBytes += 2 * (role.length + description.length);
  }

  #deleteRole(role: string): void {
    const r = this.#roles.id(role);
    if (r === undefined) return;
    for (const p of this.#rolePerms[r] ?? []) this.#unlinkGrant(r, p);
    for (const u of this.#roleUsers[r] ?? []) this.#unlinkMember(u, r);
    this.#nameBytes -= 2 * (role.length + (this.#description[r] ?? '').length);
    this.#description[r] = undefined;
    this.#rolePerms[r] = undefined;
    this.#roleUsers[r] = undefined;
    this.#roles.release(r);
  }

  #grant(role: string, permission: string): void {
    const r = this.#roles.id(role);
    if (r === undefined) return;
    const isNew = this.#perms.id(permission) === undefined;
    const p = this.#perms.intern(permission);
    if (isNew) {
      this.#permRoles[p] = new Set();
      this.#nameBytes += 2 * permission.length;
      this.#resources.add(permission);
    }
    const set = this.#rolePerms[r];
    if (set === undefined || set.has(p)) return;
    set.add(p);
    this.#permRoles[p]?.add(r);
    this.#edges++;
    const members = this.#roleUsers[r];
    if (members !== undefined) this.#holders.adjust(p, members, 1, members.size);
  }

  #revoke(role: string, permission: string): void {
    const r = this.#roles.id(role);
    const p = this.#perms.id(permission);
    if (r === undefined || p === undefined || this.#rolePerms[r]?.delete(p) !== true) return;
    this.#unlinkGrant(r, p, false);
  }

  /** Removes the permission→role side of a grant, and the permission when nothing grants it. */
  #unlinkGrant(r: RoleId, p: PermId, fromRole = true): void {
    if (fromRole) this.#rolePerms[r]?.delete(p);
    const roles = this.#permRoles[p];
    roles?.delete(r);
    this.#edges--;
    const members = this.#roleUsers[r];
    if (members !== undefined) this.#holders.adjust(p, members, -1, members.size);
    if (roles !== undefined && roles.size === 0) {
      const name = this.#perms.name(p);
      this.#nameBytes -= 2 * name.length;
      this.#resources.remove(name);
      this.#holders.drop(p);
      this.#permRoles[p] = undefined;
      this.#perms.release(p);
    }
  }

  #addMember(user: string, role: string): void {
    const r = this.#roles.id(role);
    if (r === undefined) return;
    const isNew = this.#users.id(user) === undefined;
    const u = this.#users.intern(user);
    if (isNew) {
      this.#userRoles[u] = [];
      this.#nameBytes += 2 * user.length;
    }
    const set = this.#roleUsers[r];
    if (set === undefined || set.has(u)) return;
    set.add(u);
    this.#userRoles[u]?.push(r);
    this.#edges++;
    this.#holdersOfRole(r, u, 1);
  }

  /** `u` gained or lost role `r`: the same for every permission of `r`. */
  #holdersOfRole(r: RoleId, u: UserId, delta: 1 | -1): void {
    const perms = this.#rolePerms[r];
    if (perms === undefined) return;
    for (const p of perms) this.#holders.adjust(p, [u], delta, perms.size);
  }

  #removeMember(user: string, role: string): void {
    const r = this.#roles.id(role);
    const u = this.#users.id(user);
    if (r === undefined || u === undefined || this.#roleUsers[r]?.has(u) !== true) return;
    this.#unlinkMember(u, r);
  }

  /** Removes a membership from both sides, and the user when it has no role left. */
  #unlinkMember(u: UserId, r: RoleId): void {
    this.#holdersOfRole(r, u, -1);
    this.#roleUsers[r]?.delete(u);
    const roles = this.#userRoles[u];
    this.#edges--;
    if (roles === undefined) return;
    const i = roles.indexOf(r);
    if (i >= 0) {
      roles[i] = roles[roles.length - 1] as RoleId;
      roles.pop();
    }
    if (roles.length === 0) {
      this.#nameBytes -= 2 * this.#users.name(u).length;
      this.#userRoles[u] = undefined;
      this.#users.release(u);
    }
  }
}
