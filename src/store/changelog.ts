import type { Change } from '../authz/changes.ts';

/** The columns of a changelog row, as any adapter reads them. */
export interface ChangelogColumns {
  readonly op: unknown;
  readonly role: unknown;
  readonly permission?: unknown;
  readonly user?: unknown;
  /** Already decoded by the adapter (each stores it its own way). */
  readonly description: string;
}

/** Rebuilds a change from its changelog row (the same for every adapter). */
export function changeFromRow(r: ChangelogColumns): Change {
  const role = String(r.role);
  switch (r.op) {
    case 'role.create':
      return { op: 'role.create', role, description: r.description };
    case 'role.delete':
      return { op: 'role.delete', role };
    case 'permission.grant':
    case 'permission.revoke':
      return { op: r.op, role, permission: String(r.permission) };
    case 'membership.add':
    case 'membership.remove':
      return { op: r.op, role, user: String(r.user) };
    default:
      throw new Error(`unknown op in changelog: ${String(r.op)}`);
  }
}
