/**
 * Putting a data set where the gateway will read it. Before a gateway starts: through the store
 * port in batches (`openStore(...).writeMany`, the adapter the pool threads run), seconds for a
 * million writes, where HTTP would take minutes; PostgreSQL gets the SQLite file's rows copied
 * table by table (its row lock takes one tenant's writes one transaction at a time, far too slow).
 * Against a running instance (BENCH_TARGET): over HTTP, then deleted again.
 */
import type { Change, Window } from '../../src/authz/changes.ts';
import type { TenantId } from '../../src/authz/tenant.ts';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { FieldCipher } from '../../src/crypto/field-cipher.ts';
import { EncryptedStore } from '../../src/store/wrappers/encrypted.ts';
import { encryptedMark } from '../../src/store/encryption-mark.ts';
import { wireOfMicros } from '../../src/store/edge-windows.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/port.ts';
import { copyTenant, freshDatabase } from './databases.ts';

const BATCH = 4_000;

/**
 * Writes `changes` for every tenant into a new SQLite file; every write must commit at its tenant's
 * next revision. With `encryptionKey`, through the layer the gateway puts over the adapter when
 * encryption is on, the database marked as encrypted with that key.
 */
export async function seedSqlite(path: string, tenants: readonly TenantId[], changes: readonly Change[], encryptionKey?: string): Promise<void> {
  const adapter = openStore({ type: 'sqlite', sqlitePath: path });
  let store: Store = adapter;
  if (encryptionKey !== undefined) {
    const cipher = new FieldCipher(encryptionKey);
    await adapter.claimEncryption(encryptedMark(cipher.fingerprint));
    store = new EncryptedStore(adapter, cipher);
  }
  try {
    const total = tenants.length * changes.length;
    for (let i = 0; i < total; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, total - i) }, (_, j) => {
        const n = i + j;
        // Change-major order: every tenant grows together, as many clients would.
        return { tenant: tenants[n % tenants.length] as TenantId, changes: [changes[Math.floor(n / tenants.length)] as Change] };
      });
      const settled = await store.writeMany(batch);
      settled.forEach((s, j) => {
        const want = Math.floor((i + j) / tenants.length) + 1;
        if (!s.ok || !s.value.ok || s.value.revision !== want) throw new Error(`seed write ${i + j} did not commit at revision ${want}: ${JSON.stringify(s)}`);
      });
    }
  } finally {
    await store.close();
  }
}

/** A fresh PostgreSQL database, migrated, holding the tenants of `sqlitePath`; `drop` removes it. */
export async function postgresCopy(sqlitePath: string, tenants: readonly TenantId[]): Promise<{ url: string; drop(): Promise<void> }> {
  const db = await freshDatabase();
  try {
    const adapter = openStore({ type: 'postgresql', postgresql: { url: db.url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs: 120_000 } });
    try {
      await adapter.cursorSecret(); // migrates
    } finally {
      await adapter.close();
    }
    for (const t of tenants) await copyTenant(sqlitePath, db.url, t);
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
  return db;
}

/** An edge's window as the typed client sends it: RFC 3339 to the microsecond, in UTC. */
function windowOptions(w: Window): { notBefore?: string; expiresAt?: string } {
  const at = (micros: number | undefined): string | undefined => (micros === undefined ? undefined : `${wireOfMicros(micros)}Z`);
  const [notBefore, expiresAt] = [at(w.notBefore), at(w.expiresAt)];
  return { ...(notBefore === undefined ? {} : { notBefore }), ...(expiresAt === undefined ? {} : { expiresAt }) };
}

/** Sends one change through the typed client. */
function send(client: RbacClient, c: Change): Promise<ApiResult<unknown>> {
  switch (c.op) {
    case 'role.create':
      return client.createRole(c.role, { description: c.description });
    case 'role.delete':
      return client.deleteRole(c.role);
    case 'permission.grant':
      return client.grant(c.role, c.permission, windowOptions(c));
    case 'permission.revoke':
      return client.revoke(c.role, c.permission);
    case 'membership.add':
      return client.addMember(c.user, c.role, windowOptions(c));
    case 'membership.remove':
      return client.removeMember(c.user, c.role);
    default:
      // The data sets write no window of an existing edge and no boundary (the service commits those).
      throw new Error(`seeding over HTTP does not send ${c.op}`);
  }
}

/** Sends `changes` over HTTP, roles first, `concurrency` writes in flight; every one must answer 201. */
export async function seedHttp(client: RbacClient, changes: readonly Change[], concurrency = 32): Promise<void> {
  const creates = changes.filter((c) => c.op === 'role.create');
  const rest = changes.filter((c) => c.op !== 'role.create');
  for (const list of [creates, rest]) {
    let next = 0;
    const lane = async (): Promise<void> => {
      for (let c = list[next++]; c !== undefined; c = list[next++]) {
        const res = await send(client, c);
        if (res.status !== 201) throw new Error(`seeding ${c.op} ${c.role}: HTTP ${res.status} ${res.error ?? ''}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  }
}

/** Deletes every role the changes created (their grants and memberships go with them). */
export async function unseedHttp(client: RbacClient, changes: readonly Change[]): Promise<void> {
  for (const c of changes) {
    if (c.op !== 'role.create') continue;
    const res = await client.deleteRole(c.role);
    if (res.status !== 200 && res.status !== 404) throw new Error(`deleting ${c.role}: HTTP ${res.status} ${res.error ?? ''}`);
  }
}
