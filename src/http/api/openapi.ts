import { dataOperation } from './data-openapi.ts';
import { NAME_RULE } from '../../authz/names.ts';
import { BUILD } from '../../config/build.ts';
import { accessOf, isPaged, type Route } from './route-types.ts';
import { authzenPaths } from './authzen-openapi.ts';
import { withComponents } from './openapi-components.ts';
import { error, errorHeaders, HEADER, plainJson, wrongMethod } from './openapi-parts.ts';
import { named, nameOf } from './schema-names.ts';
import { bodies, data, envelope, name, writeItem, type BodySchemaName, type DataSchemaName } from './schemas.ts';

/** The parameters of a route: its names in the path, paging for lists, the headers all share. */
function parametersOf(r: Route): object[] {
  const parameters: object[] = r.params.map((p) => ({
    name: p,
    in: 'path',
    required: true,
    description: p === 'jti' ? "The token's jti claim" : `${p} name: ${NAME_RULE}, percent-encoded`,
    schema: name,
  }));
  if (r.kind === 'log') {
    parameters.push({
      name: 'since',
      in: 'query',
      required: false,
      description: 'Only changes with a revision above this one (default 0)',
      schema: { type: 'integer', minimum: 0 },
    });
  }
  if (isPaged(r)) {
    parameters.push(
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 10000 } },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'next_cursor of the previous page' },
    );
  }
  if (r.kind === 'write') {
    parameters.push({
      name: 'If-Match',
      in: 'header',
      required: false,
      description: 'Write only while the client is at this revision, quoted as X-Authz-Revision gives it ("7"), or * (any): else 412',
      schema: { type: 'string' },
    });
  }
  parameters.push(
    {
      name: 'X-Authz-Min-Revision',
      in: 'header',
      required: false,
      description: 'Answer from a state at least this new (waits up to 1 s); above the stored revision: 400',
      schema: { type: 'integer', minimum: 0 },
    },
    { name: 'X-Request-Id', in: 'header', required: false, description: 'Echoed in the answer and the logs', schema: { type: 'string', maxLength: 128 } },
  );
  return parameters;
}

const ENVELOPES = new Map<string, object>();

/**
 * The success envelope of a route's data: one object per data schema and paging, named after the
 * data (`RoleCreatedEnvelope`, `RoleListPage` with `next_cursor`), so each is one component.
 */
export function successEnvelope(d: DataSchemaName, paged: boolean): object {
  const dataName = nameOf(data[d]) ?? d;
  const key = `${dataName}${paged ? 'Page' : 'Envelope'}`;
  let e = ENVELOPES.get(key);
  if (e === undefined) {
    e = named(key, envelope(data[d], paged));
    ENVELOPES.set(key, e);
  }
  return e;
}

/**
 * The body of /api/writes and /api/dry-run as documented: the validated one (`bodies.writes`,
 * whose items http/input/writes.ts reads one by one), its items described by {@link writeItem},
 * the schema held to accept exactly what that reader accepts (tests/unit/http/change-schemas.test.ts).
 */
const WRITES_DOCUMENTED = named('WritesRequest', {
  ...bodies.writes,
  properties: { writes: { ...bodies.writes.properties.writes, items: writeItem } },
});

/** The request body schema of a route, as the document gives it. */
const requestSchema = (b: BodySchemaName): object => (b === 'writes' ? WRITES_DOCUMENTED : bodies[b]);

function responsesOf(r: Route): Record<string, object> {
  const responses: Record<string, string> = {
    400: 'Invalid name, query, header or body',
    401: 'Missing or invalid credential',
    405: 'Wrong method for this path',
    503: 'Database unavailable, or a revision another instance had not delivered within 1 s',
  };
  if (r.notFound !== undefined) responses[404] = r.notFound;
  if (r.kind === 'write' && r.method === 'POST') responses[409] = 'Already exists';
  if (r.kind === 'write') responses[412] = 'If-Match named another revision than the current one';
  if (r.badRequest !== undefined) responses[400] = r.badRequest;
  if (accessOf(r) === 'write') responses[403] = "A token of scope 'read'";
  if (accessOf(r) === 'key') responses[403] = 'A token (only client keys mint tokens)';
  if (r.kind === 'token' || r.kind === 'revoke') responses[501] = 'No AUTH_JWT_SECRET_KEY configured';
  if (r.body !== undefined) {
    responses[413] = 'Body too large';
    responses[415] = 'Body is not JSON';
  }
  const success = plainJson(r.message, successEnvelope(r.data, isPaged(r)), HEADER.revision(true));
  const out: Record<string, object> = { [r.status]: success };
  // A PUT answers 201 when it created its edge, 200 when it replaced the window of one that existed.
  if (r.kind === 'write' && r.statusOf !== undefined) out[200] = success;
  for (const [status, text] of Object.entries(responses)) out[status] = error(text, errorHeaders(Number(status), true));
  return out;
}

