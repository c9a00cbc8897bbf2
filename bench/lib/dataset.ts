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
}

const pad = (i: number, width: number): string => String(i).padStart(width, '0');

function pickDistinct(rand: () => number, n: number, k: number): number[] {
  const chosen = new Set<number>();
  while (chosen.size < Math.min(k, n)) chosen.add(Math.floor(rand() * n));
  return [...chosen];
}

export function generate(shape: DataShape): Dataset {
  const rand = prng(shape.seed);
  // Names use the characters of docs/api.md §4; users are e-mail-like, as in the specification.
  const users = Array.from({ length: shape.users }, (_, i) => `user${pad(i, 7)}@example.com`);
  const roles = Array.from({ length: shape.roles }, (_, i) => `role-${pad(i, 5)}`);
  const permissions = Array.from({ length: shape.permissions }, (_, i) => `svc${i % 17}.res-${pad(i, 6)}:read`);
  const [minGrants, maxGrants] = shape.grantsPerRole;
  const permsOf = roles.map(() => pickDistinct(rand, shape.permissions, minGrants + Math.floor(rand() * (maxGrants - minGrants + 1))));
  const rolesOf = users.map(() => pickDistinct(rand, shape.roles, shape.rolesPerUser));
  const changes: Change[] = [{ op: 'role.create', role: WRITE_ROLE, description: 'written to by the benchmark' }];
  roles.forEach((role, r) => {
    changes.push({ op: 'role.create', role, description: `benchmark role ${r}` });
    for (const p of permsOf[r] ?? []) changes.push({ op: 'permission.grant', role, permission: permissions[p] ?? '' });
  });
  users.forEach((user, u) => {
    for (const r of rolesOf[u] ?? []) changes.push({ op: 'membership.add', user, role: roles[r] ?? '' });
  });
  if (shape.hotHolders > 0) {
    changes.push({ op: 'role.create', role: HOT_ROLE, description: 'holders of the hot permission' });
    changes.push({ op: 'permission.grant', role: HOT_ROLE, permission: HOT_PERMISSION });
    for (let u = 0; u < shape.hotHolders; u++) changes.push({ op: 'membership.add', user: `hot${pad(u, 7)}@example.com`, role: HOT_ROLE });
  }
  return { shape, users, roles, permissions, rolesOf, permsOf, changes, model: RbacModel.of(changes) };
}

export interface Probe {
  user: string;
  permission: string;
  expected: boolean;
}

/**
 * `count` has_permission probes, users and permissions drawn from the Pareto law; a share
 * `denials` of them is false (a permission none of the user's roles holds), the rest true.
 */
export function probes(ds: Dataset, count: number, denials: number, seed: number): Probe[] {
  const rand = prng(seed);
  const { shape } = ds;
  const out: Probe[] = [];
  for (let tries = 0; out.length < count && tries < count * 50; tries++) {
    const u = paretoIndex(rand, shape.users, shape.pareto);
    const user = ds.users[u] ?? '';
    const deny = rand() < denials;
    let permission: string;
    if (deny) {
      permission = ds.permissions[paretoIndex(rand, shape.permissions, shape.pareto)] ?? '';
    } else {
      const roles = ds.rolesOf[u] ?? [];
      const perms = ds.permsOf[roles[Math.floor(rand() * roles.length)] ?? -1] ?? [];
      if (perms.length === 0) continue;
      permission = ds.permissions[perms[paretoIndex(rand, perms.length, shape.pareto)] ?? -1] ?? '';
    }
    const expected = ds.model.hasPermission(user, permission);
    if (expected === deny) continue;
    out.push({ user, permission, expected });
  }
  if (out.length < count) throw new Error(`could draw only ${out.length} of ${count} probes from this data set (too few permissions left to deny?)`);
  return out;
}

/** Users drawn from the Pareto law (user_permissions). */
export function paretoUsers(ds: Dataset, count: number, seed: number): string[] {
  const rand = prng(seed);
  return Array.from({ length: count }, () => ds.users[paretoIndex(rand, ds.shape.users, ds.shape.pareto)] ?? '');
}
