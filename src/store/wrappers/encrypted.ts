import type { AuditEntry, AuditRecord } from '../../audit/record.ts';
import type { Change, ChangeRecord, Snapshot, WriteOutcome } from '../../authz/changes.ts';
import { imageOfSnapshot, type GraphImage } from '../../authz/graph-image.ts';
import type { TenantId } from '../../authz/tenant.ts';
import { isRefusalCode, refusalFor, refused } from '../../authz/write-rules.ts';
import type { FieldCipher } from '../../crypto/field-cipher.ts';
import { callOf, type StoreAnswer, type StoreArgs } from '../calls.ts';
import type { AuditStore, BoundaryCommitted, ImportRequest, PendingWrite, Store, StoreMethod, WriteRefused, WriteSettled } from '../port.ts';
import type { DeliveryJob, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../../workflow/records.ts';
import { DelegatingStore } from './delegating.ts';
import { openResource, plainResource } from '../sealed-columns.ts';
import { exportPageOf } from '../export-snapshot.ts';
import type { ExportPage, ExportPosition, ImportDone, ImportEdge, ImportFile } from '../../authz/transfer.ts';

/**
 * Field encryption around an adapter (docs/operations.md §7), run inside a pool thread: names,
 * descriptions, audit resources, and workflow schedules' webhook URLs and secrets are encrypted
 * before the adapter sees them and decrypted as they come back, so the database (tables,
 * changelog, audit, workflow schedules and runs) never holds one in plaintext. The
 * cipher is deterministic, so the adapter's equality look-ups and uniqueness still hold. Lists
 * are sorted after hydration (the graph sorts), never by the database. Only the methods that
 * carry names are written here; every other call passes on untouched.
 */
export class EncryptedStore extends DelegatingStore {
  readonly #inner: Store;
  readonly #cipher: FieldCipher;
  /** Names written lately, encrypted: a write names a role or user written before more often than not. */
  #sealed = new Map<string, string>();

  constructor(inner: Store, cipher: FieldCipher) {
    super();
    this.#inner = inner;
    this.#cipher = cipher;
  }

  override async load(tenant: TenantId): Promise<Snapshot> {
    const s = await this.#inner.load(tenant);
    // A name recurs in every edge it is on (a user in each of its memberships): decrypt each once.
    const seen = new Map<string, string>();
    const d = (text: string): string => {
      let plain = seen.get(text);
      if (plain === undefined) seen.set(text, (plain = this.#cipher.decrypt(text)));
      return plain;
    };
    return {
      revision: s.revision,
      roles: s.roles.map(([role, description]) => [d(role), d(description)] as const),
      grants: s.grants.map(([role, permission]) => [d(role), d(permission)] as const),
      memberships: s.memberships.map(([user, role]) => [d(user), d(role)] as const),
      windows: s.windows.map((w) =>
        w.kind === 'permission' ? { ...w, role: d(w.role), permission: d(w.permission) } : { ...w, user: d(w.user), role: d(w.role) },
      ),
    };
  }

  /** Built from the decrypted rows: the adapter's own would intern the encrypted names. */
  override async loadGraph(tenant: TenantId): Promise<GraphImage> {
    return imageOfSnapshot(await this.load(tenant));
  }

  /**
   * The requests with their names sealed; what comes back in plaintext: the changes as committed
   * (a window set on an absent edge commits as its creation, a past `notBefore` is dropped) with
   * the names asked, a refusal worded again with them (its `index` kept).
   */
  override async writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    const plain = new Map<string, string>();
    const e = (text: string): string => {
      const sealed = this.#seal(text);
      plain.set(sealed, text);
      return sealed;
    };
    const sealed = writes.map((w): PendingWrite => {
      const changes = w.changes.map((c) => mapNames(c, e));
      return w.audit === undefined ? { ...w, changes } : { ...w, changes, audit: { ...w.audit, resource: e(w.audit.resource) } };
    });
    const d = (text: string): string => plain.get(text) ?? this.#cipher.decrypt(text);
    const settled = await this.#inner.writeMany(sealed);
    return settled.map((s, i) => (s.ok ? { ok: true, value: plainOutcome(s.value, (writes[i] as PendingWrite).changes, d) } : s));
  }

  override async commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.commitBoundaries(nowMicros, limit)).map((b) => ({ ...b, change: mapNames(b.change, d) }));
  }

  override async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    // An import's row names nothing: its counts are no secret.
    return (await this.#inner.changes(tenant, since, limit)).map((r) => (r.change.op === 'client.import' ? r : { ...r, change: mapNames(r.change, d) }));
  }

  /**
   * The database orders sealed names, not plaintext ones: each page is cut from the whole
   * snapshot, decrypted and sorted (docs/operations.md: an export under encryption holds the
   * client in the pool thread's memory, page after page).
   */
  override async exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage> {
    return exportPageOf(await this.load(tenant), after, limit);
  }

  /** The file's names and descriptions sealed; the answer's changes (a dry run's) opened again. */
  override async importData(request: ImportRequest): Promise<ImportDone | WriteRefused> {
    const e = (text: string): string => this.#seal(text);
    const edge = (x: ImportEdge): ImportEdge => [e(x[0]), e(x[1]), x[2], x[3]];
    const file: ImportFile = {
      roles: request.file.roles.map(([role, description]) => [e(role), this.#cipher.encrypt(description)] as const),
      grants: request.file.grants.map(edge),
      memberships: request.file.memberships.map(edge),
    };
    const audit = request.audit === undefined ? undefined : { ...request.audit, resource: e(request.audit.resource) };
    const done = await this.#inner.importData({ ...request, file, audit });
    if (!done.ok || done.changes === undefined) return done;
    const d = (text: string): string => this.#cipher.decrypt(text);
    return { ...done, changes: done.changes.map((c) => mapNames(c, d)) };
  }

  override appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    return this.#inner.appendAudit(rows.map((r) => this.#sealAudit(r)));
  }

  override async audit(...args: Parameters<AuditStore['audit']>): Promise<AuditEntry[]> {
    return (await this.#inner.audit(...args)).map((r) => ({ ...r, resource: this.#openResource(r.resource) }));
  }

  override putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    const e = (text: string): string => this.#cipher.encrypt(text);
    const sealed: ScheduleInput = {
      ...schedule,
      workflow: this.#seal(schedule.workflow),
      webhookUrl: schedule.webhookUrl === null ? null : e(schedule.webhookUrl),
      webhookSecret: e(schedule.webhookSecret),
    };
    return this.#inner.putSchedule(sealed, nowMs, this.#sealAudit(audit));
  }

  override deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#inner.deleteSchedule(tenant, this.#seal(workflow), this.#sealAudit(audit));
  }

  override async schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.schedules(tenant)).map((s) => ({ ...s, workflow: d(s.workflow), webhookUrl: s.webhookUrl === null ? null : d(s.webhookUrl) }));
  }

  override async runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return (await this.#inner.runs(tenant, this.#seal(workflow), before, limit))?.map((r) => this.#openRun(r));
  }

  override async dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return (await this.#inner.dueSchedules(nowMs, limit)).map((d) => ({ ...d, workflow: this.#cipher.decrypt(d.workflow) }));
  }

  override async runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    const made = await this.#inner.runSchedule({ ...due, workflow: this.#seal(due.workflow) }, nowMs, webhookId);
    return made === undefined ? undefined : this.#openRun(made);
  }

  override async claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.claimDeliveries(nowMs, claimMs, limit)).map((j) => ({
      ...j,
      run: this.#openRun(j.run),
      webhookUrl: d(j.webhookUrl),
      webhookSecret: d(j.webhookSecret),
    }));
  }

  /** The revocation's audit row, its resource sealed like every other row's. */
  override revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined> {
    return this.#inner.revokeToken(tenant, jti, nowMs, this.#sealAudit(audit));
  }

  /** A stored run in plaintext. Its lists were sorted by ciphertext in the database: sorted again, by code point. */
  #openRun(run: RunEntry): RunEntry {
    const names = (list: readonly string[]): string[] => list.map((u) => this.#cipher.decrypt(u)).sort(byCodePoint);
    return { ...run, workflow: this.#cipher.decrypt(run.workflow), added: names(run.added), removed: names(run.removed) };
  }

  /** An audit row's resource in plaintext (a boundary change's row holds its edge's two sealed names: see openResource). */
  #openResource(stored: string): string {
    return plainResource(openResource(stored, this.#cipher));
  }

  #sealAudit(audit: AuditRecord): AuditRecord {
    return { ...audit, resource: this.#cipher.encrypt(audit.resource) };
  }

  /** The stored form of `text`, remembered (deterministic, so a memo is exact); bounded. */
  #seal(text: string): string {
    let stored = this.#sealed.get(text);
    if (stored === undefined) {
      if (this.#sealed.size >= SEALED_MAX) this.#sealed = new Map();
      this.#sealed.set(text, (stored = this.#cipher.encrypt(text)));
    }
    return stored;
  }

  /** Tenant ids, revisions, leases, delivery outcomes, the meta calls: nothing to seal, passed on as they are. */
  protected call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
    return callOf(this.#inner, method, args);
  }

  override close(): Promise<void> {
    return this.#inner.close();
  }
}

const SEALED_MAX = 50_000;

/** Code point order (names are ASCII, where it is also UTF-16 order): how a run lists its users. */
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** `change` with every name (and a description) passed through `f`; its window and bounds kept. */
function mapNames<C extends Change>(change: C, f: (text: string) => string): C {
  const c: Change = change;
  switch (c.op) {
    case 'role.create':
      return { ...c, role: f(c.role), description: f(c.description) } as C;
    case 'role.delete':
      return { ...c, role: f(c.role) } as C;
    default:
      return ('permission' in c ? { ...c, role: f(c.role), permission: f(c.permission) } : { ...c, role: f(c.role), user: f(c.user) }) as C;
  }
}

/** The outcome in plaintext: the changes as committed with the names asked, a refusal of a change worded with the plaintext names. */
function plainOutcome(outcome: WriteOutcome, asked: readonly Change[], d: (text: string) => string): WriteOutcome {
  if (outcome.ok) return { ...outcome, changes: outcome.changes.map((c) => mapNames(c, d)) };
  const change = outcome.index === undefined ? undefined : asked[outcome.index];
  // A precondition names no change, and no name: passed on as it is.
  if (change === undefined || !isRefusalCode(outcome.error.code)) return outcome;
  return refused(refusalFor(outcome.error.code, change), outcome.revision, outcome.index);
}
