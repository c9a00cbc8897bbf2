import type { AuditEntry, AuditOfWrite, AuditPosition, AuditRecord } from '../audit/record.ts';
import type { AuditTrail } from '../audit/trail.ts';
import type { Change, ChangeRecord, WriteOutcome, WriteRefused } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { Backend } from '../http/server.ts';
import type { WorkerMetrics } from '../metrics/worker.ts';
import type { ImportRequest, RunEntry, ScheduleEntry, ScheduleInput } from '../store/port.ts';
import type { ExportPage, ExportPosition, ImportDone } from '../authz/transfer.ts';
import type { ResilientStore } from '../store/wrappers/resilient.ts';
import { counted, countedSchedule } from './metrics.ts';
import type { FanOut } from './fan-out.ts';
import { AppError } from '../errors/index.ts';
import type { WritePipeline } from './write-pipeline.ts';
import type { Revocations } from './revocations.ts';

/** The instance's Redis subscription as the primary reports it ('off' without Redis). */
export interface RedisStatus {
  state: 'off' | 'up' | 'down';
}

/** What the HTTP layer asks of the worker: writes through the pipeline (counted), reads from the store. */
export class WorkerBackend implements Backend {
  readonly #store: ResilientStore;
  readonly #pipeline: WritePipeline;
  readonly #trail: AuditTrail;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #redis: RedisStatus;
  readonly #fanOut: FanOut;
  readonly #revocations: Revocations;

  constructor(
    store: ResilientStore,
    pipeline: WritePipeline,
    trail: AuditTrail,
    metrics: WorkerMetrics | undefined,
    redis: RedisStatus,
    fanOut: FanOut,
    revocations: Revocations,
  ) {
    this.#fanOut = fanOut;
    this.#store = store;
    this.#pipeline = pipeline;
    this.#trail = trail;
    this.#metrics = metrics;
    this.#redis = redis;
    this.#revocations = revocations;
  }

  write(tenant: TenantId, changes: readonly Change[], audit: AuditOfWrite | undefined, ifMatch?: number): Promise<WriteOutcome> {
    const op = changes.length === 1 ? (changes[0] as Change).op : 'writes';
    return counted(this.#pipeline.write(tenant, changes, audit, ifMatch), op, this.#metrics);
  }
  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    return countedSchedule(this.#pipeline.putSchedule(schedule, nowMs, audit), 'workflow.schedule', this.#metrics);
  }
  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return countedSchedule(this.#pipeline.deleteSchedule(tenant, workflow, audit), 'workflow.unschedule', this.#metrics);
  }
  /**
   * In the tenant's turn among its writes: committed, then fanned out (its one `client.import`
   * change drops every cached graph of the tenant, which hydrates again) before it is answered; a
   * refusal's revision is reached first, as a write's is. A dry run only reads.
   */
  importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    const done = this.#pipeline.inTurn(request.tenant, async () => {
      const outcome = await this.#store.importData(request);
      if (outcome.ok && outcome.changed && !request.dry) {
        await this.#fanOut.fanOutLogged(request.tenant, outcome.revision, [{ op: 'client.import', added: outcome.added, removed: outcome.removed }]);
      }
      return outcome;
    });
    if (request.dry || this.#metrics === undefined) return done;
    const metrics = this.#metrics;
    return done.then(
      (outcome) => {
        metrics.write('client.import', outcome.ok ? 'ok' : outcome.error.code);
        return outcome;
      },
      (err: unknown) => {
        metrics.write('client.import', err instanceof AppError ? err.code : 'ERR_INTERNAL');
        throw err;
      },
    );
  }
  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return this.#store.exportPage(tenant, after, limit);
  }
  recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void> {
    return this.#store.recordToken(tenant, jti, expiresAtMs);
  }
  revokeToken(tenant: TenantId, jti: string, audit: AuditRecord): Promise<number | undefined> {
    return this.#revocations.revoke(tenant, jti, audit);
  }
  recordAudit(row: AuditRecord): void {
    this.#trail.record(row);
  }

  audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]> {
    return this.#store.audit(tenant, after, limit);
  }
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    return this.#store.changes(tenant, since, limit);
  }
  revision(tenant: TenantId): Promise<number> {
    return this.#store.revision(tenant);
  }
  schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    return this.#store.schedules(tenant);
  }
  runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return this.#store.runs(tenant, workflow, before, limit);
  }

  /** What `/ready` names as down: the database (unless it answers), Redis (as the primary reports it). */
  async notReady(): Promise<string[]> {
    const missing: string[] = [];
    if (this.#store.circuitOpen) missing.push('database');
    else await this.#store.ping().catch(() => missing.push('database'));
    if (this.#redis.state === 'down') missing.push('redis');
    return missing;
  }
}
