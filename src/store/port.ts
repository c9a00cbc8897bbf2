import type { AuditEntry, AuditOfWrite, AuditPosition, AuditRecord } from '../audit/record.ts';
import type { BoundaryCommitted, Change, ChangeRecord, Snapshot, WriteOutcome } from '../authz/changes.ts';
import { buffersOf, isGraphImage, type GraphImage } from '../authz/graph-image.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { ExportPage, ExportPosition, ImportDone, ImportFile, ImportMode } from '../authz/transfer.ts';
import type { WireError } from '../errors/index.ts';
import type { WorkflowStore } from '../workflow/records.ts';

export type { BoundaryCommitted, WriteCommitted, WriteOutcome, WriteRefused } from '../authz/changes.ts';
import type { WriteRefused } from '../authz/changes.ts';
export type { RunEntry, ScheduleEntry, ScheduleInput, WorkflowStore } from '../workflow/records.ts';
export type { AuditPosition } from '../audit/record.ts';

/*
 * The store ports, by role. Each adapter (SQLite, PostgreSQL) implements every role, one file
 * per role (`tenant.ts`, `audit.ts`, `workflow.ts`; Meta in its `index.ts`, which composes
 * them, see composed.ts); a wrapper (store/wrappers/) overrides only the calls it changes; the
 * pool carries every call to its threads by name (calls.ts). A new method is written in this
 * file, in one role file of each adapter, and once in each of composed.ts, calls.ts and
 * wrappers/delegating.ts, which the compiler holds to the ports. Failures (the database is
 * unreachable, a bug) are thrown.
 */

/** A tenant's graph: its state, revisions and changelog, and the writes that move it. */
export interface TenantStore {
  /**
   * Everything the tenant holds, read in one transaction (revision 0 and empty when unknown):
   * the same read as {@link loadGraph}'s, as rows. Memberships come by user then role, in code
   * point order.
   */
  load(tenant: TenantId): Promise<Snapshot>;
  /**
   * The same state as the graph's buffers ({@link imageOfSnapshot} of {@link load}), built where
   * it is read: on a pool thread, so that the worker's event loop only adopts the buffers.
   */
  loadGraph(tenant: TenantId): Promise<GraphImage>;
  /** The tenant's committed revision (0 when unknown). */
  revision(tenant: TenantId): Promise<number>;
  /**
   * The committed revisions of many tenants in one query (revalidation of a whole cache): pairs
   * for the tenants the database knows; a tenant it does not know is at revision 0.
   */
  revisions(tenants: readonly TenantId[]): Promise<Array<[TenantId, number]>>;
  /**
   * The tenants created or whose revision moved after `cursor` (every tenant when undefined), each
   * with its committed revision, and the cursor to ask from next time (opaque). A tenant whose
   * creation or write commits after this call is in a later answer, whatever order transactions
   * commit in; a tenant may come more than once. One indexed query whose cost follows the writes:
   * the revalidation backstop asks every period, whatever the number of graphs cached.
   */
  tenantsSince(cursor: string | undefined): Promise<CreatedTenants>;
  /** Committed changes with a revision above `since`, ascending, at most `limit`. */
  changes(tenant: TenantId, since: number, limit: number): Promise<ChangeRecord[]>;
  /**
   * Applies many write requests, in the order given for any one tenant. Each is checked against
   * the stored state and is atomic: its changes (in order, a later one seeing the earlier ones),
   * the tenant's revision + 1 and one changelog row per change, all at that revision, commit
   * together or not at all; a refusal is a value (an outcome naming the change refused), not a
   * failure. Each settles on its own: one that fails does not fail the others, unless the failure
   * is the commit they share (then none of them is in, and each reports that failure).
   */
  writeMany(writes: readonly PendingWrite[]): Promise<WriteSettled[]>;
  /**
   * Commits the boundaries of every tenant's windows that passed by `nowMicros` (docs/api.md
   * §12.1), oldest first, at most `limit`: each its own write (`*.activate` drops the edge's
   * `notBefore`, `*.expire` deletes the edge), revision + 1, a changelog row timed at the boundary,
   * an audit row by `system`. Each applies only while the edge still has that very bound, so a
   * boundary is committed once whoever calls, however often (an edge whose window was replaced is
   * left alone). Answers what it committed, in commit order.
   */
  commitBoundaries(nowMicros: number, limit: number): Promise<BoundaryCommitted[]>;
  /**
   * A page of the tenant's export (docs/api.md §17): at most `limit` rows after `after` (from
   * the start when undefined) in the export's order (roles by role, grants by role then
   * permission, memberships by role then user, code point order), read in one transaction with
   * the tenant's revision, which the caller compares from page to page.
   */
  exportPage(tenant: TenantId, after: ExportPosition | undefined, limit: number): Promise<ExportPage>;
  /**
   * Imports a client's data (docs/api.md §17) in one transaction: what `file` changes in
   * `mode`, at one new revision with one changelog row `client.import` and one audit row, or
   * nothing at all when it changes nothing (no revision). Refused (412) when `ifMatch` is given
   * and the tenant is not at it. `dry`: nothing is written; the answer says what would be, with
   * the difference as writes.
   */
  importData(request: ImportRequest): Promise<ImportDone | WriteRefused>;
}

