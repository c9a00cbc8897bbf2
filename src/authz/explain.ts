import type { TenantGraph } from './graph.ts';

/** At most this many remedies are offered (docs/api.md §6). */
const MAX_REMEDIES = 10;

/** Why a user holds a permission, or what would grant it (GET /api/explain, docs/api.md §6). */
export interface Explanation {
  readonly has_permission: boolean;
  /** The user's roles that grant the permission, sorted. */
  readonly granted_by: readonly string[];
  /** When denied: the roles that grant it, fewest permissions first, then by name; else empty. */
  readonly remedies: ReadonlyArray<{ readonly role: string; readonly permissions: number }>;
}

/**
 * Explains one decision from the graph at its revision. The remedies are least privilege first:
 * joining the role with the fewest permissions that grants it gives the user the least else.
 */
export function explain(g: TenantGraph, user: string, permission: string): Explanation {
  const granting = g.whichRolesCan(permission);
  const mine = new Set(g.userRoles(user));
  const grantedBy = granting.filter((role) => mine.has(role));
  if (grantedBy.length > 0) return { has_permission: true, granted_by: grantedBy, remedies: [] };
  const remedies = granting
    .map((role) => ({ role, permissions: g.permissionCount(role) ?? 0 }))
    .sort((a, b) => a.permissions - b.permissions || (a.role < b.role ? -1 : a.role > b.role ? 1 : 0))
    .slice(0, MAX_REMEDIES);
  return { has_permission: false, granted_by: [], remedies };
}
