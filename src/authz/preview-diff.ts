import { isOpen, type Window } from './changes.ts';
import type { PreviewGraph, RoleEdits, UserPermission } from './preview.ts';

/**
 * Which (user, permission) pairs a batch's edits turn on or off (docs/api.md §12.3), from the
 * graph and the edits alone. A pair can change only through a touched role: through a grant whose
 * activity changes, for the role's members before or after, or through a membership whose activity
 * changes, for the role's permissions before or after. The users so touched are visited in
 * code-point order (a merge of sorted lists), each with its candidate permissions in order, so the
 * first `limit` pairs found are the ones the answer lists and the rest are only counted.
 */

export interface Difference {
  readonly gained: readonly UserPermission[];
  readonly lost: readonly UserPermission[];
  readonly gained_count: number;
  readonly lost_count: number;
  readonly truncated: boolean;
}

/** Pairs decided between two yields: a few tens of microseconds of work. */
const UNITS_PER_STEP = 256;

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function hasSorted(list: readonly string[], name: string): boolean {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = list[mid] as string;
    if (v === name) return true;
    if (v < name) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

/** Two sorted lists with nothing in common, as one sorted list. */
function mergeSorted(a: readonly string[], b: readonly string[]): readonly string[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push((a[i] as string) < (b[j] as string) ? (a[i++] as string) : (b[j++] as string));
  while (i < a.length) out.push(a[i++] as string);
  while (j < b.length) out.push(b[j++] as string);
  return out;
}

const isActive = (w: Window | null | undefined, now: number): boolean => w !== undefined && w !== null && isOpen(w, now);

/** A touched role, before and after the batch. */
interface RolePlan {
  readonly role: string;
  readonly edits: RoleEdits;
  /** Active before the batch, sorted. */
  readonly permsBefore: readonly string[];
  /** Those whose activity the batch changes, sorted. */
  readonly permsChanged: readonly string[];
  /** Active before or after, sorted. */
  readonly permsEither: readonly string[];
  readonly membersBefore: readonly string[];
}

/** Whether the role grants `permission` right after the batch. */
function grantAfter(plan: Pick<RolePlan, 'edits' | 'permsBefore'>, permission: string, now: number): boolean {
  const edited = plan.edits.grants.get(permission);
  if (edited !== undefined) return isActive(edited, now);
  return !plan.edits.cleared && hasSorted(plan.permsBefore, permission);
}

function memberAfter(plan: RolePlan, user: string, wasMember: boolean, now: number): boolean {
  const edited = plan.edits.members.get(user);
  if (edited !== undefined) return isActive(edited, now);
  return !plan.edits.cleared && wasMember;
}

/** A sorted list of users to visit for one role; `allMembers` when it is the role's members before. */
interface UserSource {
  readonly users: readonly string[];
  readonly plan: RolePlan;
  readonly allMembers: boolean;
}

function planRole(graph: PreviewGraph, role: string, edits: RoleEdits): Omit<RolePlan, 'permsChanged' | 'permsEither'> {
  const existed = graph.hasRole(role);
  return { role, edits, permsBefore: (existed && graph.rolePermissions(role)) || [], membersBefore: (existed && graph.members(role)) || [] };
}

/**
 * The role's plan and the users to visit for it: every member before and the members it gains
 * when any permission of the role changes (or the role went), else only the users whose
 * membership changes. Nothing when the role grants nothing before or after.
 */
function sourcesOf(graph: PreviewGraph, role: string, edits: RoleEdits, now: number): UserSource[] {
  const base = planRole(graph, role, edits);
  const lost = base.permsBefore.filter((p) => !grantAfter(base, p, now));
  const added = [...edits.grants.keys()].filter((p) => !hasSorted(base.permsBefore, p) && grantAfter(base, p, now)).sort(byCodePoint);
  const plan: RolePlan = { ...base, permsChanged: mergeSorted(lost, added), permsEither: mergeSorted(base.permsBefore, added) };
  if (plan.permsEither.length === 0) return [];
  const visitAll = plan.permsChanged.length > 0 || edits.cleared;
  const extra: string[] = [];
  for (const [user, w] of edits.members) {
    const was = hasSorted(plan.membersBefore, user);
    const is = isActive(w, now);
    if (visitAll ? !was && is : was !== is) extra.push(user);
  }
  extra.sort(byCodePoint);
  const sources: UserSource[] = [];
  if (visitAll && plan.membersBefore.length > 0) sources.push({ users: plan.membersBefore, plan, allMembers: true });
  if (extra.length > 0) sources.push({ users: extra, plan, allMembers: false });
  return sources;
}

/** A place in one source. */
interface Cursor {
  readonly source: UserSource;
  index: number;
}

const headOf = (c: Cursor): string => c.source.users[c.index] as string;

/** The users of several sorted sources in code-point order, each once, with the sources that list it. */
class UserMerge {
  readonly #heap: Cursor[] = [];

  constructor(sources: readonly UserSource[]) {
    for (const source of sources) this.#push({ source, index: 0 });
  }

  /** The next user, its sources put in `into` (emptied first); undefined when every source is done. */
  next(into: UserSource[]): string | undefined {
    into.length = 0;
    const top = this.#heap[0];
    if (top === undefined) return undefined;
    const user = headOf(top);
    for (let c = this.#heap[0]; c !== undefined && headOf(c) === user; c = this.#heap[0]) {
      into.push(c.source);
      c.index++;
      if (c.index < c.source.users.length) this.#siftDown(0);
      else this.#removeTop();
    }
    return user;
  }

  #push(c: Cursor): void {
    if (c.index >= c.source.users.length) return;
    const heap = this.#heap;
    heap.push(c);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (headOf(heap[parent] as Cursor) <= headOf(c)) break;
      heap[i] = heap[parent] as Cursor;
      heap[parent] = c;
      i = parent;
    }
  }

  #removeTop(): void {
    const last = this.#heap.pop() as Cursor;
    if (this.#heap.length === 0) return;
    this.#heap[0] = last;
    this.#siftDown(0);
  }

  #siftDown(from: number): void {
    const heap = this.#heap;
    for (let i = from; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < heap.length && headOf(heap[l] as Cursor) < headOf(heap[least] as Cursor)) least = l;
      if (r < heap.length && headOf(heap[r] as Cursor) < headOf(heap[least] as Cursor)) least = r;
      if (least === i) return;
      [heap[i], heap[least]] = [heap[least] as Cursor, heap[i] as Cursor];
      i = least;
    }
  }
}

