import type { AuditRecord } from '../audit/record.ts';
import type { TenantCache } from '../cache/index.ts';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { AccessLog } from '../log/access.ts';
import { API_SERIES, AUTHZEN_CONFIGURATION_SERIES, authzenSeriesOf } from './api/series.ts';
import { Pdp } from '../authzen/decide.ts';
import { AuthzenAnswers } from './handle/authzen-answers.ts';
import { AuthzenHandler } from './handle/authzen-handler.ts';
import { registerAuthzenMetadata } from './handle/authzen-metadata.ts';
import { AUTHZEN_ROUTES } from './api/authzen-routes.ts';
import { Answers } from './handle/answers.ts';
import { ApiHandler } from './handle/api-handler.ts';
import { Prelude } from './handle/prelude.ts';
import type { Backend } from './backend.ts';
import { Credentials } from './input/credentials.ts';
import type { RevokedTokens } from './input/revoked-tokens.ts';
import { BodyReader } from './input/body.ts';
import { Cursors } from './input/cursor.ts';
import type { Engine } from './engine/port.ts';
import { registerPlainRoutes } from './handle/plain-routes.ts';
import { readConsoleBundle, registerConsole } from './handle/console.ts';
import { corsPolicy } from './reply/cors.ts';
import type { RequestMetrics } from '../metrics/requests.ts';
import { Reply } from './reply/reply.ts';
import { RouteTable } from './handle/route-table.ts';
import { ROUTES } from './api/routes.ts';
import { SlowPath } from './handle/slow-path.ts';
import { WorkflowAnswers, type WebhookRules } from './handle/workflow-answers.ts';
import { TokenAuthority } from '../crypto/tokens.ts';
import { WebhookHosts } from '../workflow/allowed-hosts.ts';
import { newWebhookSecret } from '../workflow/secrets.ts';
import { NO_TRACER, type Tracer } from '../trace/index.ts';

export type { Backend } from './backend.ts';
export { API_SERIES } from './api/series.ts';
export { RevokedTokens } from './input/revoked-tokens.ts';

export interface HttpDeps {
  readonly config: Config;
  readonly log: Logger;
  readonly cache: TenantCache;
  readonly backend: Backend;
  readonly cursorSecret: Buffer;
  /** The HTTP engine, chosen once at start-up (AUTH_HTTP_ENGINE). */
  readonly engine: Engine;
  /** Where requests are counted (a no-op when metrics are off). */
  readonly metrics: RequestMetrics;
  /** The tokens revoked, kept up to date by the worker: verified tokens are looked up there. */
  readonly revoked: RevokedTokens;
  /** Spans of the slow path's requests (traces off: {@link NO_TRACER}, the default). */
  readonly tracer?: Tracer;
}

export interface HttpServer {
  readonly port: number;
  /** Shutdown has begun: `/ready` answers 503 `draining` and answers close their connections; serving goes on. */
  drain(): void;
  /** Stops accepting, waits for requests in flight (at most `graceMs`), then closes connections. */
  close(graceMs: number): Promise<void>;
}

/** Builds the app with every route of the contract on the chosen engine and starts listening. */
export async function startHttpServer(deps: HttpDeps): Promise<HttpServer> {
  const { config, cache, backend } = deps;
  const tracer = deps.tracer ?? NO_TRACER;
  const reply = new Reply({
    cors: corsPolicy(config.AUTH_ALLOW_CORS, config.AUTH_CORS_ORIGINS),
    log: deps.log,
    metrics: deps.metrics,
    access: new AccessLog(config.AUTH_ACCESS_LOG_SAMPLE, API_SERIES, deps.log),
  });
  const cursors = new Cursors(deps.cursorSecret);
  const answers = new Answers(
    reply,
    cursors,
    (tenant, since, limit) => backend.changes(tenant, since, limit),
    (tenant, before, limit) => backend.audit(tenant, before, limit),
    deps.metrics,
  );
  const workflows = new WorkflowAnswers(
    backend,
    cursors,
    (route, data, next) => answers.envelope(route, data, next),
    webhookRules(config.AUTH_WEBHOOK_ALLOWED_HOSTS),
    config.AUTH_WORKFLOW_MIN_INTERVAL_SECONDS,
  );
  const drain = reply.drain;
  const secret = config.AUTH_JWT_SECRET_KEY;
  const previous = config.AUTH_JWT_PREVIOUS_SECRET_KEYS?.split(',').map((s) => s.trim()) ?? [];
  const tokens = secret === undefined ? undefined : new TokenAuthority(secret, previous);
  const issuing = { authority: tokens, defaultTtlSeconds: config.AUTH_JWT_TTL_SECONDS };
  const credentials = new Credentials(tokens, (tenant) => cache.mayExist(tenant), deps.revoked);
  const prelude = new Prelude({
    credentials,
    cache,
    reply,
    drain,
    audit: { record: (row: AuditRecord) => backend.recordAudit(row) },
    auditReads: config.AUTH_AUDIT_CHECKS,
    metrics: deps.metrics,
  });
  const shared = {
    prelude,
    credentials,
    body: new BodyReader(config.AUTH_MAX_BODY_BYTES),
    reply,
    slow: new SlowPath(cache, backend, answers, reply, drain, issuing, workflows, deps.log, tracer),
  };
  const api = new ApiHandler({ ...shared, answers, importBody: new BodyReader(config.AUTH_IMPORT_MAX_BYTES), traced: tracer.enabled });
  const pdp = new Pdp(config.AUTH_AUTHZEN_SUBJECT_TYPES.split(','), config.AUTH_AUTHZEN_DENY_REASONS);
  const authzen = new AuthzenHandler({ ...shared, cache, drain, answers: new AuthzenAnswers(pdp, cursors, deps.metrics) });
  const app = deps.engine.createApp();
  const routes = new RouteTable(app, drain, reply);
  for (const route of ROUTES) routes.on(route.method, route.path, api.forRoute(route));
  for (const route of AUTHZEN_ROUTES) routes.on('POST', route.path, authzen.forRoute(route, authzenSeriesOf(route)));
  registerAuthzenMetadata(routes, reply, config.AUTH_AUTHZEN_BASE_URL, AUTHZEN_CONFIGURATION_SERIES);
  registerPlainRoutes(routes, reply, backend, deps.engine.name, drain);
  if (config.AUTH_CONSOLE) registerConsole(routes, reply, readConsoleBundle());
  routes.finish();
  const listener = await app.listen(config.AUTH_SERVER_HOST, config.AUTH_SERVER_PORT);
  return { port: listener.port, drain: () => drain.begin(), close: (graceMs) => drain.close(listener, graceMs) };
}

/** Webhook URLs on the hosts of AUTH_WEBHOOK_ALLOWED_HOSTS only (none listed: none allowed), and fresh secrets. */
function webhookRules(allowedHosts: string | undefined): WebhookRules {
  const hosts = WebhookHosts.parse(allowedHosts);
  return { check: (url) => hosts.check(url), newSecret: newWebhookSecret };
}
