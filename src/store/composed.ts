import type { AuditEntry, AuditRecord } from '../audit/record.ts';
import type { ChangeRecord, Snapshot } from '../authz/changes.ts';
import type { GraphImage } from '../authz/graph-image.ts';
import type { ExportPage, ExportPosition, ImportDone } from '../authz/transfer.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput, WorkflowStore } from '../workflow/records.ts';
import type {
  AuditPosition,
  AuditStore,
  BoundaryCommitted,
  CreatedTenants,
  ImportRequest,
  Meta,
  PendingWrite,
  Store,
  StoreRoles,
  TenantStore,
  TokenStore,
  WriteRefused,
  WriteSettled,
} from './port.ts';

/**
 * The base of an adapter made of its roles (one object each, in files of their own): each store
 * call below is the method of the same name of its role. The adapter's class writes no call
 * itself, only how it opens and closes, so a method added to a port is written in the role's
 * file and once here.
 */
export abstract class ComposedStore implements Store {
  readonly #tenant: TenantStore;
  readonly #audit: AuditStore;
  readonly #workflow: WorkflowStore;
  readonly #tokens: TokenStore;
  readonly #meta: Meta;

  constructor(roles: StoreRoles) {
    this.#tenant = roles.tenant;
    this.#audit = roles.audit;
    this.#workflow = roles.workflow;
    this.#tokens = roles.tokens;
    this.#meta = roles.meta;
  }

  abstract close(): Promise<void>;

  load(tenant: TenantId): Promise<Snapshot> {
    return this.#tenant.load(tenant);
  }
  loadGraph(tenant: TenantId): Promise<GraphImage> {
    return this.#tenant.loadGraph(tenant);
  }
  revision(tenant: TenantId): Promise<number> {
    return this.#tenant.revision(tenant);
  }
  revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    return this.#tenant.revisions(tenants);
  }
  tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    return this.#tenant.tenantsSince(cursor);
  }
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    return this.#tenant.changes(tenant, since, limit);
  }
  writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    return this.#tenant.writeMany(writes);
  }
  commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]> {
    return this.#tenant.commitBoundaries(nowMicros, limit);
  }

  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.#tenant.exportPage(tenant, after, limit);
  }
  importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    return this.#tenant.importData(request);
  }
  appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    return this.#audit.appendAudit(rows);
  }
  audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    return this.#audit.audit(tenant, after, limit);
  }
  pruneAudit(before: string, limit: number): Promise<number> {
    return this.#audit.pruneAudit(before, limit);
  }

  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.#workflow.putSchedule(schedule, nowMs, audit);
  }
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#workflow.deleteSchedule(tenant, workflow, audit);
  }
  schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return this.#workflow.schedules(tenant);
  }
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return this.#workflow.runs(tenant, workflow, before, limit);
  }
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return this.#workflow.takeLease(owner, nowMs, ttlMs);
  }
  releaseLease(owner: string): Promise<void> {
    return this.#workflow.releaseLease(owner);
  }
  dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return this.#workflow.dueSchedules(nowMs, limit);
  }
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return this.#workflow.runSchedule(due, nowMs, webhookId);
  }
  claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    return this.#workflow.claimDeliveries(nowMs, claimMs, limit);
  }
  recordDelivery(update: DeliveryUpdate): Promise<void> {
    return this.#workflow.recordDelivery(update);
  }

  recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void> {
    return this.#tokens.recordToken(tenant, jti, expiresAtMs);
  }
  revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined> {
    return this.#tokens.revokeToken(tenant, jti, nowMs, audit);
  }
  revokedTokens(nowMs: number): Promise<Array<[string, number]>> {
    return this.#tokens.revokedTokens(nowMs);
  }
  pruneTokens(nowMs: number, limit: number): Promise<number> {
    return this.#tokens.pruneTokens(nowMs, limit);
  }

  ping(): Promise<void> {
    return this.#meta.ping();
  }
  cursorSecret(): Promise<Buffer> {
    return this.#meta.cursorSecret();
  }
  claimEncryption(mark: string): Promise<string> {
    return this.#meta.claimEncryption(mark);
  }
}
