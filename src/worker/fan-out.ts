import type { LoggedChange } from '../authz/changes.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { Replay, TenantCache } from '../cache/index.ts';
import type { Bus } from '../invalidation/index.ts';
import type { CommittedWrite, FanOutStage } from './write-pipeline.ts';

/**
 * The write pipeline's second stage: a committed batch applied to this worker's graphs and sent
 * to every other holder of graphs. Both must be done before the writes are answered; neither
 * needs the other first.
 */
export class FanOut implements FanOutStage {
  readonly #cache: TenantCache;
  readonly #bus: Bus;
  readonly #replay: (tenant: TenantId) => Replay;

  /** `replay`: a tenant's changelog, for a graph that missed a change (see remote-changes.ts `changelogReplay`). */
  constructor(cache: TenantCache, bus: Bus, replay: (tenant: TenantId) => Replay) {
    this.#cache = cache;
    this.#bus = bus;
    this.#replay = replay;
  }

  async fanOut(batch: readonly CommittedWrite[]): Promise<void> {
    const cache = this.#cache;
    await Promise.all([
      ...batch.map(({ tenant, outcome }) =>
        outcome.ok
          ? cache.apply(tenant, outcome.changes, outcome.revision, this.#replay(tenant))
          : cache.catchUp(tenant, outcome.revision, this.#replay(tenant)),
      ),
      this.#bus.publish(
        batch.map(({ tenant, outcome }) =>
          // `at`: when it committed, for the invalidation delay measured where it is applied.
          outcome.ok ? { v: 1, tenant, revision: outcome.revision, changes: outcome.changes, at: Date.now() } : { v: 1, tenant, revision: outcome.revision },
        ),
      ),
    ]);
  }

  /**
   * Fans out one commit that is not a write request's (an import's `client.import`): applied here
   * (the graph is dropped, to be hydrated again) and sent to every other holder of graphs.
   */
  async fanOutLogged(tenant: TenantId, revision: number, changes: readonly LoggedChange[]): Promise<void> {
    await Promise.all([
      this.#cache.apply(tenant, changes, revision, this.#replay(tenant)),
      this.#bus.publish([{ v: 1, tenant, revision, changes, at: Date.now() }]),
    ]);
  }
}
