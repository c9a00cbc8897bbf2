import { ERRORS } from '../errors/index.ts';
import { windowOf, type Change, type Window } from './changes.ts';
import { refusal, type Refusal } from './write-rules.ts';
import { differenceSteps, type Difference } from './preview-diff.ts';

/**
 * The dry run of a write request (docs/api.md §12.3): what each item would answer, and which
 * (user, permission) pairs would gain or lose `has_permission`, computed in memory from the
 * tenant's graph without changing it. Only the pairs the items touch are looked at, each decided
 * from the graph plus the batch's edits, so an ordinary batch costs about as many checks; a huge
 * difference is worked through in steps that {@link previewAsync} spreads over the event loop.
 */

/**
 * What the preview reads of a tenant's graph. Every "active" answer is at the instant the preview
 * is computed for: the caller passes that instant as `nowMicros` (the graph's own clock reading).
 */
export interface PreviewGraph {
  readonly revision: number;
  /** Whether the role exists. */
  hasRole(role: string): boolean;
  /** The edge's window when the grant exists (active or pending; `{}` when permanent), else undefined. */
  grantEdge(role: string, permission: string): Window | undefined;
  /** Same for a membership. */
  memberEdge(user: string, role: string): Window | undefined;
  /** The role's active permissions, sorted by code point; undefined: no such role. */
  rolePermissions(role: string): readonly string[] | undefined;
  /** The role's active members, sorted by code point; undefined: no such role. */
  members(role: string): readonly string[] | undefined;
  /** The user's active roles (any order). */
  userRoles(user: string): readonly string[];
  check(user: string, permission: string): boolean;
}

/** One item's answer, as its single route would give it: 201/200, or 404/409 and why; 424 after the first failure. */
export interface ItemResult {
  readonly status: number;
  readonly error?: string;
}

export interface UserPermission {
  readonly user: string;
  readonly permission: string;
}

/** docs/api.md §12.3's answer but for the revision, which the route adds. */
export interface Preview {
  readonly valid: boolean;
  readonly results: readonly ItemResult[];
  readonly gained: readonly UserPermission[];
  readonly lost: readonly UserPermission[];
  readonly gained_count: number;
  readonly lost_count: number;
  readonly truncated: boolean;
}

/**
 * An item the route could not make a change of (a malformed window, an `expires_at` already
 * past): it answers 400 with `error` in its place, and fails the batch like any refusal.
 */
export interface InvalidItem {
  readonly invalid: string;
}

export type PreviewItem = Change | InvalidItem;

export interface PreviewOptions {
  /** At most this many pairs in `gained` and in `lost` (the counts stay exact). */
  readonly listLimit?: number;
  /** {@link previewAsync}: how long one slice of work may hold the event loop before it yields. */
  readonly sliceMillis?: number;
}

export const PREVIEW_LIST_LIMIT = 10_000;
const DEFAULT_SLICE_MILLIS = 4;

/** The graph changed while an asynchronous preview was waiting its turn: its answer would mix two revisions. */
export class PreviewOutdatedError extends Error {
  constructor(
    readonly from: number,
    readonly to: number,
  ) {
    super(`the graph moved from revision ${from} to ${to} during the preview`);
    this.name = 'PreviewOutdatedError';
  }
}

/** The preview, computed at once (a batch known to be small, or a thread of its own). */
export function preview(graph: PreviewGraph, items: readonly PreviewItem[], nowMicros: number, options: PreviewOptions = {}): Preview {
  const steps = previewSteps(graph, items, nowMicros, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * The preview, yielding the event loop whenever a slice of work has held it for `sliceMillis`: an
 * ordinary batch ends within its first slice and never waits. The graph must stay at its revision
 * meanwhile; when a write lands between two slices the preview fails with
 * {@link PreviewOutdatedError} (compute it again at the new revision).
 */
export async function previewAsync(graph: PreviewGraph, items: readonly PreviewItem[], nowMicros: number, options: PreviewOptions = {}): Promise<Preview> {
  const sliceMillis = options.sliceMillis ?? DEFAULT_SLICE_MILLIS;
  const revision = graph.revision;
  const steps = previewSteps(graph, items, nowMicros, options);
  let sliceStart = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - sliceStart < sliceMillis) continue;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (graph.revision !== revision) throw new PreviewOutdatedError(revision, graph.revision);
    sliceStart = performance.now();
  }
}

