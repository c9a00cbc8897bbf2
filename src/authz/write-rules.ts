import { AppError, errorMessage, type ErrorCode } from '../errors/index.ts';
import type { Change, WriteRefused } from './changes.ts';

/**
 * When a write is refused (404, 409) and with which text: decided here once, for both store
 * adapters and for the read routes' "role must exist". Adapters keep the SQL and the
 * transaction; they read the facts below from their database and ask {@link refusal}.
 */

/** The codes a write can be refused with. */
export type RefusalCode = Extract<
  ErrorCode,
  | 'ERR_AUTHZ_ROLE_NOT_FOUND'
  | 'ERR_AUTHZ_ROLE_EXISTS'
  | 'ERR_AUTHZ_GRANT_EXISTS'
  | 'ERR_AUTHZ_GRANT_NOT_FOUND'
  | 'ERR_AUTHZ_MEMBERSHIP_EXISTS'
  | 'ERR_AUTHZ_MEMBERSHIP_NOT_FOUND'
>;

const REFUSAL_CODES: ReadonlySet<string> = new Set<RefusalCode>([
  'ERR_AUTHZ_ROLE_NOT_FOUND',
  'ERR_AUTHZ_ROLE_EXISTS',
  'ERR_AUTHZ_GRANT_EXISTS',
  'ERR_AUTHZ_GRANT_NOT_FOUND',
  'ERR_AUTHZ_MEMBERSHIP_EXISTS',
  'ERR_AUTHZ_MEMBERSHIP_NOT_FOUND',
]);

/** Whether `code` is one a change is refused with (not a request's precondition, ERR_CONSISTENCY_PRECONDITION_FAILED). */
export function isRefusalCode(code: string): code is RefusalCode {
  return REFUSAL_CODES.has(code);
}

/** Why a write was refused, in the `{code, message}` form errors cross threads in. */
export interface Refusal {
  readonly code: RefusalCode;
  readonly message: string;
}

/**
 * The tenant's state before the change, as the adapter reads it inside the write's transaction.
 * `grantExists` and `memberExists` may be left out until known: adapters learn them from the row
 * count of the change's own insert-if-absent or delete (see {@link edgeFacts}), so they ask twice,
 * with `roleExists` before any statement, then with the same `roleExists` and the edge fact.
 */
export interface WriteFacts {
  readonly roleExists: boolean;
  /** permission.grant and permission.revoke: the role already had the permission. */
  readonly grantExists?: boolean;
  /** membership.add and membership.remove: the user was already a member of the role. */
  readonly memberExists?: boolean;
}

// ---- the refusals and their texts (worded by the error catalogue) --------------------------

export const roleNotFound = (role: string): Refusal => ({ code: 'ERR_AUTHZ_ROLE_NOT_FOUND', message: errorMessage('ERR_AUTHZ_ROLE_NOT_FOUND', { role }) });
export const roleExists = (role: string): Refusal => ({ code: 'ERR_AUTHZ_ROLE_EXISTS', message: errorMessage('ERR_AUTHZ_ROLE_EXISTS', { role }) });
export const grantExists = (role: string, permission: string): Refusal => ({
  code: 'ERR_AUTHZ_GRANT_EXISTS',
  message: errorMessage('ERR_AUTHZ_GRANT_EXISTS', { role, permission }),
});
const grantNotFound = (role: string, permission: string): Refusal => ({
  code: 'ERR_AUTHZ_GRANT_NOT_FOUND',
  message: errorMessage('ERR_AUTHZ_GRANT_NOT_FOUND', { role, permission }),
});
export const memberExists = (user: string, role: string): Refusal => ({
  code: 'ERR_AUTHZ_MEMBERSHIP_EXISTS',
  message: errorMessage('ERR_AUTHZ_MEMBERSHIP_EXISTS', { user, role }),
});
const memberNotFound = (user: string, role: string): Refusal => ({
  code: 'ERR_AUTHZ_MEMBERSHIP_NOT_FOUND',
  message: errorMessage('ERR_AUTHZ_MEMBERSHIP_NOT_FOUND', { user, role }),
});

