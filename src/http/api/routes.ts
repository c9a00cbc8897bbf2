import { explain } from '../../authz/explain.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import { roleNotFound, refusalError } from '../../authz/write-rules.ts';
import { appError } from '../../errors/index.ts';
import type { Route } from './route-types.ts';
import { WORKFLOW_ROUTES } from './workflow-routes.ts';

/** `v ?? throw 404` for reads whose role must exist: the refusal a write on that role would get. */
function known<T>(v: T | undefined, role: string): T {
  if (v === undefined) throw refusalError(roleNotFound(role));
  return v;
}

const asNames = (_g: TenantGraph, names: readonly string[]) => names.map((name) => ({ name }));
const asUsers = (_g: TenantGraph, names: readonly string[]) => names.map((user) => ({ user }));
const asRoles = (_g: TenantGraph, names: readonly string[]) => names.map((role) => ({ role }));
const p0 = (p: readonly string[]): string => p[0] as string;
const p1 = (p: readonly string[]): string => p[1] as string;

/** The routes of the specification and the contract's additions (docs/api.md §6), workflows last. */
export const ROUTES: readonly Route[] = [
  {
    id: 'roles', kind: 'list', method: 'GET', path: '/api/roles', params: [], status: 200, message: 'OK', data: 'roles',
    summary: "The client's roles with their descriptions",
    names: (g) => g.roles(),
    items: (g, names) => names.map((role) => ({ role, description: g.description(role) ?? '' })),
  },
  {
    id: 'role.create', kind: 'write', method: 'POST', path: '/api/role/{role}', params: ['role'], status: 201,
    message: 'Role created', data: 'roleCreated', body: 'createRole', summary: 'Creates a role',
    change: (p, body) => ({ op: 'role.create', role: p0(p), description: (body as { description?: string } | undefined)?.description ?? '' }),
    result: (d) => ({ role: d.change.role, description: d.change.op === 'role.create' ? d.change.description : '', revision: d.revision }),
  },
  {
    id: 'role.delete', kind: 'write', method: 'DELETE', path: '/api/role/{role}', params: ['role'], status: 200,
    message: 'Role deleted', data: 'roleDeleted', body: 'none', summary: 'Deletes a role with its grants and memberships',
    change: (p) => ({ op: 'role.delete', role: p0(p) }),
    result: (d) => ({
      role: d.change.role,
      permissions_removed: d.permissionsRemoved ?? 0,
      memberships_removed: d.membershipsRemoved ?? 0,
      revision: d.revision,
    }),
  },
  {
    id: 'permission.get', kind: 'read', method: 'GET', path: '/api/permission/{role}/{permission}', params: ['role', 'permission'],
    status: 200, message: 'OK', data: 'hasPermission', summary: 'Whether the role has the permission',
    run: (g, p) => ({ has_permission: known(g.roleHasPermission(p0(p), p1(p)), p0(p)) }),
  },
  {
    id: 'permission.grant', kind: 'write', method: 'POST', path: '/api/permission/{role}/{permission}', params: ['role', 'permission'],
    status: 201, message: 'Permission granted', data: 'grant', body: 'none', summary: 'Grants the permission to the role',
    change: (p) => ({ op: 'permission.grant', role: p0(p), permission: p1(p) }),
    result: (d, p) => ({ role: p0(p), permission: p1(p), revision: d.revision }),
  },
  {
    id: 'permission.revoke', kind: 'write', method: 'DELETE', path: '/api/permission/{role}/{permission}', params: ['role', 'permission'],
    status: 200, message: 'Permission revoked', data: 'grant', body: 'none', summary: 'Revokes the permission from the role',
    change: (p) => ({ op: 'permission.revoke', role: p0(p), permission: p1(p) }),
    result: (d, p) => ({ role: p0(p), permission: p1(p), revision: d.revision }),
  },
  {
    id: 'role_permissions', kind: 'list', method: 'GET', path: '/api/role_permissions/{role}', params: ['role'], status: 200,
    message: 'OK', data: 'names', summary: 'Permissions of the role',
    names: (g, p) => known(g.rolePermissions(p0(p)), p0(p)),
    items: asNames,
  },
  {
    id: 'membership.get', kind: 'read', method: 'GET', path: '/api/membership/{user}/{role}', params: ['user', 'role'], status: 200,
    message: 'OK', data: 'isMember', summary: 'Whether the user belongs to the role',
    run: (g, p) => ({ is_member: known(g.isMember(p0(p), p1(p)), p1(p)) }),
  },
  {
    id: 'membership.add', kind: 'write', method: 'POST', path: '/api/membership/{user}/{role}', params: ['user', 'role'], status: 201,
    message: 'Membership added', data: 'membership', body: 'none', summary: 'Adds the user to the role',
    change: (p) => ({ op: 'membership.add', user: p0(p), role: p1(p) }),
    result: (d, p) => ({ user: p0(p), role: p1(p), revision: d.revision }),
  },
  {
    id: 'membership.remove', kind: 'write', method: 'DELETE', path: '/api/membership/{user}/{role}', params: ['user', 'role'],
    status: 200, message: 'Membership removed', data: 'membership', body: 'none', summary: 'Removes the user from the role',
    change: (p) => ({ op: 'membership.remove', user: p0(p), role: p1(p) }),
    result: (d, p) => ({ user: p0(p), role: p1(p), revision: d.revision }),
  },
  {
    id: 'members', kind: 'list', method: 'GET', path: '/api/members/{role}', params: ['role'], status: 200, message: 'OK',
    data: 'users', summary: 'Members of the role',
    names: (g, p) => known(g.members(p0(p)), p0(p)),
    items: asUsers,
  },
  {
    id: 'has_permission', kind: 'read', method: 'GET', path: '/api/has_permission/{user}/{permission}', params: ['user', 'permission'],
    status: 200, message: 'OK', data: 'hasPermission', summary: 'Whether the user holds the permission through any role',
  },
  {
    id: 'explain', kind: 'read', method: 'GET', path: '/api/explain/{user}/{permission}', params: ['user', 'permission'], status: 200,
    message: 'OK', data: 'explanation',
    summary: 'Why the user holds the permission (the roles granting it), or what would grant it (least privilege first)',
    run: (g, p) => explain(g, p0(p), p1(p)),
  },
  {
    id: 'user_permissions', kind: 'list', method: 'GET', path: '/api/user_permissions/{user}', params: ['user'], status: 200,
    message: 'OK', data: 'names', summary: "Permissions across all the user's roles",
    names: (g, p) => g.userPermissions(p0(p)),
    items: asNames,
  },
  {
    id: 'user_roles', kind: 'list', method: 'GET', path: '/api/user_roles/{user}', params: ['user'], status: 200, message: 'OK',
    data: 'roleNames', summary: 'Roles of the user',
    names: (g, p) => g.userRoles(p0(p)),
    items: asRoles,
  },
  {
    id: 'which_users_can', kind: 'list', method: 'GET', path: '/api/which_users_can/{permission}', params: ['permission'],
    status: 200, message: 'OK', data: 'users', summary: 'Users holding the permission',
    names: (g, p) => g.whichUsersCan(p0(p)),
    items: asUsers,
  },
  {
    id: 'which_roles_can', kind: 'list', method: 'GET', path: '/api/which_roles_can/{permission}', params: ['permission'],
    status: 200, message: 'OK', data: 'roleNames', summary: 'Roles holding the permission',
    names: (g, p) => g.whichRolesCan(p0(p)),
    items: asRoles,
  },
  {
    id: 'changes', kind: 'log', method: 'GET', path: '/api/changes', params: [], status: 200, message: 'OK', data: 'changes',
    summary: 'Committed changes with a revision above ?since=, ascending',
    items: (records) =>
      records.map(({ revision, change, at }) => ({
        revision,
        op: change.op,
        role: change.role,
        permission: 'permission' in change ? change.permission : undefined,
        user: 'user' in change ? change.user : undefined,
        timestamp: at,
      })),
  },
  {
    id: 'token.issue', kind: 'token', method: 'POST', path: '/api/token', params: [], status: 201, message: 'Token issued',
    data: 'token', body: 'token', summary: 'Issues a signed token (HS256 JWT) for the calling client key',
  },
  {
    id: 'audit', kind: 'audit', method: 'GET', path: '/api/audit', params: [], status: 200, message: 'OK', data: 'audit',
    summary: "The client's audit trail, newest first",
    items: (entries) =>
      entries.map((e) => ({
        id: e.id,
        timestamp: e.at,
        action: e.action,
        resource: e.resource,
        status: e.status,
        revision: e.revision,
        credential: e.credential,
        request_id: e.requestId,
        ip: e.ip,
      })),
  },
  {
    id: 'check', kind: 'read', method: 'POST', path: '/api/check', params: [], status: 200, message: 'OK', data: 'check',
    body: 'check', summary: 'Many has_permission checks answered at one revision',
    run: (g, _p, body) => {
      const checks = (body as { checks: Array<{ user: string; permission: string }> } | undefined)?.checks;
      if (checks === undefined) throw appError('ERR_VALIDATION_BODY', "body must have the key 'checks'");
      let all = true;
      let any = false;
      const results = checks.map(({ user, permission }) => {
        const has_permission = g.check(user, permission);
        all &&= has_permission;
        any ||= has_permission;
        return { user, permission, has_permission };
      });
      return { results, all, any };
    },
  },
  ...WORKFLOW_ROUTES,
];
