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

/** Pairs decided (and users visited) between two yields: a few tens of microseconds of work. */
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

const isActive = (w: Window | null | undefined, now: number): boolean => w !== undefined && w !== null && isOpen(w, now);

/** The graph's active permissions of each role asked, as sets: fetched once per role for the whole preview. */
class GrantedBefore {
  readonly #sets = new Map<string, ReadonlySet<string>>();

  constructor(readonly graph: PreviewGraph) {}

  of(role: string): ReadonlySet<string> {
    let set = this.#sets.get(role);
    if (set === undefined) this.#sets.set(role, (set = new Set(this.graph.rolePermissions(role))));
    return set;
  }
}

/** A touched role, before and after the batch. */
interface RolePlan {
  readonly role: string;
  readonly edits: RoleEdits;
  /** Active before the batch, sorted, and as a set. */
  readonly permsBefore: readonly string[];
  readonly grantedBefore: ReadonlySet<string>;
  /** Those whose activity the batch changes, sorted. */
  readonly permsChanged: readonly string[];
  /** Active before or after, sorted. */
  readonly permsEither: readonly string[];
  /** The active members before, sorted: read only when all of them are visited. */
  readonly membersBefore: readonly string[] | undefined;
}

/** Whether the role grants `permission` right after the batch. */
function grantAfter(plan: Pick<RolePlan, 'edits' | 'grantedBefore'>, permission: string, now: number): boolean {
  const edited = plan.edits.grants.get(permission);
  if (edited !== undefined) return isActive(edited, now);
  return !plan.edits.cleared && plan.grantedBefore.has(permission);
}

function memberAfter(plan: RolePlan, user: string, wasMember: boolean, now: number): boolean {
  const edited = plan.edits.members.get(user);
  if (edited !== undefined) return isActive(edited, now);
  return !plan.edits.cleared && wasMember;
}

function memberBefore(graph: PreviewGraph, plan: RolePlan, user: string, now: number): boolean {
  return plan.membersBefore === undefined ? isActive(graph.memberEdge(user, plan.role), now) : hasSorted(plan.membersBefore, user);
}

/** A sorted list of users to visit for one role; `allMembers` when it is the role's members before. */
interface UserSource {
  readonly users: readonly string[];
  readonly plan: RolePlan;
  readonly allMembers: boolean;
}

/**
 * The role's plan and the users to visit for it: every member before and the members it gains
 * when any permission of the role changes (or the role went), else only the users whose
 * membership changes. Nothing when the role grants nothing before or after.
 */
function sourcesOf(graph: PreviewGraph, granted: GrantedBefore, role: string, edits: RoleEdits, now: number): UserSource[] {
  const existed = graph.hasRole(role);
  const base = { edits, permsBefore: (existed && graph.rolePermissions(role)) || [], grantedBefore: granted.of(role) };
  const lost = base.permsBefore.filter((p) => !grantAfter(base, p, now));
  const added = [...edits.grants.keys()].filter((p) => !base.grantedBefore.has(p) && grantAfter(base, p, now)).sort(byCodePoint);
  const permsEither = unionSorted(base.permsBefore, added);
  if (permsEither.length === 0) return [];
  const permsChanged = unionSorted(lost, added);
  const visitAll = permsChanged.length > 0 || edits.cleared;
  const membersBefore = visitAll ? (existed && graph.members(role)) || [] : undefined;
  const plan: RolePlan = { ...base, role, permsChanged, permsEither, membersBefore };
  const extra: string[] = [];
  for (const [user, w] of edits.members) {
    const was = memberBefore(graph, plan, user, now);
    const is = isActive(w, now);
    if (visitAll ? !was && is : was !== is) extra.push(user);
  }
  extra.sort(byCodePoint);
  const sources: UserSource[] = [];
  if (membersBefore !== undefined && membersBefore.length > 0) sources.push({ users: membersBefore, plan, allMembers: true });
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
  let union: readonly string[] = [];
  for (const m of memberships) union = unionSorted(union, m.before !== m.after ? m.plan.permsEither : m.plan.permsChanged);
  return union;
}

