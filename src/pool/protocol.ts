import type { AuditEntry, AuditRecord } from '../audit/record.ts';
import type { ChangeRecord, Snapshot } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { WireError } from '../errors/index.ts';
import type { CreatedTenants, PendingWrite, WriteSettled } from '../store/port.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../workflow/records.ts';

/** Every task a pool thread runs, and what each answers. One file, so both sides agree. */
export type Task =
  | { readonly kind: 'load'; readonly tenant: TenantId }
  | { readonly kind: 'revision'; readonly tenant: TenantId }
  | { readonly kind: 'revisions'; readonly tenants: readonly TenantId[] }
  | { readonly kind: 'tenantsSince'; readonly cursor: string | undefined }
  | { readonly kind: 'writeMany'; readonly writes: readonly PendingWrite[] }
  | { readonly kind: 'changes'; readonly tenant: TenantId; readonly since: number; readonly limit: number }
  | { readonly kind: 'appendAudit'; readonly rows: readonly AuditRecord[] }
  | { readonly kind: 'audit'; readonly tenant: TenantId; readonly before: number | undefined; readonly limit: number }
  | { readonly kind: 'pruneAudit'; readonly before: string; readonly limit: number }
  | { readonly kind: 'cursorSecret' }
  | { readonly kind: 'ping' }
  | WorkflowTask;

/** The tasks of workflow schedules and runs (see WorkflowStore). */
export type WorkflowTask =
  | { readonly kind: 'putSchedule'; readonly schedule: ScheduleInput; readonly nowMs: number; readonly audit: AuditRecord }
  | { readonly kind: 'deleteSchedule'; readonly tenant: TenantId; readonly workflow: string; readonly audit: AuditRecord }
  | { readonly kind: 'schedules'; readonly tenant: TenantId }
  | { readonly kind: 'runs'; readonly tenant: TenantId; readonly workflow: string; readonly before: number | undefined; readonly limit: number }
  | { readonly kind: 'takeLease'; readonly owner: string; readonly nowMs: number; readonly ttlMs: number }
  | { readonly kind: 'releaseLease'; readonly owner: string }
  | { readonly kind: 'dueSchedules'; readonly nowMs: number; readonly limit: number }
  | { readonly kind: 'runSchedule'; readonly due: DueSchedule; readonly nowMs: number; readonly webhookId: string }
  | { readonly kind: 'claimDeliveries'; readonly nowMs: number; readonly claimMs: number; readonly limit: number }
  | { readonly kind: 'recordDelivery'; readonly update: DeliveryUpdate };

export interface TaskValue {
  load: Snapshot;
  revision: number;
  revisions: Array<[TenantId, number]>;
  tenantsSince: CreatedTenants;
  writeMany: WriteSettled[];
  changes: ChangeRecord[];
  appendAudit: true;
  audit: AuditEntry[];
  pruneAudit: number;
  /** Hex, so it crosses the thread boundary as a plain string. */
  cursorSecret: string;
  ping: true;
  putSchedule: true;
  deleteSchedule: boolean;
  schedules: ScheduleEntry[];
  runs: RunEntry[] | undefined;
  takeLease: boolean;
  releaseLease: true;
  dueSchedules: DueSchedule[];
  runSchedule: RunEntry | undefined;
  claimDeliveries: DeliveryJob[];
  recordDelivery: true;
}

/** A task's answer; a failure crosses as `{code, message}`, never as an Error instance. */
export type TaskReply<K extends Task['kind']> = { readonly ok: true; readonly value: TaskValue[K] } | { readonly ok: false; readonly error: WireError };
