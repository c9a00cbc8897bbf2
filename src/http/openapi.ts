import { NAME_RULE } from '../authz/names.ts';
import { accessOf, isPaged, type Route } from './routes/index.ts';
import { bodies, data, envelope, errorEnvelope, name } from './schemas/index.ts';

const error = (description: string) => ({ description, content: { 'application/json': { schema: errorEnvelope } } });
const plainJson = (description: string, schema: object) => ({
  description,
  content: { 'application/json': { schema } },
});

/** The parameters of a route: its names in the path, paging for lists, the headers all share. */
function parametersOf(r: Route): object[] {
  const parameters: object[] = r.params.map((p) => ({
    name: p,
    in: 'path',
    required: true,
    description: `${p} name: ${NAME_RULE}, percent-encoded`,
    schema: name,
  }));
  if (isPaged(r)) {
    parameters.push(
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 10000 } },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'next_cursor of the previous page' },
    );
  }
  parameters.push(
    { name: 'X-Authz-Min-Revision', in: 'header', required: false, schema: { type: 'integer', minimum: 0 } },
    { name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string', maxLength: 128 } },
  );
  return parameters;
}

function responsesOf(r: Route): Record<string, object> {
  const responses: Record<string, object> = {
    [r.status]: { description: r.message, content: { 'application/json': { schema: envelope(data[r.data], isPaged(r)) } } },
    400: error('Invalid name, query, header or body'),
    401: error('Missing or invalid credential'),
    503: error('Revision not reached in time, or database unavailable'),
  };
  if (r.params.includes('role') && r.id !== 'role.create') responses[404] = error('Role (or grant, or membership) not found');
  if (r.kind === 'write' && r.method === 'POST') responses[409] = error('Already exists');
  if (r.id === 'workflow.unschedule' || r.id === 'workflow.runs') responses[404] = error('The workflow has no schedule');
  if (r.id === 'workflow.schedule') responses[400] = error('Invalid name or body, or webhook host not in AUTH_WEBHOOK_ALLOWED_HOSTS');
  if (accessOf(r) === 'write') responses[403] = error("A token of scope 'read'");
  if (accessOf(r) === 'key') responses[403] = error('A token (only client keys mint tokens)');
  if (r.kind === 'token') responses[501] = error('No AUTH_JWT_SECRET_KEY configured');
  if (r.body !== undefined) {
    responses[413] = error('Body too large');
    responses[415] = error('Body is not JSON');
  }
  return responses;
}

/** `GET /ready`: `degraded` names the dependencies that are down (`database`, `redis`). */
const READY_BODY = {
  type: 'object',
  required: ['status'],
  properties: { status: { enum: ['ready', 'degraded', 'draining'] }, degraded: { type: 'array', items: { enum: ['database', 'redis'] } } },
};

/** The routes outside /api: no credential. */
const PLAIN_PATHS: Record<string, Record<string, object>> = {
  '/ping': {
    get: {
      operationId: 'ping',
      summary: 'Liveness without authentication',
      responses: { 200: plainJson('pong', { type: 'object', properties: { message: { const: 'pong' }, status: { const: 'ok' }, timestamp: { type: 'string' } } }) },
    },
  },
  '/health': {
    get: { operationId: 'health', summary: 'The process runs', responses: { 200: plainJson('ok', { type: 'object', properties: { status: { const: 'ok' } } }) } },
  },
  '/ready': {
    get: {
      operationId: 'ready',
      summary: 'Readiness: 503 while draining; 200 ready, or 200 degraded naming the dependencies down (503 with strict=1)',
      parameters: [{ name: 'strict', in: 'query', required: false, description: '1: answer 503 whenever degraded', schema: { type: 'string', enum: ['1', 'true'] } }],
      responses: {
        200: plainJson('ready or degraded', READY_BODY),
        503: plainJson('draining, or degraded with strict=1', READY_BODY),
      },
    },
  },
  '/openapi.json': { get: { operationId: 'openapi', summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } } },
};

/** The OpenAPI 3.1 document of every route, built from the schemas that validate and serialise. */
export function buildOpenApi(routes: readonly Route[]): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = { operationId: r.id, summary: r.summary, parameters: parametersOf(r), responses: responsesOf(r), security: [{ bearer: [] }] };
    if (r.body !== undefined && r.body !== 'none') {
      op.requestBody = { required: r.body === 'check' || r.body === 'schedule', content: { 'application/json': { schema: bodies[r.body] } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  Object.assign(paths, PLAIN_PATHS);
  return {
    openapi: '3.1.0',
    info: { title: 'rbac-gateway', version: '1', description: 'Role-based authorization per client key, answered from memory.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Client key (UUID v4) or issued token' } } },
    paths,
  };
}