/** Two sorted lists as one, each name once. */
function unionSorted(a: readonly string[], b: readonly string[]): readonly string[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as string;
    const y = b[j] as string;
    out.push(x <= y ? x : y);
    if (x <= y) i++;
    if (y <= x) j++;
  }
  while (i < a.length) out.push(a[i++] as string);
  while (j < b.length) out.push(b[j++] as string);
  return out;
}

/** Whether a pair was held before (bit 1) and after (bit 2). */
const BEFORE = 1;
const AFTER = 2;

/**
 * Decides one user's pairs. A path through a touched role is judged from the plans; any other
 * path is the same before and after, so before is the graph's check when no touched role gave the
 * permission, and after needs the user's other roles only when a touched role gave it before and
 * gives it no longer.
 */
class UserPairs {
  user = '';
  memberships: readonly Membership[] = [];
  /** The permissions of the user's other roles, once asked. */
  #otherGrants: ReadonlyArray<ReadonlySet<string>> | undefined;

  constructor(
    readonly graph: PreviewGraph,
    readonly granted: GrantedBefore,
    readonly now: number,
  ) {}

  visit(user: string, memberships: readonly Membership[]): void {
    this.user = user;
    this.memberships = memberships;
    this.#otherGrants = undefined;
  }

  decide(permission: string): number {
    let touchedBefore = false;
    let touchedAfter = false;
    for (const m of this.memberships) {
      if (m.before && m.plan.grantedBefore.has(permission)) touchedBefore = true;
      if (m.after && grantAfter(m.plan, permission, this.now)) touchedAfter = true;
    }
    const before = touchedBefore || this.graph.check(this.user, permission);
    const after = touchedAfter || (before && (!touchedBefore || this.#othersGive(permission)));
    return (before ? BEFORE : 0) | (after ? AFTER : 0);
  }

  /** Whether the user's roles before that the batch does not touch for this user (the same after) give `permission`. */
  #othersGive(permission: string): boolean {
    const others = (this.#otherGrants ??= this.#others());
    for (const granted of others) if (granted.has(permission)) return true;
    return false;
  }

  #others(): ReadonlyArray<ReadonlySet<string>> {
    const others: Array<ReadonlySet<string>> = [];
    for (const role of this.graph.userRoles(this.user)) if (!this.memberships.some((m) => m.plan.role === role)) others.push(this.granted.of(role));
    return others;
  }
}

/** The gained and lost pairs, in the order found (sorted), listed up to `limit` and counted exactly. */
class DifferenceBuilder {
  readonly gained: UserPermission[] = [];
  readonly lost: UserPermission[] = [];
  gainedCount = 0;
  lostCount = 0;

  constructor(readonly limit: number) {}

  add(user: string, permission: string, held: number): void {
    if (held === 0 || held === (BEFORE | AFTER)) return;
    if (held === AFTER) {
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
  const granted = new GrantedBefore(graph);
  const sources: UserSource[] = [];
  for (const [role, edits] of roles) {
    sources.push(...sourcesOf(graph, granted, role, edits, now));
    yield;
  }
  const merge = new UserMerge(sources);
  const out = new DifferenceBuilder(limit);
  const pairs = new UserPairs(graph, granted, now);
  const listing: UserSource[] = [];
  let units = 0;
  for (let user = merge.next(listing); user !== undefined; user = merge.next(listing)) {
    const memberships = listing.map((s): Membership => {
      const before = s.allMembers || memberBefore(graph, s.plan, user, now);
      return { plan: s.plan, before, after: memberAfter(s.plan, user, before, now) };
    });
    pairs.visit(user, memberships);
    units++;
    for (const permission of candidatesOf(memberships)) {
      out.add(user, permission, pairs.decide(permission));
      if (++units >= UNITS_PER_STEP) {
        units = 0;
        yield;
      }
    }
  }
  return out.result();
}
