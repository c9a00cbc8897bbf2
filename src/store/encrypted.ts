import type { AuditEntry, AuditRecord } from '../audit/record.ts';
import type { Change, ChangeRecord, Snapshot, WriteOutcome } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import { refusalFor, refused, type RefusalCode } from '../authz/write-rules.ts';
import type { FieldCipher } from '../crypto/field-cipher.ts';
import type { PendingWrite, StoreAdapter, WriteSettled } from './port.ts';

/**
 * Field encryption around an adapter (CONTRACT.md §8), run inside a pool thread: names,
 * descriptions and audit resources are encrypted before the adapter sees them and decrypted as
 * they come back, so the database (tables, changelog, audit) never holds one in plaintext. The
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
    return this.#inner.appendAudit(rows.map((r) => ({ ...r, resource: this.#cipher.encrypt(r.resource) })));
  }

  async audit(tenant: TenantId, before: number | undefined, limit: number): Promise<AuditEntry[]> {
    return (await this.#inner.audit(tenant, before, limit)).map((r) => ({ ...r, resource: this.#cipher.decrypt(r.resource) }));
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
  pruneAudit(before: string, limit: number): Promise<number> {
    return this.#inner.pruneAudit(before, limit);
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
