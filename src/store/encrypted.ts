import type { AuditEntry, AuditRecord } from '../audit/record.ts';
import type { Change, ChangeRecord, Snapshot, WriteOutcome } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import { refusalFor, refused, type RefusalCode } from '../authz/write-rules.ts';
import type { FieldCipher } from '../crypto/field-cipher.ts';
import type { CreatedTenants, PendingWrite, StoreAdapter, WriteSettled } from './port.ts';
import type { DeliveryJob, DeliveryUpdate, DueSchedule, RunEntry, ScheduleEntry, ScheduleInput } from '../workflow/records.ts';

/**
 * Field encryption around an adapter (CONTRACT.md §8), run inside a pool thread: names,
 * descriptions, audit resources, and workflow schedules' webhook URLs and secrets are encrypted
 * before the adapter sees them and decrypted as they come back, so the database (tables,
 * changelog, audit, workflow schedules and runs) never holds one in plaintext. The
 * cipher is deterministic, so the adapter's equality look-ups and uniqueness still hold. Lists
 * are sorted after hydration (the graph sorts), never by the database.
 */
export class EncryptedStore implements StoreAdapter {
  readonly #inner: StoreAdapter;
  readonly #cipher: FieldCipher;
  /** Names written lately, encrypted: a write names a role or user written before more often than not. */
  #sealed = new Map<string, string>();

  constructor(inner: StoreAdapter, cipher: FieldCipher) {
    this.#inner = inner;
    this.#cipher = cipher;
  }

  async load(tenant: TenantId): Promise<Snapshot> {
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
    };
  }

  async writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]> {
    const e = (text: string): string => this.#seal(text);
    const sealed = writes.map((w): PendingWrite => {
      const change = mapNames(w.change, e);
      return w.audit === undefined ? { tenant: w.tenant, change } : { tenant: w.tenant, change, audit: { ...w.audit, resource: e(w.audit.resource) } };
    });
    const settled = await this.#inner.writeMany(sealed);
    return settled.map((s, i) => (s.ok ? { ok: true, value: plainOutcome(s.value, (writes[i] as PendingWrite).change) } : s));
  }

  async changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.changes(tenant, since, limit)).map((r) => ({ ...r, change: mapNames(r.change, d) }));
  }

  appendAudit(rows: readonly AuditRecord[]): Promise<void> {
    return this.#inner.appendAudit(rows.map((r) => this.#sealAudit(r)));
  }

  async audit(tenant: TenantId, before: number | undefined, limit: number): Promise<AuditEntry[]> {
    return (await this.#inner.audit(tenant, before, limit)).map((r) => ({ ...r, resource: this.#cipher.decrypt(r.resource) }));
  }

  putSchedule(schedule: ScheduleInput, nowMs: number, audit: AuditRecord): Promise<void> {
    const e = (text: string): string => this.#cipher.encrypt(text);
    const sealed: ScheduleInput = {
      ...schedule,
      workflow: this.#seal(schedule.workflow),
      webhookUrl: schedule.webhookUrl === null ? null : e(schedule.webhookUrl),
      webhookSecret: e(schedule.webhookSecret),
    };
    return this.#inner.putSchedule(sealed, nowMs, this.#sealAudit(audit));
  }

  deleteSchedule(tenant: TenantId, workflow: string, audit: AuditRecord): Promise<boolean> {
    return this.#inner.deleteSchedule(tenant, this.#seal(workflow), this.#sealAudit(audit));
  }

  async schedules(tenant: TenantId): Promise<ScheduleEntry[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.schedules(tenant)).map((s) => ({ ...s, workflow: d(s.workflow), webhookUrl: s.webhookUrl === null ? null : d(s.webhookUrl) }));
  }

  async runs(tenant: TenantId, workflow: string, before: number | undefined, limit: number): Promise<RunEntry[] | undefined> {
    return (await this.#inner.runs(tenant, this.#seal(workflow), before, limit))?.map((r) => this.#openRun(r));
  }

  async dueSchedules(nowMs: number, limit: number): Promise<DueSchedule[]> {
    return (await this.#inner.dueSchedules(nowMs, limit)).map((d) => ({ ...d, workflow: this.#cipher.decrypt(d.workflow) }));
  }

  async runSchedule(due: DueSchedule, nowMs: number, webhookId: string): Promise<RunEntry | undefined> {
    const made = await this.#inner.runSchedule({ ...due, workflow: this.#seal(due.workflow) }, nowMs, webhookId);
    return made === undefined ? undefined : this.#openRun(made);
  }

  async claimDeliveries(nowMs: number, claimMs: number, limit: number): Promise<DeliveryJob[]> {
    const d = (text: string): string => this.#cipher.decrypt(text);
    return (await this.#inner.claimDeliveries(nowMs, claimMs, limit)).map((j) => ({
      ...j,
      run: this.#openRun(j.run),
      webhookUrl: d(j.webhookUrl),
      webhookSecret: d(j.webhookSecret),
    }));
  }

  /** A stored run in plaintext. Its lists were sorted by ciphertext in the database: sorted again, by code point. */
  #openRun(run: RunEntry): RunEntry {
    const names = (list: readonly string[]): string[] => list.map((u) => this.#cipher.decrypt(u)).sort(byCodePoint);
    return { ...run, workflow: this.#cipher.decrypt(run.workflow), added: names(run.added), removed: names(run.removed) };
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

  revision(tenant: TenantId): Promise<number> {
    return this.#inner.revision(tenant);
  }
  revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>> {
    return this.#inner.revisions(tenants);
  }
  /** Tenant ids are hashes, never names: nothing to seal. */
  tenantsSince(cursor: string | undefined): Promise<CreatedTenants> {
    return this.#inner.tenantsSince(cursor);
  }
  pruneAudit(before: string, limit: number): Promise<number> {
    return this.#inner.pruneAudit(before, limit);
  }
  takeLease(owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
    return this.#inner.takeLease(owner, nowMs, ttlMs);
  }
  releaseLease(owner: string): Promise<void> {
    return this.#inner.releaseLease(owner);
  }
  recordDelivery(update: DeliveryUpdate): Promise<void> {
    return this.#inner.recordDelivery(update);
  }
  claimEncryption(mark: string): Promise<string> {
    return this.#inner.claimEncryption(mark);
  }
  cursorSecret(): Promise<Buffer> {
    return this.#inner.cursorSecret();
  }
  ping(): Promise<void> {
    return this.#inner.ping();
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

const SEALED_MAX = 50_000;

/** Code point order (names are ASCII, where it is also UTF-16 order): how a run lists its users. */
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** `change` with every name (and a description) passed through `f`. */
function mapNames(change: Change, f: (text: string) => string): Change {
  switch (change.op) {
    case 'role.create':
      return { op: change.op, role: f(change.role), description: f(change.description) };
    case 'role.delete':
      return { op: change.op, role: f(change.role) };
    case 'permission.grant':
    case 'permission.revoke':
      return { op: change.op, role: f(change.role), permission: f(change.permission) };
    case 'membership.add':
    case 'membership.remove':
      return { op: change.op, role: f(change.role), user: f(change.user) };
  }
}

/** The outcome in plaintext: the change as asked, and a refusal worded with the plaintext names. */
function plainOutcome(outcome: WriteOutcome, change: Change): WriteOutcome {
  if (outcome.ok) return { ...outcome, change };
  return refused(refusalFor(outcome.error.code as RefusalCode, change), outcome.revision);
}
