/**
 * The data set of a scenario, generated from its seed: the changes that build one client's data,
 * the reference model (support/rbac-model.ts) that says what every answer must be, and the
 * requests' arguments drawn from a bounded Pareto law (a few hot users and permissions, a long tail).
 */
import type { Change } from '../../src/authz/changes.ts';
import { RbacModel } from '../../support/rbac-model.ts';
import type { DataShape } from './scenario.ts';

/** The role the write route grants to and revokes from: it has no members, so no answer depends on it. */
export const WRITE_ROLE = 'bench-writes';
export const HOT_ROLE = 'hot-readers';
export const HOT_PERMISSION = 'hot.report:read';

import { prng } from '../../support/prng.ts';

export { prng };

/** An index of [0, n) from a bounded Pareto law of shape `alpha`: index 0 is the most frequent. */
export function paretoIndex(rand: () => number, n: number, alpha: number): number {
  const low = (1 / (n + 1)) ** alpha;
  const x = (1 - rand() * (1 - low)) ** (-1 / alpha);
  return Math.min(n - 1, Math.floor(x) - 1);
}

export interface Dataset {
  shape: DataShape;
  users: string[];
  roles: string[];
  permissions: string[];
  /** rolesOf[user] = role indices; permsOf[role] = permission indices. */
  rolesOf: number[][];
  permsOf: number[][];
  changes: Change[];
  model: RbacModel;
  /** Edges seeded with a window (`shape.windowed`): active now, or pending (answering false). */
  windows: { active: number; pending: number };
}

const pad = (i: number, width: number): string => String(i).padStart(width, '0');

function pickDistinct(rand: () => number, n: number, k: number): number[] {
  const chosen = new Set<number>();
  while (chosen.size < Math.min(k, n)) chosen.add(Math.floor(rand() * n));
  return [...chosen];
}

const HOUR_US = 3_600_000_000;

/**
 * What gives a share `windowed` of the grants and memberships a window: active now (opened an
 * hour before `fromUs`, closing 4 to 24 hours after it) or, a share `pending` of them, opening 2 to
 * 12 hours after it. Far enough that no boundary passes during a run (its change would move the
 * revision the answers are checked at), near enough to be an ordinary timer. Drawn from a stream
 * of their own, so the edges are exactly those of the same shape without windows.
 */
function windowing(shape: DataShape, fromUs: number, counts: Dataset['windows']): (c: Change) => Change {
  const share = shape.windowed ?? 0;
  const rand = prng(shape.seed + 977);
  return (c) => {
    if ((c.op !== 'permission.grant' && c.op !== 'membership.add') || !(rand() < share)) return c;
    const ahead = 2 * HOUR_US + Math.floor(rand() * 10 * HOUR_US);
    if (rand() < (shape.pending ?? 0)) {
      counts.pending++;
      return { ...c, notBefore: fromUs + ahead, expiresAt: fromUs + ahead + 12 * HOUR_US };
    }
    counts.active++;
    return { ...c, notBefore: fromUs - HOUR_US, expiresAt: fromUs + 2 * ahead };
  };
}

