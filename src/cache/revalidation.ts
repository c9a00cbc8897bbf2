import type { TenantId } from '../authz/tenant.ts';
import { every, systemClock, type Clock } from '../time/clock.ts';
import type { Replay, TenantCache } from './index.ts';

/**
 * What the backstop reads from the database (the store port's `tenantsSince`, declared here so
 * that the cache does not depend on the store).
 */
export interface RevisionSource {
  /**
   * The tenants created or whose revision moved after `cursor` (every tenant when undefined), each
   * with its committed revision, and the cursor to ask from next.
   */
  tenantsSince(cursor: string | undefined): Promise<{ readonly tenants: readonly TenantId[]; readonly revisions: readonly number[]; readonly cursor: string }>;
}

/** Where the backstop reports (a logger's debug level). */
export interface RevalidationLog {
  debug(message: string, fields?: Record<string, unknown>): void;
}

/** Where the client index's backstop goes on from: the store's cursor after its last read. */
export interface CreatedCursor {
  value: string;
}

/**
 * Reads every tenant the database holds into the cache's client index, before the worker
 * serves: from then on a key missing from the index is answered as an empty client. Call it
 * after subscribing to the changes, so that a tenant created after this read is heard of.
 */
export async function loadClientIndex(cache: TenantCache, store: RevisionSource): Promise<CreatedCursor> {
  const all = await store.tenantsSince(undefined);
  cache.know(all.tenants, true);
  return { value: all.cursor };
}

/**
 * The backstop for changes this worker never heard of (a Redis message lost, another instance
 * on the same database without Redis): every `periodMs`, one query for the tenants created or
 * changed since the last look, into the client index, and a changelog replay (or a drop) for
 * each cached graph found behind. Its cost follows the writes, not the number of graphs cached.
 */
export function startRevalidation(
  cache: TenantCache,
  store: RevisionSource,
  replay: (tenant: TenantId) => Replay,
  created: CreatedCursor,
  periodMs: number,
  log: RevalidationLog,
  clock: Clock = systemClock,
): { now(): Promise<void>; stop(): void } {
  let running: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    const since = await store.tenantsSince(created.value);
    cache.know(since.tenants, false);
    created.value = since.cursor;
    for (let i = 0; i < since.tenants.length; i++) {
      const tenant = since.tenants[i] as TenantId;
      const stored = since.revisions[i] ?? 0;
      const revision = cache.cachedRevision(tenant);
      if (revision !== undefined && stored > revision) log.debug('revalidation found a graph behind', { revision, stored });
      await cache.catchUp(tenant, stored, replay(tenant));
    }
  };
  const now = (): Promise<void> => {
    running ??= run()
      .catch((err: unknown) => log.debug('revalidation failed', { err }))
      .finally(() => (running = undefined));
    return running;
  };
  // Background work: it does not keep the worker alive on its own.
  const timer = every(clock, periodMs, () => void now(), { unref: true });
  return { now, stop: () => timer.stop() };
}