/** The preview as steps: each `yield` ends a bounded unit of work, a point where the caller may pause. */
export function* previewSteps(graph: PreviewGraph, items: readonly PreviewItem[], nowMicros: number, options: PreviewOptions = {}): Generator<void, Preview> {
  const edits = new BatchEdits(graph);
  const results: ItemResult[] = [];
  let failed = false;
  for (const item of items) {
    if (failed) results.push({ status: 424 });
    else results.push('invalid' in item ? { status: 400, error: item.invalid } : edits.apply(item));
    failed = (results.at(-1)?.status ?? 0) >= 400;
  }
  if (failed) return { valid: false, results, gained: [], lost: [], gained_count: 0, lost_count: 0, truncated: false };
  const difference: Difference = yield* differenceSteps(graph, edits.roles, nowMicros, options.listLimit ?? PREVIEW_LIST_LIMIT);
  return { valid: true, results, ...difference };
}

function successStatus(change: Change): number {
  return change.op === 'role.create' || change.op === 'permission.grant' || change.op === 'membership.add' ? 201 : 200;
}

function resultOf(change: Change, why: Refusal | undefined): ItemResult {
  return why === undefined ? { status: successStatus(change) } : { status: ERRORS[why.code].status, error: why.message };
}

// ---- the batch's edits over the graph ----------------------------------------------------------

/** A window that is always open: an edge without bounds. */
const PERMANENT: Window = {};

/**
 * What the batch did to one role, over what the graph holds: an entry of `grants` or `members`
 * replaces the graph's edge (its window, or null when removed); `cleared` says the role was
 * deleted, taking every edge the graph gave it (entries made after that are the new role's).
 */
export interface RoleEdits {
  exists: boolean;
  cleared: boolean;
  readonly grants: Map<string, Window | null>;
  readonly members: Map<string, Window | null>;
}

/** The batch's items applied in order over the graph, each judged by the write rules against the state the earlier ones left. */
class BatchEdits {
  readonly roles = new Map<string, RoleEdits>();
  readonly #graph: PreviewGraph;

  constructor(graph: PreviewGraph) {
    this.#graph = graph;
  }

  /** The item's answer: its refusal, or its success once applied. */
  apply(change: Change): ItemResult {
    return resultOf(change, this.#apply(change));
  }

  /** Why `change` would be refused now, or undefined once it has been applied. */
  #apply(change: Change): Refusal | undefined {
    const roleExists = this.roles.get(change.role)?.exists ?? this.#graph.hasRole(change.role);
    switch (change.op) {
      case 'role.create':
      case 'role.delete': {
        const why = refusal(change, { roleExists });
        if (why === undefined) this.#applyRole(change.op, this.#edits(change.role));
        return why;
      }
      case 'permission.grant':
      case 'permission.revoke': {
        const why = refusal(change, { roleExists, grantExists: roleExists && this.#grantExists(change.role, change.permission) });
        if (why === undefined)
          this.#edits(change.role).grants.set(change.permission, change.op === 'permission.grant' ? (windowOf(change) ?? PERMANENT) : null);
        return why;
      }
      case 'membership.add':
      case 'membership.remove': {
        const why = refusal(change, { roleExists, memberExists: roleExists && this.#memberExists(change.user, change.role) });
        if (why === undefined) this.#edits(change.role).members.set(change.user, change.op === 'membership.add' ? (windowOf(change) ?? PERMANENT) : null);
        return why;
      }
      default:
        throw new Error(`a preview takes the six ops of /api/writes, not ${change.op}`);
    }
  }

  #applyRole(op: 'role.create' | 'role.delete', edits: RoleEdits): void {
    edits.exists = op === 'role.create';
    if (op === 'role.create') return;
    edits.cleared = true;
    edits.grants.clear();
    edits.members.clear();
  }

  #edits(role: string): RoleEdits {
    let edits = this.roles.get(role);
    if (edits === undefined) this.roles.set(role, (edits = { exists: this.#graph.hasRole(role), cleared: false, grants: new Map(), members: new Map() }));
    return edits;
  }

  #grantExists(role: string, permission: string): boolean {
    const edits = this.roles.get(role);
    const edited = edits?.grants.get(permission);
    if (edited !== undefined) return edited !== null;
    return edits?.cleared !== true && this.#graph.grantEdge(role, permission) !== undefined;
  }

  #memberExists(user: string, role: string): boolean {
    const edits = this.roles.get(role);
    const edited = edits?.members.get(user);
    if (edited !== undefined) return edited !== null;
    return edits?.cleared !== true && this.#graph.memberEdge(user, role) !== undefined;
  }
}
