import type { AuditDraft, AuditRecord } from '../../audit/record.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { timestamp } from '../../time/index.ts';

/** Where rows recorded after their answer go (the worker's audit trail, batched). */
export interface AuditSink {
  record(row: AuditRecord): void;
}

/**
 * An audited request: records its row when the answer is sent, with the answer's status. A
 * successful write's row is not recorded here: it committed in the write's own transaction.
 */
export class AuditedRequest {
  readonly draft: AuditDraft;
  readonly #tenant: TenantId;
  readonly #sink: AuditSink;
  readonly #rowCommitsWithWrite: boolean;

  constructor(tenant: TenantId, draft: AuditDraft, sink: AuditSink, rowCommitsWithWrite: boolean) {
    this.#tenant = tenant;
    this.draft = draft;
    this.#sink = sink;
    this.#rowCommitsWithWrite = rowCommitsWithWrite;
  }

  replied(status: number): void {
    if (this.#rowCommitsWithWrite && status < 300) return;
    this.#sink.record(this.row(status));
  }

  /** The request's row with `status`, now: for the store to commit with a change (a schedule's). */
  row(status: number): AuditRecord {
    return { ...this.draft, tenant: this.#tenant, at: timestamp(), status };
  }
}
