import { Redis } from 'ioredis';
import { isTenantId } from '../authz/tenant.ts';
import type { BusMessage } from './messages.ts';
import type { RedisBridge, RedisBridgeOptions } from './port.ts';

/** The channel every instance publishes its committed changes on. */
const CHANGES_CHANNEL = 'rbac-gateway:changes:v1';

/** What travels through Redis: a change message (or a revocation) and the instance that committed it. */
type RedisEnvelope = BusMessage & { readonly from: string };

/** Whether `m` is a revocation from another instance: a jti of a token's length, an expiry in ms. */
function isRevocationEnvelope(m: Record<string, unknown>): boolean {
  return (
    m.v === 1 && typeof m.from === 'string' && typeof m.revoked === 'string' && m.revoked.length > 0 && m.revoked.length <= 128 && Number.isSafeInteger(m.until)
  );
}

/** Whether `x` is an envelope; its tenant must look like a TenantId (see isTenantId). */
function isEnvelope(x: unknown): x is RedisEnvelope {
  if (typeof x !== 'object' || x === null) return false;
  const m = x as Record<string, unknown>;
  if ('revoked' in m) return isRevocationEnvelope(m);
  return (
    m.v === 1 &&
    typeof m.from === 'string' &&
    isTenantId(m.tenant) &&
    Number.isSafeInteger(m.revision) &&
    (m.revision as number) > 0 &&
    // Without changes (field encryption is on): the receivers read them from the changelog.
    (m.changes === undefined || (Array.isArray(m.changes) && m.changes.length > 0 && m.changes.every(isChange)))
  );
}

const isChange = (c: unknown): boolean => typeof c === 'object' && c !== null && typeof (c as { op?: unknown }).op === 'string';

function parseEnvelope(text: string): RedisEnvelope | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isEnvelope(parsed) ? parsed : undefined;
}

/** A message of the changes channel: another instance's change or revocation, handed to the primary's fan-out. */
function received(o: RedisBridgeOptions, text: string): void {
  const parsed = parseEnvelope(text);
  if (parsed === undefined) {
    o.log.warn('ignored a malformed message on the changes channel', { bytes: text.length });
    return;
  }
  if (parsed.from === o.instance) return;
  if ('revoked' in parsed) {
    o.onChange({ v: 1, revoked: parsed.revoked, until: parsed.until, remote: true });
    return;
  }
  const { tenant, revision, changes } = parsed;
  const at = typeof parsed.at === 'number' && Number.isFinite(parsed.at) ? { at: parsed.at } : {};
  o.onChange(changes === undefined ? { v: 1, tenant, revision, remote: true, ...at } : { v: 1, tenant, revision, changes, remote: true, ...at });
}

/** ioredis options of both connections: fail fast while Redis is away, reconnect with backoff. */
const CONNECTION = {
  lazyConnect: false,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 2000,
  retryStrategy: (times: number): number => Math.min(100 * 2 ** Math.min(times, 5), 2000),
};

/**
 * The Redis adapter of the invalidation bus, run by the primary: changes committed by this
 * instance's workers are published; changes from other instances are handed to the primary's
 * fan-out. Redis is not trusted to deliver everything (pub/sub drops messages while a connection
 * is down): the workers' periodic revalidation is the backstop, and a reconnect triggers one.
 */
export function redisBridge(o: RedisBridgeOptions): RedisBridge {
  const pub = new Redis(o.url, { ...CONNECTION, connectionName: `rbac-gateway-pub-${o.instance}` });
  const sub = new Redis(o.url, { ...CONNECTION, autoResubscribe: false, connectionName: `rbac-gateway-sub-${o.instance}` });
  let subscribed = false;
  let closing = false;
  const setState = (up: boolean): void => {
    if (up === subscribed) return;
    subscribed = up;
    if (up) o.log.info('redis subscribed', { channel: CHANGES_CHANNEL });
    else if (!closing) o.log.warn('redis subscription lost; relying on revalidation until it is back');
    o.onState(up);
  };

  let lastError = '';
  const onError = (err: Error): void => {
    // ioredis retries on its own; log each distinct failure once, not every retry.
    if (err.message !== lastError) o.log.warn('redis error', { err });
    lastError = err.message;
  };
  pub.on('error', onError);
  sub.on('error', onError);
  sub.on('ready', () => {
    lastError = '';
    sub.subscribe(CHANGES_CHANNEL).then(
      () => setState(true),
      (err: unknown) => o.log.warn('redis subscribe failed', { err }),
    );
  });
  sub.on('close', () => setState(false));
  sub.on('message', (channel: string, text: string) => {
    if (channel !== CHANGES_CHANNEL) return;
    if (!o.tracer.enabled) return received(o, text);
    const attributes = { 'messaging.system': 'redis', 'messaging.message.body.size': text.length };
    void o.tracer.span('redis.receive', async () => received(o, text), { kind: 'consumer', attributes });
  });
  return {
    publish(msg) {
      if (pub.status !== 'ready') return;
      const text = JSON.stringify({ ...msg, from: o.instance } satisfies RedisEnvelope);
      if (!o.tracer.enabled) return void pub.publish(CHANGES_CHANNEL, text).catch(() => undefined);
      const attributes = { 'messaging.system': 'redis', 'messaging.message.body.size': text.length };
      void o.tracer.span('redis.publish', () => pub.publish(CHANGES_CHANNEL, text), { kind: 'producer', attributes }).catch(() => undefined);
    },
    get subscribed() {
      return subscribed;
    },
    async close() {
      closing = true;
      sub.disconnect();
      pub.disconnect();
    },
  };
}
