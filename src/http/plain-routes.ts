import { BUILD } from '../config/build.ts';
import { timestamp } from '../time/index.ts';
import type { Backend } from './backend.ts';
import type { EngineName, EngineRequest, EngineResponse, Handler } from './engine/port.ts';
import { buildOpenApi } from './openapi.ts';
import { corked, send } from './reply.ts';
import type { Responder } from './responder.ts';
import type { RouteTable } from './route-table.ts';
import { ROUTES } from './routes/index.ts';

/** The unauthenticated routes: liveness (/ping, /health), readiness, the build and the API's description. */
export function registerPlainRoutes(routes: RouteTable, responder: Responder, backend: Backend, engine: EngineName): void {
  const fixedBody = (body: string): Handler => (res, req) => send(responder.target(res, req, ''), responder.cors, 200, body, undefined);
  routes.on('GET', '/ping', (res, req) =>
    send(responder.target(res, req, ''), responder.cors, 200, `{"message":"pong","status":"ok","timestamp":"${timestamp()}"}`, undefined),
  );
  routes.on('HEAD', '/ping', (res, req) => pingHead(responder, res, req));
  routes.on('GET', '/health', fixedBody('{"status":"ok"}'));
  routes.on('GET', '/openapi.json', fixedBody(JSON.stringify(buildOpenApi(ROUTES))));
  routes.on('GET', '/version', fixedBody(JSON.stringify({ name: BUILD.name, version: BUILD.version, node: process.version, engine })));
  routes.on('GET', '/ready', (res, req) => ready(responder, backend, res, req));
}

function pingHead(responder: Responder, res: EngineResponse, req: EngineRequest): void {
  const t = responder.target(res, req, '');
  res.writeStatus('200 OK');
  res.writeHeader('Content-Type', 'application/json');
  res.writeHeader('X-Request-Id', t.requestId);
  if (responder.cors.varyOnOrigin) res.writeHeader('Vary', 'Origin');
  const allow = t.origin === '' ? undefined : responder.cors.allowOrigin(t.origin);
  if (allow !== undefined) res.writeHeader('Access-Control-Allow-Origin', allow);
  res.endWithoutBody();
}

/** 200 when every dependency is ready, else 503 naming the missing ones. */
function ready(responder: Responder, backend: Backend, res: EngineResponse, req: EngineRequest): void {
  const t = responder.target(res, req, '');
  res.onAborted(() => (t.aborted = true));
  void backend
    .notReady()
    .catch(() => ['database'])
    .then((missing) => {
      const status = missing.length === 0 ? 200 : 503;
      const body = missing.length === 0 ? '{"status":"ready"}' : JSON.stringify({ status: 'not ready', missing });
      corked(t, () => send(t, responder.cors, status, body, undefined, status === 503 ? [['Retry-After', '1']] : undefined));
    });
}
