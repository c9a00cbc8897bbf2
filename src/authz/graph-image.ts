import type { Snapshot, WindowedEdge } from './changes.ts';
import type { PermId, RoleId, UserId } from './ids.ts';
import { Adjacency, type AdjacencyState } from './adjacency.ts';
import { NameTable, type NameTableState } from './name-table.ts';
import { buildFromRows, buildFromSnapshot, type AdoptedParts, type GraphParts, type TenantRows } from './snapshot-build.ts';

/**
 * A tenant's graph as one buffer and a few numbers: built where the rows were read (a pool
 * thread), then sent to the worker that serves it. Moving a buffer costs nothing whatever its size,
 * where copying the rows as strings and building on the worker cost its event loop most of a
 * hydration.
 *
 * Every array of the graph is packed into `buffer`, cut to what is used, and `layout` says where
 * each one is and holds the counters: one buffer to send, adopt and free, where an array each cost
 * a small client more in per-buffer overhead (the buffer objects, their backing stores, the
 * allocator's share, the message's structure) than its data. The worker's arrays are views into
 * it; one that a later change outgrows moves to a buffer of its own, the others stay.
 */
export interface GraphImage {
  readonly revision: number;
  readonly buffer: ArrayBuffer;
  /** See {@link imageOf}: per array its byte offset and length, then the tables' and relations' counters. */
  readonly layout: readonly number[];
  readonly descriptions: ReadonlyArray<string | undefined>;
  /** The edges with a window, by name (few; absent when none). */
  readonly windows?: readonly WindowedEdge[];
}

type Packed = Uint8Array | Uint16Array | Uint32Array | Int32Array;

/** The image of the graph a tenant's rows make: what a store's `loadGraph` answers. */
export function imageOfRows(rows: TenantRows): GraphImage {
  return imageOf(rows.revision, buildFromRows(rows.roles, rows.grants, rows.memberships, rows.windows));
}

/** The image of the graph a snapshot makes. */
export function imageOfSnapshot(s: Snapshot): GraphImage {
  return imageOf(s.revision, buildFromSnapshot(s));
}

/**
 * The parts' data packed into one buffer: the parts must not be used after. The layout is, for
 * the arrays in {@link arraysOf}'s order, `byteOffset, length` each (a free list of length 0 is
 * absent); then per name table `wide, charsEnd, garbageChars, idEnd, freeCount, deletedSlots,
 * size`; then per relation `end, garbage` (an `end` of -1: the relation is left out).
 */
export function imageOf(revision: number, p: GraphParts): GraphImage {
  const tables = [p.userNames.tightState(), p.roleNames.tightState(), p.permNames.tightState()] as const;
  const [rolesOfUser, permsOfRole] = [p.rolesOfUser.tightState(), p.permsOfRole.tightState()];
  // A small graph leaves its reverse relations out: made when first needed, which for most of
  // many small clients (only ever checked) is never.
  const reverse = rolesOfUser.end + permsOfRole.end >= REVERSE_FROM_EDGES;
  const absent: AdjacencyState = { span: new Uint32Array(0), values: new Uint32Array(0), end: -1, garbage: 0 };
  const [membersOfRole, rolesOfPerm] = reverse ? [p.membersOfRole.tightState(), p.rolesOfPerm.tightState()] : [absent, absent];
  const relations = [rolesOfUser, membersOfRole, permsOfRole, rolesOfPerm] as const;
  const arrays = arraysOf(tables, relations);
  const layout: number[] = [];
  let bytes = 0;
  for (const a of arrays) {
    layout.push(bytes, a?.length ?? 0);
    bytes += align(a?.byteLength ?? 0);
  }
  const buffer = new ArrayBuffer(bytes);
  const into = new Uint8Array(buffer);
  arrays.forEach((a, i) => a !== undefined && into.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), layout[2 * i] as number));
  for (const t of tables) layout.push(t.chars instanceof Uint16Array ? 1 : 0, t.charsEnd, t.garbageChars, t.idEnd, t.freeCount, t.deletedSlots, t.size);
  for (const a of relations) layout.push(a.end, a.garbage);
  return p.windows.length === 0
    ? { revision, buffer, layout, descriptions: p.descriptions }
    : { revision, buffer, layout, descriptions: p.descriptions, windows: p.windows };
}

/** Every packed array of the parts, in the image's order. */
function arraysOf(tables: readonly NameTableState[], relations: readonly AdjacencyState[]): Array<Packed | undefined> {
  return [...tables.flatMap((t) => [t.chars, t.span, t.free, t.slots]), ...relations.flatMap((a) => [a.span, a.values])];
}

const align = (bytes: number): number => (bytes + 7) & ~7;

/** Memberships and grants from which an image carries the reverse relations (members by role, roles by permission). */
const REVERSE_FROM_EDGES = 1024;

/** The parts over an image's buffer: views, no copy. */
export function partsOf(image: GraphImage): AdoptedParts {
  const { buffer, layout } = image;
  let a = 0;
  /** The next array's byte offset and length. */
  const next = (): [number, number] => [layout[2 * a] as number, layout[2 * a++ + 1] as number];
  const u32 = (): Uint32Array => new Uint32Array(buffer, ...next());
  let c = 2 * (4 * 3 + 2 * 4);
  const counter = (): number => layout[c++] as number;
  const table = <T extends number>(): NameTable<T> => {
    const chars = counter() === 1 ? new Uint16Array(buffer, ...next()) : new Uint8Array(buffer, ...next());
    const span = u32();
    const [freeAt, freeLength] = next();
    const free = freeLength === 0 ? undefined : new Uint32Array(buffer, freeAt, freeLength);
    const slots = new Int32Array(buffer, ...next());
    const [charsEnd, garbageChars, idEnd, freeCount, deletedSlots, size] = [counter(), counter(), counter(), counter(), counter(), counter()];
    return NameTable.fromState<T>({ chars, charsEnd, garbageChars, span, idEnd, free, freeCount, slots, deletedSlots, size });
  };
  const [userNames, roleNames, permNames] = [table<UserId>(), table<RoleId>(), table<PermId>()];
  const relation = (): Adjacency | undefined => {
    const [span, values, end, garbage] = [u32(), u32(), counter(), counter()];
    return end === -1 ? undefined : Adjacency.fromState({ span, values, end, garbage });
  };
  const [rolesOfUser, membersOfRole, permsOfRole, rolesOfPerm] = [relation(), relation(), relation(), relation()];
  if (rolesOfUser === undefined || permsOfRole === undefined) throw new Error('a graph image without its forward relations');
  return {
    userNames,
    roleNames,
    permNames,
    rolesOfUser,
    membersOfRole,
    permsOfRole,
    rolesOfPerm,
    descriptions: [...image.descriptions],
    windows: image.windows ?? [],
  };
}

/** Whether a value is a graph image (a pool thread may move its buffer instead of copying it). */
export function isGraphImage(value: unknown): value is GraphImage {
  return typeof value === 'object' && value !== null && 'buffer' in value && value.buffer instanceof ArrayBuffer && 'layout' in value && 'revision' in value;
}

/** The image's buffer: the transfer list of a move to another thread. */
export function buffersOf(image: GraphImage): ArrayBuffer[] {
  return [image.buffer];
}
