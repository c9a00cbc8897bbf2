import type { Snapshot } from './changes.ts';
import type { PermId, RoleId, UserId } from './ids.ts';
import { Adjacency, type AdjacencyState } from './adjacency.ts';
import { NameTable, type NameTableState } from './name-table.ts';
import { buildFromRows, buildFromSnapshot, type GraphParts, type TenantRows } from './snapshot-build.ts';

/**
 * A tenant's graph as plain buffers and counters: built where the rows were read (a pool thread),
 * then moved to the worker that serves it. Moving a buffer costs nothing whatever its size, where
 * copying the rows as strings and building on the worker cost its event loop most of a hydration.
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

/** The image of the graph a tenant's rows make: what a store's `loadGraph` answers. */
export function imageOfRows(rows: TenantRows): GraphImage {
  return imageOf(rows.revision, buildFromRows(rows.roles, rows.grants, rows.memberships));
}

/** The image of the graph a snapshot makes. */
export function imageOfSnapshot(s: Snapshot): GraphImage {
  return imageOf(s.revision, buildFromSnapshot(s));
}

/** The parts' buffers and counters, shared: the parts must not be used after. */
export function imageOf(revision: number, p: GraphParts): GraphImage {
  return {
    revision,
    userNames: p.userNames.state(),
    roleNames: p.roleNames.state(),
    permNames: p.permNames.state(),
    rolesOfUser: p.rolesOfUser.state(),
    membersOfRole: p.membersOfRole.state(),
    permsOfRole: p.permsOfRole.state(),
    rolesOfPerm: p.rolesOfPerm.state(),
    descriptions: p.descriptions,
  };
}

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
  for (const t of [image.userNames, image.roleNames, image.permNames]) [t.chars, t.span, t.free, t.slots].forEach(add);
  for (const a of [image.rolesOfUser, image.membersOfRole, image.permsOfRole, image.rolesOfPerm]) [a.span, a.values, a.capacity].forEach(add);
  return [...out];
}
