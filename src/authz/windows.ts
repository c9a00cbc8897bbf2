import { isOpen, windowBetween, type Window, type WindowedEdge } from './changes.ts';
import type { PermId, RoleId, UserId } from './ids.ts';
import type { NameTable } from './name-table.ts';

/** Microseconds since the epoch, now: what decides whether a windowed edge is active. */
export type MicroClock = () => number;

export const wallMicros: MicroClock = () => Date.now() * 1000;

/**
 * An edge's key: its role id in the high part, its user or permission id in the low 32 bits
 * (role ids stay far below 2^21, so the key is an exact integer). A number, so that the check
 * loop looks a window up without building a string.
 */
const edgeKey = (r: number, x: number): number => r * 0x1_0000_0000 + x;

/** A window's bound ahead of `now`, or Infinity. */
function nextBoundOf(w: Window, now: number): number {
  if (w.notBefore !== undefined && w.notBefore > now) return w.notBefore;
  if (w.expiresAt !== undefined && w.expiresAt > now) return w.expiresAt;
  return Infinity;
}

/**
 * The windows of one graph's grants and memberships (docs/api.md §12.1), by edge ids. Few edges
 * have one, so they sit beside the buffers in two maps, and a role with none of them (most) is
 * known at once: the check loop asks a window only of the roles {@link isTimed} names. Whether an
 * edge is active is decided at each read, against the clock: no clean-up needs to have run.
 */
export class EdgeWindows {
  readonly #grants = new Map<number, Window>();
  readonly #members = new Map<number, Window>();
  /** Per role id, how many of its edges have a window (holes: none). */
  readonly #timedEdges: number[] = [];
  readonly now: MicroClock;
  /** The instant of the last {@link passedBoundarySince} look, and the earliest bound after it: between them, what is active stays as it was. */
  #lookedAt = Infinity;
  #nextBound = -Infinity;

  constructor(now: MicroClock) {
    this.now = now;
  }

  /** How many edges have a window. */
  get size(): number {
    return this.#grants.size + this.#members.size;
  }

  /** Whether any edge of role `r` has a window. */
  isTimed(r: RoleId): boolean {
    return (this.#timedEdges[r] ?? 0) > 0;
  }

  grantWindow(r: RoleId, p: PermId): Window | undefined {
    return this.#grants.get(edgeKey(r, p));
  }

  memberWindow(r: RoleId, u: UserId): Window | undefined {
    return this.#members.get(edgeKey(r, u));
  }

  grantOpen(r: RoleId, p: PermId, now: number): boolean {
    return isOpen(this.#grants.get(edgeKey(r, p)), now);
  }

  memberOpen(r: RoleId, u: UserId, now: number): boolean {
    return isOpen(this.#members.get(edgeKey(r, u)), now);
  }

  /** Sets (a window with a bound) or clears (none) the window of grant r → p. */
  setGrant(r: RoleId, p: PermId, w: Window | undefined): void {
    this.#set(this.#grants, r, p, w);
  }

  setMember(r: RoleId, u: UserId, w: Window | undefined): void {
    this.#set(this.#members, r, u, w);
  }

  /**
   * Whether a bound passed since the last look (or the windows changed, or the clock went back):
   * the lists derived from the graph, which hold for one set of active edges, must be made again.
   */
  passedBoundarySince(now: number): boolean {
    if (now >= this.#lookedAt && now < this.#nextBound) return false;
    this.#lookedAt = now;
    let next = Infinity;
    for (const w of this.#grants.values()) next = Math.min(next, nextBoundOf(w, now));
    for (const w of this.#members.values()) next = Math.min(next, nextBoundOf(w, now));
    this.#nextBound = next;
    return true;
  }

  /** Every windowed edge by name (a graph image's, or GET /api/windows'). */
  edges(roles: NameTable<RoleId>, users: NameTable<UserId>, perms: NameTable<PermId>): WindowedEdge[] {
    const out: WindowedEdge[] = [];
    const split = (key: number): [number, number] => [Math.floor(key / 0x1_0000_0000), key % 0x1_0000_0000];
    for (const [key, w] of this.#grants) {
      const [r, p] = split(key);
      out.push({ kind: 'permission', role: roles.name(r as RoleId), permission: perms.name(p as PermId), ...w });
    }
    for (const [key, w] of this.#members) {
      const [r, u] = split(key);
      out.push({ kind: 'membership', role: roles.name(r as RoleId), user: users.name(u as UserId), ...w });
    }
    return out;
  }

  #set(map: Map<number, Window>, r: number, x: number, w: Window | undefined): void {
    const key = edgeKey(r, x);
    const had = map.has(key);
    const has = w !== undefined && (w.notBefore !== undefined || w.expiresAt !== undefined);
    if (has) map.set(key, windowBetween(w.notBefore, w.expiresAt) as Window);
    else if (had) map.delete(key);
    if (had !== has) this.#timedEdges[r] = (this.#timedEdges[r] ?? 0) + (has ? 1 : -1);
    this.#nextBound = -Infinity;
  }
}
