import type { AuditRecord } from '../audit/record.ts';
import type { TenantId } from '../authz/tenant.ts';
import type { RevokedTokens } from '../http/server.ts';
import type { Bus } from '../invalidation/index.ts';
import type { RevocationMessage } from '../invalidation/messages.ts';
import type { Logger } from '../log/index.ts';
import type { TokenStore } from '../store/port.ts';

/** Expired tokens deleted per statement, and how often the store is cleared of them. */
const PRUNE_BATCH = 1000;
const PRUNE_PERIOD_MS = 3_600_000;

/**
 * The worker's side of token revocation (docs/api.md §3). A revocation is stored (with its audit
 * row), recorded here, and sent through the bus the way a change is: the answer waits until every
 * other worker of the instance has it, and the primary passes it to the other instances through
 * Redis. The revoked tokens are read from the store at start (so a restart forgets none) and again
 * every revalidation period: the backstop for a message Redis lost. Expired tokens are deleted
 * from the store hourly.
 */
export class Revocations {
  readonly #store: TokenStore;
  readonly #bus: Bus;
  readonly #revoked: RevokedTokens;
  readonly #log: Logger;
  #timers: NodeJS.Timeout[] = [];

  constructor(store: TokenStore, bus: Bus, revoked: RevokedTokens, log: Logger) {
    this.#store = store;
    this.#bus = bus;
    this.#revoked = revoked;
    this.#log = log;
  }

  /** The revoked tokens, read from the store: call before serving. */
  async load(): Promise<void> {
    this.#revoked.addAll(await this.#store.revokedTokens(Date.now()));
  }

  /** Revokes the tenant's token: its expiry once every worker refuses it, or undefined when there is no such token. */
  async revoke(tenant: TenantId, jti: string, audit: AuditRecord): Promise<number | undefined> {
    const until = await this.#store.revokeToken(tenant, jti, Date.now(), audit);
    if (until === undefined) return undefined;
    this.#revoked.add(jti, until);
    await this.#bus.publish([{ v: 1, revoked: jti, until }]);
    return until;
  }

  /** A revocation made by another worker or instance. */
  received(msg: RevocationMessage): void {
    this.#revoked.add(msg.revoked, msg.until);
  }

  /** Starts the backstop (every `periodMs`) and the hourly pruning; background work that keeps nothing alive. */
  start(periodMs: number): void {
    const backstop = setInterval(() => {
      this.load().catch((err: unknown) => this.#log.debug('reading the revoked tokens failed', { err }));
    }, periodMs);
    const prune = setInterval(() => void this.#prune(), PRUNE_PERIOD_MS);
    backstop.unref();
    prune.unref();
    this.#timers = [backstop, prune];
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
  }

  async #prune(): Promise<void> {
    try {
      while ((await this.#store.pruneTokens(Date.now(), PRUNE_BATCH)) === PRUNE_BATCH);
    } catch (err) {
      this.#log.warn('deleting expired tokens failed; trying again later', { err });
    }
  }
}
