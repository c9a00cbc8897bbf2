/**
 * The benchmark's data set, generated deterministically from a seed, and the in-bench model that
 * answers has_permission exactly as the gateway must.
 */

/** mulberry32: small, fast, good enough to pick benchmark data; same seed, same data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface DatasetShape {
  seed: number;
  users: number;
  roles: number;
  permissions: number;
  rolesPerUser: number;
  minGrants: number;
  maxGrants: number;
}

export interface Dataset {
  users: string[];
  roles: string[];
  permissions: string[];
  /** grants[role] = permission indices granted to it. */
  grants: number[][];
  /** memberships[user] = role indices the user belongs to. */
  memberships: number[][];
  /** granted[role * permissions + permission] = 1 when granted. */
  granted: Uint8Array;
}

/** `count` distinct integers of [0, n), in random order. */
function pickDistinct(rand: () => number, n: number, count: number): number[] {
  const chosen = new Set<number>();
  const k = Math.min(count, n);
  while (chosen.size < k) chosen.add(Math.floor(rand() * n));
  return [...chosen];
}

const pad = (i: number, width: number): string => String(i).padStart(width, '0');

export function generate(shape: DatasetShape): Dataset {
  const rand = prng(shape.seed);
  // Names use the characters of CONTRACT.md §4; users are e-mail-like, as in the specification.
  const users = Array.from({ length: shape.users }, (_, i) => `user${pad(i, 6)}@example.com`);
  const roles = Array.from({ length: shape.roles }, (_, i) => `role-${pad(i, 4)}`);
  const permissions = Array.from({ length: shape.permissions }, (_, i) => `svc${i % 17}.res-${pad(i, 5)}:read`);
  const granted = new Uint8Array(shape.roles * shape.permissions);
  const grants = roles.map((_, r) => {
    const span = shape.maxGrants - shape.minGrants + 1;
    const picked = pickDistinct(rand, shape.permissions, shape.minGrants + Math.floor(rand() * span));
    for (const p of picked) granted[r * shape.permissions + p] = 1;
    return picked;
  });
  const memberships = users.map(() => pickDistinct(rand, shape.roles, shape.rolesPerUser));
  return { users, roles, permissions, grants, memberships, granted };
}

/** The answer the gateway must give for has_permission(user index, permission index). */
export function hasPermission(ds: Dataset, user: number, permission: number): boolean {
  const roles = ds.memberships[user];
  if (roles === undefined) return false;
  const width = ds.permissions.length;
  for (const r of roles) if (ds.granted[r * width + permission] === 1) return true;
  return false;
}

export interface Probe {
  user: string;
  permission: string;
  expected: boolean;
}

/**
 * `count` probes, about half of them true (a random user's random role's random permission), the
 * rest false (drawn until the model says false), and one in 32 about a user that does not exist.
 */
export function probes(ds: Dataset, count: number, seed: number): Probe[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => {
    const x = xs[Math.floor(rand() * xs.length)];
    if (x === undefined) throw new Error('empty list');
    return x;
  };
  const out: Probe[] = [];
  while (out.length < count) {
    const u = Math.floor(rand() * ds.users.length);
    const user = ds.users[u] ?? '';
    if (out.length % 32 === 31) {
      out.push({ user: `ghost${out.length}@example.com`, permission: pick(ds.permissions), expected: false });
    } else if (out.length % 2 === 0) {
      const perms = ds.grants[pick(ds.memberships[u] ?? [])] ?? [];
      if (perms.length === 0) continue;
      out.push({ user, permission: ds.permissions[pick(perms)] ?? '', expected: true });
    } else {
      const p = Math.floor(rand() * ds.permissions.length);
      if (hasPermission(ds, u, p)) continue;
      out.push({ user, permission: ds.permissions[p] ?? '', expected: false });
    }
  }
  return out;
}

/** The path the typed client sends for a probe (segments percent-encoded). */
export function probePath(p: Probe): string {
  return `/api/has_permission/${encodeURIComponent(p.user)}/${encodeURIComponent(p.permission)}`;
}

export function writeCount(ds: Dataset): number {
  let n = ds.roles.length;
  for (const g of ds.grants) n += g.length;
  for (const m of ds.memberships) n += m.length;
  return n;
}
