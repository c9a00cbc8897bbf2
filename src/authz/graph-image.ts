import type { Snapshot } from './changes.ts';
import type { PermId, RoleId, UserId } from './ids.ts';
import { Adjacency, type AdjacencyState } from './adjacency.ts';
import { NameTable, type NameTableState } from './name-table.ts';
import { buildFromSnapshot, type GraphParts } from './snapshot-build.ts';

/**
 * A tenant's graph as plain buffers and counters: built where the rows were read (a pool thread),
 * then moved to the worker that serves it. Moving a buffer costs nothing whatever its size, where
 * copying the rows as strings and building on the worker cost its event loop most of a hydration.
 *
 * Every array of an image is a view into one `ArrayBuffer`, cut to what is used: one buffer to
 * move and to free, where an array each cost a small client more in per-buffer overhead (the
 * buffer objects, their backing stores, the allocator's share) than its data. An array that a
 * later change outgrows moves to a buffer of its own; the others stay where they are.
 */
export interface GraphImage {
  readonly revision: number;
  readonly userNames: NameTableState;
  readonly roleNames: NameTableState;
  readonly permNames: NameTableState;
  readonly rolesOfUser: AdjacencyState;
  readonly membersOfRole: AdjacencyState;
  readonly permsOfRole: AdjacencyState;
  readonly rolesOfPerm: AdjacencyState;
  readonly descriptions: ReadonlyArray<string | undefined>;
}

/** The image of the graph a snapshot's rows make: what a store's `loadGraph` answers. */
export function imageOfSnapshot(s: Snapshot): GraphImage {
  return imageOf(s.revision, buildFromSnapshot(s));
}

/** The parts' data packed into one buffer (see {@link GraphImage}): the parts must not be used after. */
export function imageOf(revision: number, p: GraphParts): GraphImage {
  const tables = [p.userNames.tightState(), p.roleNames.tightState(), p.permNames.tightState()] as const;
  const relations = [p.rolesOfUser.tightState(), p.membersOfRole.tightState(), p.permsOfRole.tightState(), p.rolesOfPerm.tightState()] as const;
  const packer = new Packer();
  for (const t of tables) [t.chars, t.span, t.free, t.slots].forEach((a) => packer.reserve(a));
  for (const a of relations) [a.span, a.values].forEach((v) => packer.reserve(v));
  packer.allocate();
  const table = (t: NameTableState): NameTableState => ({
    ...t,
    chars: packer.put(t.chars),
    span: packer.put(t.span),
    free: packer.putIf(t.free),
    slots: packer.put(t.slots),
  });
  const relation = (a: AdjacencyState): AdjacencyState => ({ ...a, span: packer.put(a.span), values: packer.put(a.values) });
  return {
    revision,
    userNames: table(tables[0]),
    roleNames: table(tables[1]),
    permNames: table(tables[2]),
    rolesOfUser: relation(relations[0]),
    membersOfRole: relation(relations[1]),
    permsOfRole: relation(relations[2]),
    rolesOfPerm: relation(relations[3]),
    descriptions: p.descriptions,
  };
}

/** Arrays copied one after another into one buffer, each at an offset aligned for any element type. */
class Packer {
  #bytes = 0;
  #at = 0;
  #buffer = new ArrayBuffer(0);

  reserve(a: ArrayBufferView | undefined): void {
    if (a !== undefined) this.#bytes += align(a.byteLength);
  }

  allocate(): void {
    this.#buffer = new ArrayBuffer(this.#bytes);
  }

  /** A view of the same type over a copy of `a` in the buffer. */
  put<A extends Uint8Array | Uint16Array | Uint32Array | Int32Array>(a: A): A {
    const View = a.constructor as new (buffer: ArrayBuffer, byteOffset: number, length: number) => A;
    const view = new View(this.#buffer, this.#at, a.length);
    view.set(a);
    this.#at += align(a.byteLength);
    return view;
  }

  putIf<A extends Uint32Array>(a: A | undefined): A | undefined {
    return a === undefined ? undefined : this.put(a);
  }
}

const align = (bytes: number): number => (bytes + 7) & ~7;

/** The parts over an image's buffers (no copy). */
export function partsOf(image: GraphImage): GraphParts {
  return {
    userNames: NameTable.fromState<UserId>(image.userNames),
    roleNames: NameTable.fromState<RoleId>(image.roleNames),
    permNames: NameTable.fromState<PermId>(image.permNames),
    rolesOfUser: Adjacency.fromState(image.rolesOfUser),
    membersOfRole: Adjacency.fromState(image.membersOfRole),
    permsOfRole: Adjacency.fromState(image.permsOfRole),
    rolesOfPerm: Adjacency.fromState(image.rolesOfPerm),
    descriptions: [...image.descriptions],
  };
}

/** Whether a value is a graph image (a pool thread moves its buffers instead of copying them). */
export function isGraphImage(value: unknown): value is GraphImage {
  return typeof value === 'object' && value !== null && 'membersOfRole' in value && 'userNames' in value && 'revision' in value;
}

/** Every buffer of the image, once each: the transfer list of a move to another thread. */
export function buffersOf(image: GraphImage): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  const add = (a: ArrayBufferView): void => void out.add(a.buffer as ArrayBuffer);
  for (const t of [image.userNames, image.roleNames, image.permNames]) [t.chars, t.span, t.free, t.slots].forEach((a) => a !== undefined && add(a));
  for (const a of [image.rolesOfUser, image.membersOfRole, image.permsOfRole, image.rolesOfPerm])
    [a.span, a.values, a.capacity].forEach((v) => v !== undefined && add(v));
  return [...out];
}
