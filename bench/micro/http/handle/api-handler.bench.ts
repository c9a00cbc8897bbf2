/**
 * src/http/handle/api-handler.ts: has_permission through the whole route handler as the server
 * wires it (credentials, cache, graph, serialised answer, the Reply with its metrics), without a
 * socket: an engine that only keeps the handlers, and request and response objects that only
 * record. What a request costs above the engine's own parsing and writing.
 */
import { randomUUID } from 'node:crypto';
import { TenantCache } from '../../../../src/cache/index.ts';
import { loadConfig } from '../../../../src/config/index.ts';
import type { Engine, EngineApp, EngineRequest, EngineResponse, Handler } from '../../../../src/http/engine/port.ts';
import { tenantOfKey } from '../../../../src/http/input/credentials.ts';
import { RevokedTokens, startHttpServer, type Backend } from '../../../../src/http/server.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { NO_REQUEST_METRICS } from '../../../../src/metrics/requests.ts';
import { generate, probes } from '../../../lib/dataset.ts';
import type { MicroTask } from '../../task.ts';
import { imageOfSnapshot } from '../../../../src/authz/graph-image.ts';

const ds = generate({
  users: 33_334,
  roles: 100,
  permissions: 1_000,
  rolesPerUser: 3,
  grantsPerRole: [10, 50],
  clients: 1,
  hotHolders: 0,
  pareto: 1.2,
  seed: 42,
});
const key = randomUUID();
const tenant = tenantOfKey(key);

const handlers = new Map<string, Handler>();
const app: EngineApp = {
  on: (method, pattern, handler) => void handlers.set(`${method} ${pattern}`, handler),
  otherMethods: () => undefined,
  fallback: () => undefined,
  listen: async () => ({ port: 0, stopAccepting: () => undefined, closeConnections: () => undefined }),
};
const engine: Engine = { name: 'uws', reason: 'micro-benchmark', prepareCluster: () => undefined, createApp: () => app };
// The data set as one snapshot, what a hydration reads.
const cache = new TenantCache(async () => imageOfSnapshot(ds.model.snapshot()), 256 * 1024 * 1024);
await cache.load(tenant);
// The client index as a worker loads it at start: this key is the only client.
cache.know([tenant], true);
const unused = (): never => {
  throw new Error('the hot path asked the backend');
};
await startHttpServer({
  config: loadConfig({ AUTH_LOG_LEVEL: 'error' }, '/nonexistent'),
  log: createLogger('error'),
  cache,
  backend: new Proxy({}, { get: () => unused }) as Backend,
  cursorSecret: Buffer.alloc(32, 7),
  engine,
  metrics: NO_REQUEST_METRICS,
  revoked: new RevokedTokens(),
});
const hasPermission = [...handlers].find(([k]) => k.startsWith('GET /api/has_permission/'))?.[1];
if (hasPermission === undefined) throw new Error(`no has_permission handler among ${[...handlers.keys()].join(', ')}`);

const sample = probes(ds, 4_096, 0.2, 7);
const knownAuthorization = `Bearer ${key}`;
let authorization = knownAuthorization;
/** Keys no client ever wrote with, each new to the process when asked (a random-key flood). */
const unknownKeys = Array.from({ length: 4_096 }, () => `Bearer ${randomUUID()}`);
let answered: string | Uint8Array = '';
const response: EngineResponse = {
  writeStatus: () => response,
  writeHeader: () => response,
  end: (body: string | Uint8Array) => {
    answered = body;
    return response;
  },
  endWithoutBody: () => response,
  cork: (write: () => void) => {
    write();
    return response;
  },
  onAborted: () => response,
  onData: () => response,
  getRemoteAddressAsText: () => new TextEncoder().encode('127.0.0.1').buffer,
};
let user = '';
let permission = '';
const request: EngineRequest = {
  getHeader: (name) => (name === 'authorization' ? authorization : ''),
  getParameter: (i) => (i === 0 ? user : permission),
  getQuery: () => undefined,
  getMethod: () => 'get',
  getUrl: () => '/api/has_permission',
};
let i = 0;
const ask = (p: { user: string; permission: string }): string | Uint8Array => {
  user = encodeURIComponent(p.user);
  permission = encodeURIComponent(p.permission);
  hasPermission(response, request);
  return answered;
};
/** The answer's text (a prebuilt answer comes as bytes). */
const textOf = (body: string | Uint8Array): string => (typeof body === 'string' ? body : Buffer.from(body).toString('latin1'));

export const tasks: MicroTask[] = [
  {
    name: 'has_permission, whole handler (Pareto probes, 20% false)',
    check: () => {
      authorization = knownAuthorization;
      for (const p of sample) {
        const body = JSON.parse(textOf(ask(p))) as { data?: { has_permission?: boolean } };
        if (body.data?.has_permission !== p.expected) throw new Error(`has_permission(${p.user}, ${p.permission}) answered ${JSON.stringify(body)}`);
      }
    },
    fn: () => {
      authorization = knownAuthorization;
      return ask(sample[i++ & 4095] as { user: string; permission: string });
    },
  },
  {
    name: 'has_permission, unknown keys (a new random key on every request)',
    check: () => {
      authorization = unknownKeys[0] as string;
      const body = JSON.parse(textOf(ask(sample[0] as { user: string; permission: string }))) as { data?: { has_permission?: boolean } };
      if (body.data?.has_permission !== false) throw new Error(`an unknown key answered ${JSON.stringify(body)}`);
    },
    fn: () => {
      authorization = unknownKeys[i & 4095] as string;
      return ask(sample[i++ & 4095] as { user: string; permission: string });
    },
  },
];
