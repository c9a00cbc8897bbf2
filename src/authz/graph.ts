import type { PermId, RoleId, UserId } from './ids.ts';
import { isOpen, type Change, type Window, type WindowedEdge } from './changes.ts';
import type { Adjacency } from './adjacency.ts';
import type { NameTable, Spelling } from './name-table.ts';
import { partsOf, type GraphImage } from './graph-image.ts';
import { estimatedBytes } from './estimate.ts';
import { ListMemo } from './list-memo.ts';
import { holdersOf, namesOf } from './members.ts';
import { knownResourceIds } from './resources.ts';
import { emptyParts, type AdoptedParts } from './snapshot-build.ts';
import { GraphRelations } from './graph-edits.ts';
import { wallMicros, type EdgeWindows, type MicroClock } from './windows.ts';

/** Result of applying a change: `applied`, or why it was not. */
export type ApplyResult = 'applied' | 'stale' | 'gap';

/** The window of an edge that has none. */
const PERMANENT: Window = Object.freeze({});
/** What a window costs beside the buffers, for the cache budget: a map entry and its object. */
const WINDOW_BYTES = 120;

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
  readonly #rel: GraphRelations;
  // The relations the check loop reads, held here too so that it reads them in one step.
  readonly #userNames: NameTable<UserId>;
  readonly #roleNames: NameTable<RoleId>;
  readonly #permNames: NameTable<PermId>;
  readonly #rolesOfUser: Adjacency;
  readonly #permsOfRole: Adjacency;
  /** The edges' windows (docs/api.md §12.1); undefined while no edge has one, which keeps the check loop as it is. */
  #windows: EdgeWindows | undefined;
  /** Lists derived from this revision; forgotten at the next change. */
  readonly #memo = new ListMemo<string>();
  /** Per permission, its holders' names: kept across changes that do not touch that permission. */
  readonly #holderLists = new ListMemo<PermId>();
  /** Per resource type, its known ids: kept until a permission appears or disappears. */
  readonly #resourceLists = new ListMemo<string>();

  /**
   * An empty graph at `revision`, or one over `parts` already built (see snapshot-build.ts).
   * `clock` says what time it is for the windows (a test moves it by hand).
   */
  constructor(revision = 0, parts: AdoptedParts = emptyParts(), clock: MicroClock = wallMicros) {
    this.#revision = revision;
    this.#rel = new GraphRelations(parts, clock, { holders: this.#holderLists, resources: this.#resourceLists });
    this.#userNames = parts.userNames;
    this.#roleNames = parts.roleNames;
    this.#permNames = parts.permNames;
    this.#rolesOfUser = parts.rolesOfUser;
    this.#permsOfRole = parts.permsOfRole;
    this.#windows = this.#rel.windows;
  }

  /** The graph over an image's buffers, as a pool thread built it (no copy, no rebuild). */
  static fromImage(image: GraphImage, clock: MicroClock = wallMicros): TenantGraph {
    return new TenantGraph(image.revision, partsOf(image), clock);
  }

  /** The revision this graph reflects. */
  get revision(): number {
    return this.#revision;
  }

  /** The graph's memory in bytes, for the cache budget (see {@link estimatedBytes}). Memoised lists are not counted. */
  get estimatedBytes(): number {
    return estimatedBytes(this.#rel.present, this.#rel.descriptions) + (this.#windows?.size ?? 0) * WINDOW_BYTES;
  }

  /**
   * Applies the changes of the write request committed at `revision`, in order. Only the next
   * revision is applied: an older one is `stale` (already reflected), a later one is a `gap` and
   * the caller must replay or rehydrate.
   */
  apply(changes: readonly Change[], revision: number): ApplyResult {
    if (revision <= this.#revision) return 'stale';
    if (revision !== this.#revision + 1) return 'gap';
    for (const change of changes) this.#rel.apply(change);
    this.#windows = this.#rel.windows;
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

  /**
   * The check loop: the user's roles, each a binary search of its sorted permissions. Inlined
   * reads of the buffers, no calls per role. A graph with windows takes {@link #holdsNow}.
   */
  #holds(u: UserId, p: PermId): boolean {
    if (this.#windows !== undefined) return this.#holdsNow(u, p, this.#windows);
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

  /** {@link #holds} counting only the edges active now: a role with windowed edges asks its windows, the others nothing. */
  #holdsNow(u: UserId, p: PermId, w: EdgeWindows): boolean {
    const now = w.now();
    const ur = this.#rolesOfUser;
    const from = ur.span[2 * u] as number;
    const to = from + (ur.span[2 * u + 1] as number);
    for (let i = from; i < to; i++) {
      const r = ur.values[i] as RoleId;
      const timed = w.isTimed(r);
      if (timed && !w.memberOpen(r, u, now)) continue;
      if (this.#permsOfRole.has(r, p) && (!timed || w.grantOpen(r, p, now))) return true;
    }
    return false;
  }

  // ---- edges and their windows ---------------------------------------------------------------

  /** Whether the role exists. */
  hasRole(role: string): boolean {
    return this.#roleNames.id(role) !== undefined;
  }

  /** The grant's window when it exists, active or pending (`{}`: permanent); undefined when it does not. */
  grantEdge(role: string, permission: string): Window | undefined {
    const r = this.#roleNames.id(role);
    const p = this.#permNames.id(permission);
    if (r === undefined || p === undefined || !this.#permsOfRole.has(r, p)) return undefined;
    return this.#windows?.grantWindow(r, p) ?? PERMANENT;
  }

  /** The membership's window when it exists, active or pending (`{}`: permanent); undefined when it does not. */
  memberEdge(user: string, role: string): Window | undefined {
    const r = this.#roleNames.id(role);
    const u = this.#userNames.id(user);
    if (r === undefined || u === undefined || !this.#rolesOfUser.has(u, r)) return undefined;
    return this.#windows?.memberWindow(r, u) ?? PERMANENT;
  }

  /** Whether any edge has a window (lists of edges then say theirs). */
  get hasWindows(): boolean {
    return this.#windows !== undefined;
  }

  /** Every edge with a window, by name (GET /api/windows). */
  windowedEdges(): WindowedEdge[] {
    return this.#windows?.edges(this.#roleNames, this.#userNames, this.#permNames) ?? [];
  }

  /** Every permission of the role, active or pending, sorted; [] when the role does not exist. */
  allPermissionsOf(role: string): readonly string[] {
    const r = this.#roleNames.id(role);
    return r === undefined ? [] : namesOf(this.#permsOfRole.copyOf(r), this.#permNames).sort(byCodePoint);
  }

  /** Every member of the role, active or pending, sorted; [] when the role does not exist. */
  allMembersOf(role: string): readonly string[] {
    const r = this.#roleNames.id(role);
    return r === undefined ? [] : namesOf(this.#rel.membersOfRole.copyOf(r), this.#userNames);
  }

  // ---- reads: edges active now ---------------------------------------------------------------

  /** Whether the user has at least one membership, active or not (users exist only through them). */
  hasUser(user: string): boolean {
    return this.#userNames.id(user) !== undefined;
  }

  /** How many permissions the role has (active now); undefined when the role does not exist. */
  permissionCount(role: string): number | undefined {
    return this.rolePermissions(role)?.length;
  }

  /** The ids `i` of every granted permission `t:i:x` of type `t`, sorted (the known resources of §11.4). */
  knownResources(type: string): readonly string[] {
    this.#forgetPassedWindows();
    let list = this.#resourceLists.get(type);
    if (list === undefined) {
      list = knownResourceIds(this.#permNames, type, this.#windows === undefined ? undefined : (p) => this.whichRolesCan(this.#permNames.name(p)).length > 0);
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
    const known = this.#memoFor(memoKey);
    if (known !== undefined) return known;
    const list = build().sort(byCodePoint);
    // Empty answers (unknown ids, any string) are cheap to rebuild: only real ones are kept.
    if (list.length > 0) this.#memo.set(memoKey, list);
    return list;
  }

  /** Whether the role has the permission, active now; undefined when the role does not exist. */
  roleHasPermission(role: string, permission: string): boolean | undefined {
    if (!this.hasRole(role)) return undefined;
    const w = this.grantEdge(role, permission);
    return w !== undefined && isOpen(w, this.#now());
  }

  /** Whether the user is a member of the role, active now; undefined when the role does not exist. */
  isMember(user: string, role: string): boolean | undefined {
    if (!this.hasRole(role)) return undefined;
    const w = this.memberEdge(user, role);
    return w !== undefined && isOpen(w, this.#now());
  }

  description(role: string): string | undefined {
    const r = this.#roleNames.id(role);
    return r === undefined ? undefined : this.#rel.descriptions[r];
  }

  /** All role names, sorted. */
  roles(): readonly string[] {
    return this.#memoised('roles', () => [...this.#roleNames.ids()].map((r) => this.#roleNames.name(r)).sort(byCodePoint));
  }

  /** Permissions of a role active now, sorted; undefined when the role does not exist. */
  rolePermissions(role: string): readonly string[] | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`rp\0${role}`, () =>
      namesOf(
        this.#activeOf(this.#permsOfRole, r, (p, now, w) => w.grantOpen(r, p as PermId, now)),
        this.#permNames,
      ).sort(byCodePoint),
    );
  }

  /** Members of a role active now, sorted (as they are stored); undefined when the role does not exist. */
  members(role: string): readonly string[] | undefined {
    const r = this.#roleNames.id(role);
    if (r === undefined) return undefined;
    return this.#memoised(`m\0${role}`, () =>
      namesOf(
        this.#activeOf(this.#rel.membersOfRole, r, (u, now, w) => w.memberOpen(r, u as UserId, now)),
        this.#userNames,
      ),
    );
  }

  userRoles(user: string): readonly string[] {
    const u = this.#userNames.id(user);
    if (u === undefined) return [];
    return this.#memoised(`ur\0${user}`, () =>
      namesOf(
        this.#activeOf(this.#rolesOfUser, u, (r, now, w) => w.memberOpen(r as RoleId, u, now)),
        this.#roleNames,
      ).sort(byCodePoint),
    );
  }

  userPermissions(user: string): readonly string[] {
    const u = this.#userNames.id(user);
    if (u === undefined) return [];
    return this.#memoised(`up\0${user}`, () => {
      const perms = new Set<PermId>();
      for (const r of this.#activeOf(this.#rolesOfUser, u, (r, now, w) => w.memberOpen(r as RoleId, u, now)))
        for (const p of this.#activeOf(this.#permsOfRole, r, (p, now, w) => w.grantOpen(r as RoleId, p as PermId, now))) perms.add(p as PermId);
      return namesOf(perms, this.#permNames).sort(byCodePoint);
    });
  }

  whichRolesCan(permission: string): readonly string[] {
    const p = this.#permNames.id(permission);
    if (p === undefined) return [];
    return this.#memoised(`wr\0${permission}`, () =>
      namesOf(
        this.#activeOf(this.#rel.rolesOfPerm, p, (r, now, w) => w.grantOpen(r as RoleId, p, now)),
        this.#roleNames,
      ).sort(byCodePoint),
    );
  }

  /**
   * The users holding the permission through any role, sorted: a merge of the granting roles'
   * member lists, which are kept sorted by name through every write. Kept until a change touches
   * this permission's roles or their members (or, with windows, a bound passes).
   */
  whichUsersCan(permission: string): readonly string[] {
    const p = this.#permNames.id(permission);
    if (p === undefined) return [];
    this.#forgetPassedWindows();
    let list = this.#holderLists.get(p);
    if (list === undefined)
      this.#holderLists.set(
        p,
        (list =
          this.#windows === undefined
            ? namesOf(holdersOf(p, this.#rel.rolesOfPerm, this.#rel.membersOfRole, this.#userNames), this.#userNames)
            : this.#holdersNow(p)),
      );
    return list;
  }

  // ---- internals ----------------------------------------------------------------------------

  #now(): number {
    return this.#windows?.now() ?? 0;
  }

  /** The related ids of node `n` in `relation` whose edge is active now (`open` asks a windowed one). */
  #activeOf(relation: Adjacency, n: number, open: (x: number, now: number, w: EdgeWindows) => boolean): Uint32Array {
    const all = relation.copyOf(n);
    const w = this.#windows;
    if (w === undefined) return all;
    const now = w.now();
    return all.filter((x) => open(x, now, w));
  }

  /** The holders of `p` through edges active now, by name. */
  #holdersNow(p: PermId): string[] {
    const users = new Set<string>();
    for (const role of this.whichRolesCan(this.#permNames.name(p))) for (const user of this.members(role) ?? []) users.add(user);
    return [...users].sort(byCodePoint);
  }

  /** With windows, lists made before a bound passed no longer hold: forgotten. */
  #forgetPassedWindows(): void {
    const w = this.#windows;
    if (w === undefined || !w.passedBoundarySince(w.now())) return;
    this.#memo.clear();
    this.#holderLists.clear();
    this.#resourceLists.clear();
  }

  #memoFor(key: string): readonly string[] | undefined {
    this.#forgetPassedWindows();
    return this.#memo.get(key);
  }

  #memoised(key: string, build: () => string[]): readonly string[] {
    let list = this.#memoFor(key);
    if (list === undefined) this.#memo.set(key, (list = build()));
    return list;
  }
}