export function generate(given: DataShape): Dataset {
  // Windows are laid out from the first generation's clock; the shape carries it to the load generator's processes.
  const shape = (given.windowed ?? 0) > 0 && given.windowsFromUs === undefined ? { ...given, windowsFromUs: Date.now() * 1000 } : given;
  const rand = prng(shape.seed);
  // Names use the characters of docs/api.md §4; users are e-mail-like, as in the specification.
  const users = Array.from({ length: shape.users }, (_, i) => `user${pad(i, 7)}@example.com`);
  const roles = Array.from({ length: shape.roles }, (_, i) => `role-${pad(i, 5)}`);
  const permissions = Array.from({ length: shape.permissions }, (_, i) => `svc${i % 17}.res-${pad(i, 6)}:read`);
  const [minGrants, maxGrants] = shape.grantsPerRole;
  const permsOf = roles.map(() => pickDistinct(rand, shape.permissions, minGrants + Math.floor(rand() * (maxGrants - minGrants + 1))));
  const rolesOf = users.map(() => pickDistinct(rand, shape.roles, shape.rolesPerUser));
  const windows = { active: 0, pending: 0 };
  const timed = windowing(shape, shape.windowsFromUs ?? 0, windows);
  const changes: Change[] = [{ op: 'role.create', role: WRITE_ROLE, description: 'written to by the benchmark' }];
  roles.forEach((role, r) => {
    changes.push({ op: 'role.create', role, description: `benchmark role ${r}` });
    for (const p of permsOf[r] ?? []) changes.push(timed({ op: 'permission.grant', role, permission: permissions[p] ?? '' }));
  });
  users.forEach((user, u) => {
    for (const r of rolesOf[u] ?? []) changes.push(timed({ op: 'membership.add', user, role: roles[r] ?? '' }));
  });
  if (shape.hotHolders > 0) {
    changes.push({ op: 'role.create', role: HOT_ROLE, description: 'holders of the hot permission' });
    changes.push({ op: 'permission.grant', role: HOT_ROLE, permission: HOT_PERMISSION });
    for (let u = 0; u < shape.hotHolders; u++) changes.push({ op: 'membership.add', user: `hot${pad(u, 7)}@example.com`, role: HOT_ROLE });
  }
  return { shape, users, roles, permissions, rolesOf, permsOf, changes, model: RbacModel.of(changes), windows };
}

export interface Probe {
  user: string;
  permission: string;
  expected: boolean;
}

/**
 * `count` has_permission probes, users and permissions drawn from the Pareto law; a share
 * `denials` of them asks for a permission none of the user's roles holds (false), the rest for one
 * a role of the user holds: true, unless a window of the data set keeps that edge closed now
 * (`expected` is the model's answer when drawn). Drawn from the edges alone, so a shape with and
 * without windows gives the same probes.
 */
export function probes(ds: Dataset, count: number, denials: number, seed: number): Probe[] {
  const rand = prng(seed);
  const { shape } = ds;
  const out: Probe[] = [];
  for (let tries = 0; out.length < count && tries < count * 50; tries++) {
    const u = paretoIndex(rand, shape.users, shape.pareto);
    const user = ds.users[u] ?? '';
    const deny = rand() < denials;
    const roles = ds.rolesOf[u] ?? [];
    let p: number;
    if (deny) {
      p = paretoIndex(rand, shape.permissions, shape.pareto);
      if (roles.some((r) => (ds.permsOf[r] ?? []).includes(p))) continue;
    } else {
      const perms = ds.permsOf[roles[Math.floor(rand() * roles.length)] ?? -1] ?? [];
      if (perms.length === 0) continue;
      p = perms[paretoIndex(rand, perms.length, shape.pareto)] ?? -1;
    }
    const permission = ds.permissions[p] ?? '';
    out.push({ user, permission, expected: ds.model.hasPermission(user, permission) });
  }
  if (out.length < count) throw new Error(`could draw only ${out.length} of ${count} probes from this data set (too few permissions left to deny?)`);
  return out;
}

/** Users drawn from the Pareto law (user_permissions). */
export function paretoUsers(ds: Dataset, count: number, seed: number): string[] {
  const rand = prng(seed);
  return Array.from({ length: count }, () => ds.users[paretoIndex(rand, ds.shape.users, ds.shape.pareto)] ?? '');
}

/**
 * How many of `list` reach their permission through an edge with a window (on some role of the
 * user that holds it), and how many of those answer false now because every such path is closed
 * (pending): what share of a load the windows are in the way of.
 */
export function windowReach(ds: Dataset, list: readonly Probe[]): { through: number; closed: number } {
  let through = 0;
  let closed = 0;
  for (const p of list) {
    const paths = [...ds.model.roles].filter(([, s]) => s.members.has(p.user) && s.perms.has(p.permission)).map(([role]) => role);
    if (!paths.some((role) => ds.model.memberWindow(p.user, role) !== undefined || ds.model.grantWindow(role, p.permission) !== undefined)) continue;
    through++;
    if (!p.expected) closed++;
  }
  return { through, closed };
}
