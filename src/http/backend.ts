import type { Change, ChangeRecord, WriteOutcome, WriteRefused } from '../authz/changes.ts';
import type { ExportPage, ExportPosition, ImportDone, ImportFile, ImportMode } from '../authz/transfer.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { AuditEntry, AuditOfWrite, AuditPosition, AuditRecord } from '../audit/record.ts';
import type { RunEntry, ScheduleEntry, ScheduleInput } from '../workflow/records.ts';

/** What the HTTP layer needs from the rest of the worker; it never touches a store directly. */
export interface Backend {
  /**
   * Commits a write request's changes (all or none, at one revision; only while the tenant is at
   * `ifMatch` when given) and reports the outcome, once they are applied to every cached graph of
   * this instance (so any later request, on any connection, sees them).
   */
  write(tenant: TenantId, changes: readonly Change[], audit: AuditOfWrite | undefined, ifMatch?: number): Promise<WriteOutcome>;
  /** The tenant's audit rows after `after` (from the top when undefined), newest first by time then id, at most `limit`. */
  audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]>;
  /**
   * Imports a client's data (docs/api.md §17): in the tenant's turn among its writes, one
   * revision and one fanned-out change, answered once every cached graph of this instance
   * reflects it; a dry run stores nothing.
   */
  importData(request: ImportRequest): Promise<ImportDone | WriteRefused>;
  /** A page of the tenant's export, read with its revision (see TenantStore.exportPage). */
  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage>;
  /** Takes an audit row recorded after its answer (batched; never waits). */
  recordAudit(row: AuditRecord): void;
  /** The tenant's changelog after `since`, ascending, at most `limit` entries. */
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]>;
  /** The tenant's committed revision, read from the database. */
  revision(tenant: TenantId): Promise<number>;
  /**
   * Creates or replaces a workflow's schedule, its audit row committed with it: a write of its
   * client, made by the worker's write pipeline like {@link write} (the HTTP layer holds no store).
   */
  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void>;
  /** Deletes a schedule with its runs, its audit row committed with it (a write, like {@link putSchedule}); false when there was none. */
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean>;
  /** The tenant's workflow schedules. */
  schedules(tenant: TenantId): Promise<ScheduleEntry[]>;
  /** A schedule's runs with an id below `before`, newest first, at most `limit`; undefined without the schedule. */
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined>;
  /** Records a token just issued (docs/api.md §3), so that it can be revoked. */
  recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void>;
  /**
   * Revokes the tenant's token `jti` with its audit row, and resolves once every worker of this
   * instance refuses it (the other instances hear of it through Redis): the token's expiry (ms
   * since the epoch), or undefined when the tenant has no such token, or it has expired.
   */
  revokeToken(tenant: TenantId, jti: string, audit: AuditRecord): Promise<number | undefined>;
  /** Names of the dependencies that are not ready (empty when ready). */
  notReady(): Promise<string[]>;
}

/** An import as the HTTP layer asks for it (the store's ImportRequest, which it may not import). */
export interface ImportRequest {
  readonly tenant: TenantId;
  readonly mode: ImportMode;
  readonly file: ImportFile;
  readonly ifMatch?: number | undefined;
  readonly audit?: AuditOfWrite | undefined;
  readonly dry: boolean;
}