/** An import as the store takes it. */
export interface ImportRequest {
  readonly tenant: TenantId;
  readonly mode: ImportMode;
  readonly file: ImportFile;
  readonly ifMatch?: number | undefined;
  /** The request's audit row (action `client.import`), committed with the import. */
  readonly audit?: AuditOfWrite | undefined;
  readonly dry: boolean;
}

/** The audit trail. */
export interface AuditStore {
  /** Audit rows recorded apart from a write (failed requests, reads, tokens), in one transaction. */
  appendAudit(rows: readonly AuditRecord[]): Promise<void>;
  /**
   * The tenant's audit rows after `after` in the list's order (from the top when undefined), at
   * most `limit`. The list is newest first by time (`at`, a wire timestamp, whose text order is
   * time order), rows of the same time by id, highest first: a row recorded late (a failed
   * request's, batched) lists by when it happened, not by when it was stored.
   */
  audit(tenant: TenantId, after: AuditPosition | undefined, limit: number): Promise<AuditEntry[]>;
  /** Deletes at most `limit` audit rows older than `before` (a wire timestamp); how many went. */
  pruneAudit(before: string, limit: number): Promise<number>;
}

/** Issued tokens and their revocation (docs/api.md §3): no graph holds them, no revision counts them. */
export interface TokenStore {
  /** Records a token just issued: its jti, its tenant, its expiry (ms since the epoch). */
  recordToken(tenant: TenantId, jti: string, expiresAtMs: number): Promise<void>;
  /**
   * Revokes the tenant's token `jti`, when it was issued to that tenant and has not expired by
   * `nowMs`, committing `audit` with it; answers the token's expiry (ms since the epoch), else
   * undefined (nothing stored). Revoking it again answers the same.
   */
  revokeToken(tenant: TenantId, jti: string, nowMs: number, audit: AuditRecord): Promise<number | undefined>;
  /** Every revoked token not expired by `nowMs`: its jti and expiry (ms since the epoch). */
  revokedTokens(nowMs: number): Promise<Array<[string, number]>>;
  /** Deletes at most `limit` tokens expired by `nowMs`; how many went. */
  pruneTokens(nowMs: number, limit: number): Promise<number>;
}

/** The database itself: reachability, the encryption mark, the shared cursor secret. */
export interface Meta {
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /** A secret shared by every process using this database (signs pagination cursors). */
  cursorSecret(): Promise<Buffer>;
  /**
   * Records how this database's names are stored (`mark`: plaintext, or encrypted with a key's
   * fingerprint) unless it already knows, and answers what it knows. A database written before
   * marks existed, and holding data, is plaintext. Touches no client data.
   */
  claimEncryption(mark: string): Promise<string>;
}

/** Every call of every role: the methods that ask the database something. */
export interface StoreCalls extends TenantStore, AuditStore, WorkflowStore, TokenStore, Meta {}
export type StoreMethod = keyof StoreCalls;

/** Every role, and closing: what an adapter implements, and what the pool and the wrappers offer in front of it. */
export interface Store extends StoreCalls {
  close(): Promise<void>;
}

/** One object per role: what an adapter is made of (its `index.ts` composes them, see store/composed.ts). */
export interface StoreRoles {
  readonly tenant: TenantStore;
  readonly audit: AuditStore;
  readonly workflow: WorkflowStore;
  readonly tokens: TokenStore;
  readonly meta: Meta;
}

/**
 * Below this size a graph image is copied, not moved: the copy is made by the thread that keeps
 * it, in its own allocator, so that many small graphs do not each pin a chunk among the pool
 * thread's short-lived buffers (memory the allocator could then never give back).
 */
const MOVE_FROM_BYTES = 64 * 1024;

/**
 * The buffers a store method's value may give up to the thread that asked, rather than have them
 * copied (a large graph image's: a hydration's whole graph); undefined for a value to copy.
 */
export function movableBuffers(value: unknown): ArrayBuffer[] | undefined {
  if (!isGraphImage(value)) return undefined;
  const buffers = buffersOf(value);
  return buffers.reduce((n, b) => n + b.byteLength, 0) >= MOVE_FROM_BYTES ? buffers : undefined;
}

/** What {@link TenantStore.tenantsSince} answers. */
export interface CreatedTenants {
  readonly tenants: TenantId[];
  /** Each tenant's committed revision, in the same order. */
  readonly revisions: number[];
  /** Where the next call goes on from. */
  readonly cursor: string;
}

/** One write request of a {@link TenantStore.writeMany} batch. */
export interface PendingWrite {
  readonly tenant: TenantId;
  /** In order; one or more (an atomic batch, docs/api.md §12.2). */
  readonly changes: readonly Change[];
  /** If-Match (docs/api.md §12.4): commit only while the tenant is at this revision, else refuse with ERR_CONSISTENCY_PRECONDITION_FAILED. */
  readonly ifMatch?: number | undefined;
  /**
   * The request's audit row, committed with the changes when they commit (never with a refusal):
   * one row per change, each with the change's op as its action.
   */
  readonly audit?: AuditOfWrite | undefined;
}

/** How one write of a batch settled: its outcome (committed or refused), or the failure. */
export type WriteSettled = { readonly ok: true; readonly value: WriteOutcome } | { readonly ok: false; readonly error: WireError };
