/**
 * A brute-force model of the AuthZEN mapping (docs/authzen.md) and of explain (§5), written
 * from the contract's words alone, with no index and no shortcut, over the reference model of the
 * client's roles (rbac-model.ts): the service's answers must equal it. Plus a seeded random
 * client and a way to write it through /api.
 */
import type { RbacClient } from '../../src/client/index.ts';
import { prng } from '../../support/prng.ts';
import { byCodePoint, RbacModel, sorted } from '../../support/rbac-model.ts';

export const users = (m: RbacModel): string[] => m.userNames();

/** The decision for user `user` (already mapped from the subject), action `a`, resource (t, i). */
export function evaluate(m: RbacModel, user: string, a: string, t: string, i: string): boolean {
  if (a.includes(':')) return false;
  const candidates = t.includes(':') ? [a] : [a, `${t}:${a}`, `${t}:${i}:${a}`];
  return candidates.some((c) => m.hasPermission(user, c));
}

/** How a permission name reads: [type, id, action], type and id '' where absent. */
function reading(p: string): [string | undefined, string | undefined, string] {
  const first = p.indexOf(':');
  const last = p.lastIndexOf(':');
  if (first < 0) return [undefined, undefined, p];
  if (first === last) return [p.slice(0, first), undefined, p.slice(first + 1)];
  return [p.slice(0, first), p.slice(first + 1, last), p.slice(last + 1)];
}

export function knownResources(m: RbacModel, t: string): string[] {
  return sorted(
    m.permissionNames().flatMap((p) => {
      const [type, id] = reading(p);
      // AuthZEN ids and names are non-empty: `t::a` names no resource.
      return type === t && id !== undefined && id !== '' ? [id] : [];
    }),
  );
}

export const searchSubjects = (m: RbacModel, a: string, t: string, i: string): string[] => users(m).filter((u) => evaluate(m, u, a, t, i));
export const searchResources = (m: RbacModel, user: string, a: string, t: string): string[] => knownResources(m, t).filter((i) => evaluate(m, user, a, t, i));
/** Every action named anywhere, kept when it evaluates true. */
export const searchActions = (m: RbacModel, user: string, t: string, i: string): string[] =>
  sorted(m.permissionNames().map((p) => reading(p)[2])).filter((a) => a !== '' && evaluate(m, user, a, t, i));

export function explain(
  m: RbacModel,
  user: string,
  permission: string,
): { has_permission: boolean; granted_by: string[]; remedies: Array<{ role: string; permissions: number }> } {
  const granting = m.roleNamesWith(permission);
  const mine = new Set(m.userRoleNames(user));
  const grantedBy = granting.filter((r) => mine.has(r));
  if (grantedBy.length > 0) return { has_permission: true, granted_by: grantedBy, remedies: [] };
  const remedies = granting
    .map((role) => ({ role, permissions: m.roles.get(role)?.perms.size ?? 0 }))
    .sort((x, y) => x.permissions - y.permissions || byCodePoint(x.role, y.role))
    .slice(0, 10);
  return { has_permission: false, granted_by: [], remedies };
}

export const TYPES = ['doc', 'img'] as const;
export const ACTIONS = ['read', 'write', 'share'] as const;

/** Permission names of every reading: global, type-wide, per resource (ids with colons too). */
export function permissionPool(resources: number): string[] {
  const pool: string[] = [...ACTIONS];
  for (const t of TYPES) {
    for (const a of ACTIONS) pool.push(`${t}:${a}`);
    for (let i = 0; i < resources; i++) pool.push(`${t}:${t[0]}${i}:${ACTIONS[i % 3] ?? 'read'}`, `${t}:${t[0]}${i}:read`);
    pool.push(`${t}:x:y:read`, `${t}::read`, `${t}:`);
  }
  return [...new Set(pool)];
}

/** A random client: `roles` roles with random grants, `userCount` users with random memberships. */
export function randomModel(seed: number, roles: number, userCount: number, resources: number): RbacModel {
  const rnd = prng(seed);
  const pool = permissionPool(resources);
  const m = new RbacModel();
  for (let r = 0; r < roles; r++) {
    const role = `role${r}`;
    m.apply({ op: 'role.create', role, description: '' });
    // Rare globals, more type-wide, most per resource: searches then have results of every kind.
    for (const permission of pool.filter((p) => rnd() < (p.includes(':') ? 0.12 : 0.05))) m.apply({ op: 'permission.grant', role, permission });
  }
  for (let u = 0; u < userCount; u++) {
    for (let r = 0; r < roles; r++) if (rnd() < 0.25) m.apply({ op: 'membership.add', user: `u${u}`, role: `role${r}` });
  }
  return m;
}

/** Writes the model through /api: roles, grants, memberships. */
export async function seed(client: RbacClient, m: RbacModel): Promise<void> {
  for (const [role, { perms }] of m.roles) {
    const made = await client.createRole(role);
    if (made.status !== 201) throw new Error(`create ${role}: ${made.status}`);
    await Promise.all(
      [...perms].map(async (p) => {
        const r = await client.grant(role, p);
        if (r.status !== 201) throw new Error(`grant ${role} ${p}: ${r.status}`);
      }),
    );
  }
  await Promise.all(
    [...m.roles].flatMap(([role, { members }]) =>
      [...members].map(async (u) => {
        const r = await client.addMember(u, role);
        if (r.status !== 201) throw new Error(`member ${u} ${role}: ${r.status}`);
      }),
    ),
  );
}
