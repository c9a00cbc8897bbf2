import { BUILD } from '../../config/build.ts';
import { timestamp } from '../../time/index.ts';
import type { Backend } from '../backend.ts';
import type { Drain } from '../reply/drain.ts';
import type { EngineName, EngineRequest, EngineResponse, Handler } from '../engine/port.ts';
import { buildOpenApi } from '../api/openapi.ts';
import { corked, type Reply } from '../reply/reply.ts';
import type { RouteTable } from './route-table.ts';
import { ROUTES } from '../api/routes.ts';

/** The unauthenticated routes: liveness (/ping, /health), readiness, the build and the API's description. */
export function registerPlainRoutes(routes: RouteTable, reply: Reply, backend: Backend, engine: EngineName, drain: Drain): void {
  const fixedBody =
    (body: string): Handler =>
    (res, req) =>
      reply.send(reply.target(res, req, ''), 200, body, undefined);
  routes.on('GET', '/ping', (res, req) =>
    reply.send(reply.target(res, req, ''), 200, `{"message":"pong","status":"ok","timestamp":"${timestamp()}"}`, undefined),
  );
  routes.on('HEAD', '/ping', (res, req) => pingHead(reply, res, req));
  routes.on('GET', '/health', fixedBody('{"status":"ok"}'));
  routes.on('GET', '/openapi.json', fixedBody(JSON.stringify(buildOpenApi(ROUTES))));
  routes.on('GET', '/version', fixedBody(JSON.stringify({ name: BUILD.name, version: BUILD.version, node: process.version, engine })));
  routes.on('GET', '/ready', (res, req) => ready(reply, backend, drain, res, req));
}

function pingHead(reply: Reply, res: EngineResponse, req: EngineRequest): void {
  reply.head(reply.target(res, req, ''));
}

const DRAINING = '{"status":"draining"}';
const RETRY: ReadonlyArray<readonly [string, string]> = [['Retry-After', '1']];

/**
 * Readiness (docs/api.md §13): 503 `draining` from shutdown on; else 200 `ready`, or 200 `degraded`
 * naming what is down (`database`: cached clients are still answered; `redis`: the revalidation
 * holds), so that a shared dependency's outage does not take every instance out of a load
 * balancer. `?strict=1` answers 503 whenever degraded.
 */
function ready(reply: Reply, backend: Backend, drain: Drain, res: EngineResponse, req: EngineRequest): void {
  const t = reply.target(res, req, '');
  if (drain.draining) return reply.send(t, 503, DRAINING, undefined, RETRY);
  const strict = req.getQuery('strict');
  const strictly = strict === '1' || strict === 'true';
  res.onAborted(() => (t.aborted = true));
  void backend
    .notReady()
    .catch(() => ['database'])
    .then((degraded) => {
      // Shutdown may have begun while the dependencies were asked.
      if (drain.draining) return corked(t, () => reply.send(t, 503, DRAINING, undefined, RETRY));
      const status = degraded.length > 0 && strictly ? 503 : 200;
      const body = degraded.length === 0 ? '{"status":"ready"}' : JSON.stringify({ status: 'degraded', degraded });
      corked(t, () => reply.send(t, status, body, undefined, status === 503 ? RETRY : undefined));
    });
}
