import type { Change } from '../authz/changes.ts';
import type { ImportCounts, ImportEdge, ImportFile, ImportMode } from '../authz/transfer.ts';

/*
 * What an import changes (docs/api.md §17), worked out from the tenant's stored rows and the
 * file, the same for every adapter: each adapter reads the rows and applies the plan in its own
 * transaction.
 */

/** A tenant's stored data, as an import compares it with the file. */
export interface StoredData {
  readonly roles: ReadonlyArray<readonly [role: string, description: string]>;
  readonly grants: readonly ImportEdge[];
  readonly memberships: readonly ImportEdge[];
}

/** The rows an import writes and deletes. Edges of deleted roles are in the removals too. */
export interface ImportPlan extends ImportCounts {
  readonly createRoles: ReadonlyArray<readonly [string, string]>;
  readonly describeRoles: ReadonlyArray<readonly [string, string]>;
  readonly deleteRoles: readonly string[];
  readonly addGrants: readonly ImportEdge[];
  readonly rewindowGrants: readonly ImportEdge[];
  readonly removeGrants: readonly ImportEdge[];
  readonly addMembers: readonly ImportEdge[];
  readonly rewindowMembers: readonly ImportEdge[];
  readonly removeMembers: readonly ImportEdge[];
  /** Whether it changes anything at all (a description or a window included). */
  readonly changed: boolean;
}

const key = (e: ImportEdge): string => `${e[0]}\0${e[1]}`;
const sameWindow = (a: ImportEdge, b: ImportEdge): boolean => a[2] === b[2] && a[3] === b[3];

interface EdgeDiff {
  readonly add: ImportEdge[];
  readonly rewindow: ImportEdge[];
  readonly remove: ImportEdge[];
}

/** The difference of one kind of edge: merge keeps what is stored (its window too), replace takes the file's. */
function diffEdges(stored: readonly ImportEdge[], wanted: readonly ImportEdge[], mode: ImportMode): EdgeDiff {
  const byKey = new Map<string, ImportEdge>();
  for (const e of stored) byKey.set(key(e), e);
  const add: ImportEdge[] = [];
  const rewindow: ImportEdge[] = [];
  const inFile = mode === 'replace' ? new Set<string>() : undefined;
  for (const e of wanted) {
    const k = key(e);
    inFile?.add(k);
    const had = byKey.get(k);
    if (had === undefined) add.push(e);
    else if (mode === 'replace' && !sameWindow(had, e)) rewindow.push(e);
  }
  const remove = inFile === undefined ? [] : stored.filter((e) => !inFile.has(key(e)));
  return { add, rewindow, remove };
}

/** The plan that takes `stored` to what `file` asks in `mode`. */
export function planImport(stored: StoredData, file: ImportFile, mode: ImportMode): ImportPlan {
  const storedRoles = new Map(stored.roles);
  const fileRoles = new Set(file.roles.map(([role]) => role));
  const createRoles = file.roles.filter(([role]) => !storedRoles.has(role));
  const describeRoles = file.roles.filter(([role, description]) => {
    const had = storedRoles.get(role);
    return had !== undefined && had !== description;
  });
  const deleteRoles = mode === 'replace' ? stored.roles.map(([role]) => role).filter((role) => !fileRoles.has(role)) : [];
  const grants = diffEdges(stored.grants, file.grants, mode);
  const members = diffEdges(stored.memberships, file.memberships, mode);
  const added = createRoles.length + grants.add.length + members.add.length;
  const removed = deleteRoles.length + grants.remove.length + members.remove.length;
  return {
    createRoles,
    describeRoles,
    deleteRoles,
    addGrants: grants.add,
    rewindowGrants: grants.rewindow,
    removeGrants: grants.remove,
    addMembers: members.add,
    rewindowMembers: members.rewindow,
    removeMembers: members.remove,
    roles: stored.roles.length + createRoles.length - deleteRoles.length,
    permissions: stored.grants.length + grants.add.length - grants.remove.length,
    memberships: stored.memberships.length + members.add.length - members.remove.length,
    added,
    removed,
    changed: added + removed + describeRoles.length + grants.rewindow.length + members.rewindow.length > 0,
  };
}

/** A window's bounds as a change carries them (open ones left out). */
function windowOfEdge(e: ImportEdge): { notBefore?: number; expiresAt?: number } {
  return { ...(e[2] === null ? {} : { notBefore: e[2] }), ...(e[3] === null ? {} : { expiresAt: e[3] }) };
}

/**
 * The plan as writes that apply in order (what a preview reads, docs/api.md §12.3): new roles;
 * removals of edges whose role stays; a new window as removal then addition; additions; role
 * deletions last (their edges go with them).
 */
export function planAsChanges(plan: ImportPlan): Change[] {
  const deleted = new Set(plan.deleteRoles);
  const survives = (e: ImportEdge): boolean => !deleted.has(e[0]);
  const revoke = (e: ImportEdge): Change => ({ op: 'permission.revoke', role: e[0], permission: e[1] });
  const grant = (e: ImportEdge): Change => ({ op: 'permission.grant', role: e[0], permission: e[1], ...windowOfEdge(e) });
  const leave = (e: ImportEdge): Change => ({ op: 'membership.remove', role: e[0], user: e[1] });
  const join = (e: ImportEdge): Change => ({ op: 'membership.add', role: e[0], user: e[1], ...windowOfEdge(e) });
  return [
    ...plan.createRoles.map(([role, description]): Change => ({ op: 'role.create', role, description })),
    ...plan.removeGrants.filter(survives).map(revoke),
    ...plan.removeMembers.filter(survives).map(leave),
    ...plan.rewindowGrants.flatMap((e) => [revoke(e), grant(e)]),
    ...plan.rewindowMembers.flatMap((e) => [leave(e), join(e)]),
    ...plan.addGrants.map(grant),
    ...plan.addMembers.map(join),
    ...plan.deleteRoles.map((role): Change => ({ op: 'role.delete', role })),
  ];
}