// ---- the rules --------------------------------------------------------------------------------

/**
 * Why `change` cannot apply to a tenant in the state `facts` describe, or `undefined` when it
 * can. A role must exist for everything but its creation, and must not for that; a grant or a
 * membership must not exist to be added, and must exist to be removed. A fact left out is not
 * judged.
 */
export function refusal(change: Change, facts: WriteFacts): Refusal | undefined {
  if (change.op === 'role.create') return facts.roleExists ? roleExists(change.role) : undefined;
  if (!facts.roleExists) return roleNotFound(change.role);
  switch (change.op) {
    case 'role.delete':
      return undefined;
    case 'permission.grant':
      return facts.grantExists === true ? grantExists(change.role, change.permission) : undefined;
    case 'permission.revoke':
      return facts.grantExists === false ? grantNotFound(change.role, change.permission) : undefined;
    case 'membership.add':
      return facts.memberExists === true ? memberExists(change.user, change.role) : undefined;
    case 'membership.remove':
      return facts.memberExists === false ? memberNotFound(change.user, change.role) : undefined;
    // A window is set whether or not the edge exists (created when absent): only the role must.
    case 'permission.window':
    case 'membership.window':
      return undefined;
    // Boundary changes are never asked for: the service commits them while the edge still has
    // the bound (a store never refuses one, it leaves it alone), so only the role is judged.
    case 'permission.activate':
    case 'permission.expire':
    case 'membership.activate':
    case 'membership.expire':
      return undefined;
  }
}

/**
 * The edge facts an adapter learns from the rows its insert-if-absent or delete of a grant or
 * membership changed: an insert that inserted nothing found the edge there; a delete that
 * deleted nothing found it absent. Empty for role changes.
 */
export function edgeFacts(change: Change, rowsChanged: number): Pick<WriteFacts, 'grantExists' | 'memberExists'> {
  switch (change.op) {
    case 'permission.grant':
      return { grantExists: rowsChanged === 0 };
    case 'permission.revoke':
      return { grantExists: rowsChanged > 0 };
    case 'membership.add':
      return { memberExists: rowsChanged === 0 };
    case 'membership.remove':
      return { memberExists: rowsChanged > 0 };
    default:
      return {};
  }
}

/**
 * The store's answer for a refused write: nothing changed, the tenant stays at `revision`.
 * `index` is the position of the change refused in its request (absent for a request of one
 * change answered alone).
 */
export function refused(why: Refusal, revision: number, index?: number): WriteRefused {
  const error = { code: why.code, message: why.message };
  return index === undefined ? { ok: false, error, revision } : { ok: false, error, revision, index };
}

/** A refusal thrown as an error (a read whose role must exist). */
export function refusalError(why: Refusal): AppError {
  return new AppError(why.code, why.message);
}

/** The refusal `code` gives `change`: the same text the rules above give it (an adapter that stored other names, ciphertexts, words it again). */
export function refusalFor(code: RefusalCode, change: Change): Refusal {
  const permission = 'permission' in change ? change.permission : '';
  const user = 'user' in change ? change.user : '';
  switch (code) {
    case 'ERR_AUTHZ_ROLE_NOT_FOUND':
      return roleNotFound(change.role);
    case 'ERR_AUTHZ_ROLE_EXISTS':
      return roleExists(change.role);
    case 'ERR_AUTHZ_GRANT_EXISTS':
      return grantExists(change.role, permission);
    case 'ERR_AUTHZ_GRANT_NOT_FOUND':
      return grantNotFound(change.role, permission);
    case 'ERR_AUTHZ_MEMBERSHIP_EXISTS':
      return memberExists(user, change.role);
    case 'ERR_AUTHZ_MEMBERSHIP_NOT_FOUND':
      return memberNotFound(user, change.role);
  }
}
