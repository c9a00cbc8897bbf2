import type { AuditEntry } from '../audit/record.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { AuditPosition } from './port.ts';

/** A stored row as the port answers it (the same for every adapter). */
export function entryOf(r: Record<string, unknown>): AuditEntry {
  const entry = {
    id: Number(r.id),
    tenant: String(r.client_hash) as TenantId,
    at: String(r.at),
    action: String(r.action),
    resource: String(r.resource),
    status: Number(r.status),
    credential: String(r.credential),
    requestId: String(r.request_id),
    ip: String(r.ip),
  };
  return r.revision === null || r.revision === undefined ? entry : { ...entry, revision: Number(r.revision) };
}

/** Above every row in the audit list: '~' sorts after every wire timestamp (digits, '-', ':', 'T', 'Z'). */
export const AUDIT_TOP: AuditPosition = { at: '~', id: Number.MAX_SAFE_INTEGER };