/** `GET /ready`: `degraded` names the dependencies that are down (`database`, `redis`). */
const READY_BODY = named('Readiness', {
  type: 'object',
  required: ['status'],
  properties: { status: { enum: ['ready', 'degraded', 'draining'] }, degraded: { type: 'array', items: { enum: ['database', 'redis'] } } },
});

const PONG = named('Pong', { type: 'object', properties: { message: { const: 'pong' }, status: { const: 'ok' }, timestamp: { type: 'string' } } });
const HEALTH = named('Health', { type: 'object', properties: { status: { const: 'ok' } } });
const VERSION_BODY = named('Version', {
  type: 'object',
  required: ['name', 'version', 'node', 'engine'],
  properties: { name: { type: 'string' }, version: { type: 'string' }, node: { type: 'string' }, engine: { enum: ['uws', 'node'] } },
});

/** A route outside /api: no credential (`security: []`), a plain JSON body, 405 on other methods. */
function plain(operationId: string, summary: string, responses: Record<string, object>, extra: object = {}): object {
  return { operationId, summary, security: [], ...extra, responses: { ...responses, 405: wrongMethod() } };
}

/** The headers of every answer under /console (docs/console.md): its own page, framed by none. */
const CONSOLE_HEADERS = {
  ...HEADER.requestId,
  'Content-Security-Policy': { required: true, schema: { type: 'string', const: "default-src 'self'; frame-ancestors 'none'" } },
  'X-Content-Type-Options': { required: true, schema: { type: 'string', const: 'nosniff' } },
};
const consoleFile = (description: string, types: readonly string[]): object => ({
  description,
  headers: CONSOLE_HEADERS,
  content: Object.fromEntries(types.map((t) => [t, { schema: { type: 'string' } }])),
});
const CONSOLE_MISSING = { ...error('Not found: an unknown file, AUTH_CONSOLE=false, or a checkout never built'), headers: CONSOLE_HEADERS };

/** The routes outside /api. */
const PLAIN_PATHS: Record<string, Record<string, object>> = {
  '/ping': {
    get: plain('ping', 'Liveness without authentication', { 200: plainJson('pong', PONG) }),
    head: plain('ping_head', 'Liveness without authentication, headers only', { 200: { description: 'pong, without a body', headers: HEADER.requestId } }),
  },
  '/health': { get: plain('health', 'The process runs', { 200: plainJson('ok', HEALTH) }) },
  '/ready': {
    get: plain(
      'ready',
      'Readiness: 503 while draining; 200 ready, or 200 degraded naming the dependencies down (503 with strict=1)',
      { 200: plainJson('ready or degraded', READY_BODY), 503: plainJson('draining, or degraded with strict=1', READY_BODY, HEADER.retryAfter) },
      {
        parameters: [
          { name: 'strict', in: 'query', required: false, description: '1: answer 503 whenever degraded', schema: { type: 'string', enum: ['1', 'true'] } },
        ],
      },
    ),
  },
  '/version': { get: plain('version', 'The service, its version, Node.js and the HTTP engine in use', { 200: plainJson('version', VERSION_BODY) }) },
  '/console': {
    get: plain('console', 'The read-only web console (docs/console.md): its page', { 200: consoleFile('The page', ['text/html']), 404: CONSOLE_MISSING }),
  },
  '/console/{file}': {
    get: plain(
      'console_file',
      "The console's script, stylesheet and icon",
      { 200: consoleFile('The file', ['text/javascript', 'text/css', 'image/svg+xml']), 404: CONSOLE_MISSING },
      { parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string' }, description: 'console.js, console.css or favicon.svg' }] },
    ),
  },
  '/openapi.json': {
    get: plain('openapi', 'This document', {
      200: plainJson('OpenAPI 3.1', { type: 'object', required: ['openapi', 'paths'], properties: { openapi: { type: 'string' }, paths: { type: 'object' } } }),
    }),
  },
};

/** The OpenAPI 3.1 document of every route, built from the schemas that validate and serialise. */
export function buildOpenApi(routes: readonly Route[]): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = {
      operationId: r.id,
      summary: r.summary,
      parameters: parametersOf(r),
      responses: responsesOf(r),
      security: [{ bearer: [] }],
    };
    if (r.body !== undefined && r.body !== 'none') {
      op.requestBody = {
        required: r.body === 'check' || r.body === 'schedule' || r.body === 'writes',
        content: { 'application/json': { schema: requestSchema(r.body) } },
      };
    }
    if (r.kind === 'data') dataOperation(r, op);
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  Object.assign(paths, PLAIN_PATHS, authzenPaths());
  return withComponents({
    openapi: '3.1.0',
    info: {
      title: 'rbac-gateway',
      version: BUILD.version,
      description: 'Role-based authorization per client key, answered from memory.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://127.0.0.1:5000', description: 'The default listening address (AUTH_SERVER_HOST, AUTH_SERVER_PORT)' }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Client key (UUID v4) or issued token' } } },
    paths,
  });
}
