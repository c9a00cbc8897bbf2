import type { StoreCalls, StoreMethod } from './port.ts';

/** The arguments of store call `K`, as its port declares them. */
export type StoreArgs<K extends StoreMethod> = Parameters<StoreCalls[K]>;
/** What store call `K` resolves to, as its port declares it. */
export type StoreAnswer<K extends StoreMethod> = Awaited<ReturnType<StoreCalls[K]>>;

/** How to make store call `K` on a store, given its arguments. */
type Caller<K extends StoreMethod> = (store: StoreCalls, args: StoreArgs<K>) => Promise<StoreAnswer<K>>;

/**
 * Every store call, made by its name: where a call travels as a name and its arguments (a pool
 * task, a wrapper that treats every call alike) it is made here, by a line the compiler checks
 * against the port. The type holds this table equal to the ports both ways: a method added to a
 * port must be given its line, and a line no port declares does not build.
 */
const CALLERS: { readonly [K in StoreMethod]: Caller<K> } = {
  load: (s, [tenant]) => s.load(tenant),
  loadGraph: (s, [tenant]) => s.loadGraph(tenant),
  revision: (s, [tenant]) => s.revision(tenant),
  revisions: (s, [tenants]) => s.revisions(tenants),
  tenantsSince: (s, [cursor]) => s.tenantsSince(cursor),
  changes: (s, [tenant, since, limit]) => s.changes(tenant, since, limit),
  writeMany: (s, [writes]) => s.writeMany(writes),
  commitBoundaries: (s, [nowMicros, limit]) => s.commitBoundaries(nowMicros, limit),
  exportPage: (s, [tenant, after, limit]) => s.exportPage(tenant, after, limit),
  importData: (s, [request]) => s.importData(request),
  appendAudit: (s, [rows]) => s.appendAudit(rows),
  audit: (s, [tenant, after, limit]) => s.audit(tenant, after, limit),
  pruneAudit: (s, [before, limit]) => s.pruneAudit(before, limit),
  putSchedule: (s, [schedule, nowMs, audit]) => s.putSchedule(schedule, nowMs, audit),
  deleteSchedule: (s, [tenant, workflow, audit]) => s.deleteSchedule(tenant, workflow, audit),
  schedules: (s, [tenant]) => s.schedules(tenant),
  runs: (s, [tenant, workflow, before, limit]) => s.runs(tenant, workflow, before, limit),
  takeLease: (s, [owner, nowMs, ttlMs]) => s.takeLease(owner, nowMs, ttlMs),
  releaseLease: (s, [owner]) => s.releaseLease(owner),
  dueSchedules: (s, [nowMs, limit]) => s.dueSchedules(nowMs, limit),
  runSchedule: (s, [due, nowMs, webhookId]) => s.runSchedule(due, nowMs, webhookId),
  claimDeliveries: (s, [nowMs, claimMs, limit]) => s.claimDeliveries(nowMs, claimMs, limit),
  recordDelivery: (s, [update]) => s.recordDelivery(update),
  recordToken: (s, [tenant, jti, expiresAtMs]) => s.recordToken(tenant, jti, expiresAtMs),
  revokeToken: (s, [tenant, jti, nowMs, audit]) => s.revokeToken(tenant, jti, nowMs, audit),
  revokedTokens: (s, [nowMs]) => s.revokedTokens(nowMs),
  pruneTokens: (s, [nowMs, limit]) => s.pruneTokens(nowMs, limit),
  ping: (s) => s.ping(),
  cursorSecret: (s) => s.cursorSecret(),
  claimEncryption: (s, [mark]) => s.claimEncryption(mark),
};

/** Makes call `method` of `store` with `args`. */
export function callOf<K extends StoreMethod>(store: StoreCalls, method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
  return CALLERS[method](store, args);
}

/** Whether `name` is a store call (a pool thread checks a task's name before making it). */
export function isStoreMethod(name: unknown): name is StoreMethod {
  return typeof name === 'string' && Object.hasOwn(CALLERS, name);
}

/** The name of every store call, in the ports' order. */
export const STORE_METHOD_NAMES: readonly StoreMethod[] = Object.keys(CALLERS) as StoreMethod[];
