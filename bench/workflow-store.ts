/**
 * Filling the databases of `npm run bench:workflows` before any gateway starts. Over HTTP the
 * ~140,000 writes would take minutes; through the store port (`openStore(...).writeMany`, the
 * adapter the pool threads run) in batches they take seconds on SQLite. PostgreSQL takes one
 * tenant's writes one transaction at a time (its row lock), far too slow for the run's budget, so
 * its database (migrated by the adapter) gets the rows of the seeded SQLite file, copied table by
 * table, as bench/encryption.ts does.
 */
import type { Change } from '../src/authz/changes.ts';
import type { TenantId } from '../src/authz/tenant.ts';
import { openStore } from '../src/store/index.ts';
import { copyTenant, freshDatabase } from './databases.ts';

const BATCH = 2_000;

/** Writes `changes` to a new SQLite file through the store port; seconds taken. Every write must commit at the next revision. */
export async function seedSqlite(path: string, tenant: TenantId, changes: readonly Change[]): Promise<number> {
  const store = openStore({ type: 'sqlite', sqlitePath: path });
  const started = performance.now();
  try {
    for (let i = 0; i < changes.length; i += BATCH) {
      const settled = await store.writeMany(changes.slice(i, i + BATCH).map((change) => ({ tenant, change })));
      settled.forEach((s, j) => {
        if (!s.ok || !s.value.ok) throw new Error(`seed write ${i + j} did not commit: ${JSON.stringify(s)}`);
        if (s.value.revision !== i + j + 1) throw new Error(`seed write ${i + j} committed at revision ${s.value.revision}`);
      });
    }
  } finally {
    await store.close();
  }
  return (performance.now() - started) / 1000;
}


/** A fresh PostgreSQL database holding the tenant of `sqlitePath`; seconds taken, and `drop`. */
export async function postgresCopy(sqlitePath: string, tenant: TenantId): Promise<{ url: string; seconds: number; drop(): Promise<void> }> {
  const started = performance.now();
  const db = await freshDatabase();
  try {
    const adapter = openStore({ type: 'postgresql', postgresql: { url: db.url, poolMax: 2, connectTimeoutMs: 3000, statementTimeoutMs: 60_000 } });
    try {
      await adapter.cursorSecret(); // migrates
    } finally {
      await adapter.close();
    }
    await copyTenant(sqlitePath, db.url, tenant);
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
  return { url: db.url, seconds: (performance.now() - started) / 1000, drop: db.drop };
}

