/**
 * POST /api/dry-run in the request mix (docs/api.md §12.3): batches of grants and memberships the
 * data set does not hold yet, so every item would answer 201 and the batch is valid, and the
 * preview the reference model says each must get: the (user, permission) pairs that would gain
 * has_permission, none lost. An ordinary batch, the kind a provisioning job previews before it
 * applies it; its answer is set beside a batch check of the same size.
 */
import { byCodePoint, type RbacModel } from '../../support/rbac-model.ts';
import { prng, type Dataset } from './dataset.ts';

export type PreviewItem = { op: 'permission.grant'; role: string; permission: string } | { op: 'membership.add'; user: string; role: string };

export interface UserPermission {
  user: string;
  permission: string;
}

export interface DryRunBatch {
  items: PreviewItem[];
  /** The request body, formatted once. */
  body: string;
}

/** At most this many pairs in `gained` and in `lost`; the counts stay exact. */
export const PREVIEW_LIST_LIMIT = 10_000;

/**
 * `count` batches of `size` items each: about half grants of a permission the role does not hold,
 * half memberships the user does not have (neither active nor pending, in the model), drawn
 * uniformly, none twice in a batch, in random order.
 */
export function dryRunBatches(ds: Dataset, count: number, size: number, seed: number): DryRunBatch[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  return Array.from({ length: count }, () => {
    const items: PreviewItem[] = [];
    const seen = new Set<string>();
    for (let tries = 0; items.length < size; tries++) {
      if (tries > size * 50) throw new Error(`could draw only ${items.length} of ${size} new grants and memberships from this data set`);
      const role = pick(ds.roles);
      const state = ds.model.roles.get(role);
      const item: PreviewItem =
        rand() < 0.5 ? { op: 'permission.grant', role, permission: pick(ds.permissions) } : { op: 'membership.add', user: pick(ds.users), role };
      const key = item.op === 'permission.grant' ? `p\0${role}\0${item.permission}` : `m\0${role}\0${item.user}`;
      const held = item.op === 'permission.grant' ? state?.perms.has(item.permission) : state?.members.has(item.user);
      if (held !== false || seen.has(key)) continue;
      seen.add(key);
      items.push(item);
    }
    return { items, body: JSON.stringify({ writes: items }) };
  });
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * The pairs that would gain has_permission from the model's state now to right after `items`
 * (grants and memberships only: nothing is lost), sorted by user then permission in code unit
 * order. Only the users an item can reach are looked at: those added to a role, and the active
 * members of a role granted something.
 */
export function gainedPairs(model: RbacModel, items: readonly PreviewItem[]): UserPermission[] {
  const grants = new Map<string, string[]>();
  const adds = new Map<string, string[]>();
  for (const it of items) {
    if (it.op === 'permission.grant') push(grants, it.role, it.permission);
    else push(adds, it.user, it.role);
  }
  const rolesOfUser = new Map<string, string[]>();
  for (const role of model.roles.keys()) for (const user of model.activeMembers(role)) push(rolesOfUser, user, role);
  const permsOfRole = new Map<string, string[]>();
  const active = (role: string): string[] => {
    let perms = permsOfRole.get(role);
    if (perms === undefined) permsOfRole.set(role, (perms = model.activePerms(role)));
    return perms;
  };
  const users = new Set([...adds.keys(), ...[...grants.keys()].flatMap((role) => model.activeMembers(role))]);
  const gained: UserPermission[] = [];
  for (const user of users) {
    const held = rolesOfUser.get(user) ?? [];
    const before = new Set(held.flatMap(active));
    const after = new Set<string>();
    for (const role of [...held, ...(adds.get(user) ?? [])]) for (const p of [...active(role), ...(grants.get(role) ?? [])]) after.add(p);
    for (const permission of after) if (!before.has(permission)) gained.push({ user, permission });
  }
  return gained.sort((a, b) => byCodePoint(a.user, b.user) || byCodePoint(a.permission, b.permission));
}

interface PreviewData {
  revision?: unknown;
  valid?: unknown;
  results?: Array<{ status?: unknown }>;
  gained?: unknown[];
  lost?: unknown[];
  gained_count?: unknown;
  lost_count?: unknown;
  truncated?: unknown;
}

/** The model's preview of each batch, formatted once for all the requests that send it (the data set does not change under a dry run). */
const expectedOf = new WeakMap<DryRunBatch, { count: number; list: string }>();

/**
 * A judge of the answer to `batch`: 200, valid, every item 201, nothing lost, the gained count
 * the model's, the list its first {@link PREVIEW_LIST_LIMIT} pairs (truncated exactly when there
 * are more), at a revision `revisionOk` accepts. `gained` is asked once per batch, when an answer is first checked.
 */
export function dryRunJudge(
  batch: DryRunBatch,
  gained: () => UserPermission[],
  revisionOk: (revision: number) => boolean,
): (status: number, body: string) => string | undefined {
  const what = `dry-run of ${batch.items.length}`;
  return (status, body) => {
    if (status !== 200) return `${what}: status ${status} ${body.slice(0, 200)}`;
    let d: PreviewData;
    try {
      d = (JSON.parse(body) as { data?: PreviewData }).data ?? {};
    } catch {
      return `${what}: body is not JSON: ${body.slice(0, 200)}`;
    }
    let want = expectedOf.get(batch);
    if (want === undefined) {
      const all = gained();
      expectedOf.set(batch, (want = { count: all.length, list: JSON.stringify(all.slice(0, PREVIEW_LIST_LIMIT)) }));
    }
    const statuses = d.results?.map((r) => r.status) ?? [];
    const problems = [
      typeof d.revision === 'number' && revisionOk(d.revision) ? '' : `revision ${String(d.revision)}`,
      d.valid === true ? '' : `valid ${String(d.valid)}`,
      statuses.length === batch.items.length && statuses.every((s) => s === 201) ? '' : `item statuses ${JSON.stringify(statuses).slice(0, 80)}`,
      d.lost_count === 0 && d.lost?.length === 0 ? '' : `lost_count ${String(d.lost_count)}`,
      d.gained_count === want.count ? '' : `gained_count ${String(d.gained_count)}, the model says ${want.count}`,
      d.truncated === want.count > PREVIEW_LIST_LIMIT ? '' : `truncated ${String(d.truncated)}`,
      JSON.stringify(d.gained) === want.list ? '' : `gained ${JSON.stringify(d.gained)?.slice(0, 120)}, the model says ${want.list.slice(0, 120)}`,
    ].filter((p) => p !== '');
    return problems.length === 0 ? undefined : `${what}: ${problems.join('; ')}`;
  };
}