/** A user's membership of a touched role, before and after. */
interface Membership {
  readonly plan: RolePlan;
  readonly before: boolean;
  readonly after: boolean;
}

/** The user's candidate permissions, sorted: all of a role whose membership changes, else the role's changed ones. */
function candidatesOf(memberships: readonly Membership[]): readonly string[] {
  let only: readonly string[] | undefined;
  let union: Set<string> | undefined;
  for (const m of memberships) {
    const list = m.before !== m.after ? m.plan.permsEither : m.plan.permsChanged;
    if (list.length === 0) continue;
    if (only === undefined) only = list;
    else for (const p of list) (union ??= new Set(only)).add(p);
  }
  return union === undefined ? (only ?? []) : [...union].sort(byCodePoint);
}

/** Decides one user's pairs: before from the graph's check, after from the touched roles and the user's other roles. */
class UserPairs {
  #otherRoles: readonly string[] | undefined;

  constructor(
    readonly graph: PreviewGraph,
    readonly now: number,
    readonly user: string,
    readonly memberships: readonly Membership[],
  ) {}

  after(permission: string, before: boolean): boolean {
    for (const m of this.memberships) if (m.after && grantAfter(m.plan, permission, this.now)) return true;
    if (!before) return false;
    // It held before: through an untouched role (which still gives it) unless a touched one did.
    let throughTouched = false;
    for (const m of this.memberships) if (m.before && hasSorted(m.plan.permsBefore, permission)) throughTouched = true;
    if (!throughTouched) return true;
    for (const role of this.#others()) if (isActive(this.graph.grantEdge(role, permission), this.now)) return true;
    return false;
  }

  /** The user's roles before that the batch does not touch for this user: they give the same after. */
  #others(): readonly string[] {
    return (this.#otherRoles ??= this.graph.userRoles(this.user).filter((role) => !this.memberships.some((m) => m.plan.role === role)));
  }
}

/** The gained and lost pairs, in the order found (sorted), listed up to `limit` and counted exactly. */
class DifferenceBuilder {
  readonly gained: UserPermission[] = [];
  readonly lost: UserPermission[] = [];
  gainedCount = 0;
  lostCount = 0;

  constructor(readonly limit: number) {}

  add(user: string, permission: string, before: boolean, after: boolean): void {
    if (before === after) return;
    if (after) {
      if (this.gainedCount++ < this.limit) this.gained.push({ user, permission });
    } else if (this.lostCount++ < this.limit) this.lost.push({ user, permission });
  }

  result(): Difference {
    const { gained, lost, gainedCount, lostCount, limit } = this;
    return { gained, lost, gained_count: gainedCount, lost_count: lostCount, truncated: gainedCount > limit || lostCount > limit };
  }
}

/** The difference the edits make, in steps of about {@link UNITS_PER_STEP} pairs. */
export function* differenceSteps(graph: PreviewGraph, roles: ReadonlyMap<string, RoleEdits>, now: number, limit: number): Generator<void, Difference> {
  const sources: UserSource[] = [];
  for (const [role, edits] of roles) {
    sources.push(...sourcesOf(graph, role, edits, now));
    yield;
  }
  const merge = new UserMerge(sources);
  const out = new DifferenceBuilder(limit);
  const listing: UserSource[] = [];
  let units = 0;
  for (let user = merge.next(listing); user !== undefined; user = merge.next(listing)) {
    const memberships = listing.map((s): Membership => {
      const before = s.allMembers || hasSorted(s.plan.membersBefore, user);
      return { plan: s.plan, before, after: memberAfter(s.plan, user, before, now) };
    });
    const pairs = new UserPairs(graph, now, user, memberships);
    for (const permission of candidatesOf(memberships)) {
      const before = graph.check(user, permission);
      out.add(user, permission, before, pairs.after(permission, before));
      if (++units >= UNITS_PER_STEP) {
        units = 0;
        yield;
      }
    }
  }
  return out.result();
}
