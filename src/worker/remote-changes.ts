import type { TenantId } from '../authz/tenant.ts';
import type { Replay, TenantCache } from '../cache/index.ts';
import type { Bus } from '../invalidation/index.ts';
import { isRevocation, type RevocationMessage } from '../invalidation/messages.ts';
import { APPLY_BUDGET_MS } from '../ipc/timing.ts';
import type { WorkerMetrics } from '../metrics/worker.ts';
import type { TenantStore } from '../store/port.ts';

/** A gap of more revisions than this is not replayed: the graph is rehydrated instead. */
const REPLAY_LIMIT = 1000;

/** A tenant's changelog after a revision, at most {@link REPLAY_LIMIT} revisions: how a graph that missed some catches up. */
export function changelogReplay(store: Pick<TenantStore, 'changes'>): (tenant: TenantId) => Replay {
  return (tenant) => (since) => store.changes(tenant, since, REPLAY_LIMIT);
}

/**
 * Changes committed by the other workers (and instances) are applied to this worker's graphs,
 * each within {@link APPLY_BUDGET_MS}; the delay from commit to applied is measured. Tokens they
 * revoked go to `revoked`.
 */
export function applyChangesFrom(
  bus: Bus,
  cache: TenantCache,
  replay: (tenant: TenantId) => Replay,
  metrics: WorkerMetrics | undefined,
  revoked: (msg: RevocationMessage) => void,
): void {
  bus.subscribe(async (msg) => {
    // A token revoked elsewhere (docs/api.md §3): no graph to touch.
    if (isRevocation(msg)) return revoked(msg);
    if (msg.v !== 1) return cache.drop(msg.tenant);
    // Applying is immediate unless a gap needs a changelog replay, which waits behind the pool's
    // queue. The writer's response waits for this acknowledgement, so a replay that is slow
    // gives up the graph instead (the next request hydrates it) rather than hold the write.
    const applied =
      msg.changes === undefined
        ? cache.catchUp(msg.tenant, msg.revision, replay(msg.tenant))
        : cache.apply(msg.tenant, msg.changes, msg.revision, replay(msg.tenant));
    if (!(await within(applied, APPLY_BUDGET_MS))) cache.drop(msg.tenant);
    else if (msg.at !== undefined) metrics?.invalidated(msg.remote === true ? 'instance' : 'worker', (Date.now() - msg.at) / 1000);
  });
}

/**
 * The changelog replay of the revalidation backstop, measured: what it replays was missed by the
 * messages (Redis down or a message lost), so its delay from the changelog's commit time is the
 * backstop's invalidation delay.
 */
export function measuredReplay(replay: (tenant: TenantId) => Replay, metrics: WorkerMetrics | undefined): (tenant: TenantId) => Replay {
  return (tenant) => async (since) => {
    const records = await replay(tenant)(since);
    for (const r of records) metrics?.invalidated('instance', (Date.now() - Date.parse(`${r.at.slice(0, 23)}Z`)) / 1000);
    return records;
  };
}

/** Whether `p` settles within `ms` (it keeps running either way). */
function within(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    p.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}
