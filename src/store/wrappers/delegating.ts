import type { AuditEntry, AuditRecord } from '../../audit/record.ts';
import type { ChangeRecord, Snapshot } from '../../authz/changes.ts';
import type { GraphImage } from '../../authz/graph-image.ts';
import type { ExportPage, ExportPosition, ImportDone } from '../../authz/transfer.ts';
import type { TenantId } from '../../authz/tenant.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../../workflow/records.ts';
import type { StoreAnswer, StoreArgs } from '../calls.ts';
import type { AuditPosition, BoundaryCommitted, CreatedTenants, ImportRequest, WriteRefused, PendingWrite, Store, StoreMethod, WriteSettled } from '../port.ts';

/**
 * The base of a store that stands in front of another (a wrapper, the pool): each store call is
 * written out below and hands its name and arguments to {@link DelegatingStore.call}, which the
 * subclass defines once for all of them (run on a pool thread, guarded by a breaker, passed on to
 * the store inside). A subclass overrides the calls it changes. A method added to a port is
 * written here, once; until it is, nothing builds.
 */
export abstract class DelegatingStore implements Store {
  /** Makes store call `method` with `args`, as this store does it. */
  protected abstract call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>>;

  abstract close(): Promise<void>;

  load(tenant: TenantId): Promise<Snapshot> {
    return this.call('load', [tenant]);
  }
  loadGraph(tenant: TenantId): Promise<GraphImage> {
    return this.call('loadGraph', [tenant]);
  }
  revision(tenant: TenantId): Promise<number> {
    return this.call('revision', [tenant]);
  }
  revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    return this.call('revisions', [tenants]);
  }
  tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    return this.call('tenantsSince', [cursor]);
  }
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    return this.call('changes', [tenant, since, limit]);
  }
  writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    return this.call('writeMany', [writes]);
  }
  commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]> {
    return this.call('commitBoundaries', [nowMicros, limit]);
  }

  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.call('exportPage', [tenant, after, limit]);
  }
  importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    return this.call('importData', [request]);
  }
  appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    return this.call('appendAudit', [rows]);
  }
  audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    return this.call('audit', [tenant, after, limit]);
  }
  pruneAudit(before: string, limit: number): Promise<number> {
    return this.call('pruneAudit', [before, limit]);
  }

  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return this.call('putSchedule', [schedule, nowMs, audit]);
  }
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.call('deleteSchedule', [tenant, workflow, audit]);
  }
  schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return this.call('schedules', [tenant]);
  }
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return this.call('runs', [tenant, workflow, before, limit]);
  }
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return this.call('takeLease', [owner, nowMs, ttlMs]);
  }
  releaseLease(owner: string): Promise<void> {
    return this.call('releaseLease', [owner]);
  }
  dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return this.call('dueSchedules', [nowMs, limit]);
  }
  runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    return this.call('runSchedule', [due, nowMs, webhookId]);
  }
  claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    return this.call('claimDeliveries', [nowMs, claimMs, limit]);
  }
  recordDelivery(update: DeliveryUpdate): Promise<void> {
    return this.call('recordDelivery', [update]);
  }

  recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void> {
    return this.call('recordToken', [tenant, jti, expiresAtMs]);
  }
  revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined> {
    return this.call('revokeToken', [tenant, jti, nowMs, audit]);
  }
  revokedTokens(nowMs: number): Promise<Array<[string, number]>> {
    return this.call('revokedTokens', [nowMs]);
  }
  pruneTokens(nowMs: number, limit: number): Promise<number> {
    return this.call('pruneTokens', [nowMs, limit]);
  }

  ping(): Promise<void> {
    return this.call('ping', []);
  }
  cursorSecret(): Promise<Buffer> {
    return this.call('cursorSecret', []);
  }
  claimEncryption(mark: string): Promise<string> {
    return this.call('claimEncryption', [mark]);
  }
}
