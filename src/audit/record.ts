import type { TenantId } from '../authz/tenant.ts';
import type { Change } from '../authz/changes.ts';

/**
 * The audit trail's rows (docs/api.md §11). A draft is what a request leaves
 * before its outcome is known; the outcome (status, revision, time) completes it.
 */
export interface AuditDraft {
  /** The change's op (`role.create` …), `token.issue`, `workflow.schedule`, `workflow.unschedule` or `read`. */
  readonly action: string;
  /** The request path as received, without its query. */
  readonly resource: string;
  /** `key:<first 12 hex of the client hash>` or `token:<jti>`: never the credential itself. */
  readonly credential: string;
  readonly requestId: string;
  /** The peer address (forwarding headers are not trusted). */
  readonly ip: string;
}

/** A draft with its success status: committed with the write it records, in one transaction. */
export interface AuditOfWrite extends AuditDraft {
  readonly status: number;
}

/** One row of the trail. */
export interface AuditRecord extends AuditDraft {
  readonly tenant: TenantId;
  /** Wire timestamp (UTC, 6 fractional digits), so text order is time order. */
  readonly at: string;
  readonly status: number;
  /** Only on successful writes. */
  readonly revision?: number;
}

/** A stored row as read back, newest first by `id`. */
export interface AuditEntry extends AuditRecord {
  readonly id: number;
}

/**
 * A row's place in the audit list, which is newest first by time (`at`), then by id: where a
 * page ends and the next starts.
 */
export interface AuditPosition {
  readonly at: string;
  readonly id: number;
}

/**
 * A write's audit row as its changes were committed: a PUT (docs/api.md §12.1) that replaced an
 * edge's window answered 200, where its route says 201 for the edge it would create.
 */
export function auditAsCommitted(audit: AuditOfWrite, changes: readonly Change[]): AuditOfWrite {
  const replaced = changes.length === 1 && (changes[0] as Change).op.endsWith('.window');
  return replaced && audit.status === 201 ? { ...audit, status: 200 } : audit;
}
