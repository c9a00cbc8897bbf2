import { AUTHZEN_SCHEMAS } from '../../authzen/requests.ts';
import { AUTHZEN_CONFIGURATION_ID, AUTHZEN_ROUTES, type AuthzenRoute } from './authzen-routes.ts';
import { error, errorHeaders, HEADER, plainJson, wrongMethod } from './openapi-parts.ts';

const failure = (status: number, description: string) => error(description, errorHeaders(status, true));

const context = {
  type: 'object',
  description:
    'Present on some denies only: error {status, message} of a batch item, or reason (unknown_subject, not_granted) with AUTH_AUTHZEN_DENY_REASONS=true',
};
const decision = { type: 'object', required: ['decision'], properties: { decision: { type: 'boolean' }, context } };
const page = {
  type: 'object',
  required: ['next_token', 'count', 'total'],
  properties: { next_token: { type: 'string', description: "'' on the last page" }, count: { type: 'integer' }, total: { type: 'integer' } },
};
const entities = { type: 'array', items: { type: 'object', required: ['type', 'id'], properties: { type: { type: 'string' }, id: { type: 'string' } } } };
const actions = { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } };

function successOf(r: AuthzenRoute): object {
  if (r.kind === 'evaluation') return decision;
  if (r.kind === 'evaluations')
    return { oneOf: [decision, { type: 'object', required: ['evaluations'], properties: { evaluations: { type: 'array', items: decision } } }] };
  return { type: 'object', required: ['page', 'results'], properties: { page, results: r.finds === 'action' ? actions : entities } };
}

const METADATA = {
  type: 'object',
  required: ['policy_decision_point'],
  properties: Object.fromEntries(
    [
      'policy_decision_point',
      'access_evaluation_endpoint',
      'access_evaluations_endpoint',
      'search_subject_endpoint',
      'search_resource_endpoint',
      'search_action_endpoint',
    ].map((k) => [k, { type: 'string', format: 'uri' }]),
  ),
};

/** The OpenAPI paths of the AuthZEN routes (docs/authzen.md), beside those of /api. */
export function authzenPaths(): Record<string, Record<string, object>> {
  const paths: Record<string, Record<string, object>> = {};
  for (const r of AUTHZEN_ROUTES) {
    paths[r.path] = {
      post: {
        operationId: r.id,
        summary: r.summary,
        security: [{ bearer: [] }],
        parameters: [
          { name: 'X-Request-ID', in: 'header', required: false, schema: { type: 'string', maxLength: 128 }, description: 'Echoed in the answer' },
          { name: 'X-Authz-Min-Revision', in: 'header', required: false, schema: { type: 'integer', minimum: 0 } },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: AUTHZEN_SCHEMAS[r.schema] } } },
        responses: {
          200: plainJson('The decision(s) or the search page (AuthZEN 1.0 shapes, no envelope)', successOf(r), HEADER.revision(true)),
          400: failure(400, 'Not a JSON object, or a field missing or invalid (named in error by its dotted path)'),
          401: failure(401, 'Missing or invalid credential'),
          405: wrongMethod(),
          413: failure(413, 'Body too large'),
          503: failure(503, 'Database unavailable, or a revision another instance had not delivered within 1 s'),
        },
      },
    };
  }
  paths['/.well-known/authzen-configuration'] = {
    get: {
      operationId: AUTHZEN_CONFIGURATION_ID,
      summary: 'AuthZEN PDP metadata, from AUTH_AUTHZEN_BASE_URL (followed by its path, when it has one)',
      security: [],
      responses: {
        200: plainJson('The metadata document', METADATA, { 'Cache-Control': { required: true, schema: { type: 'string', const: 'public, max-age=300' } } }),
        404: error('No AUTH_AUTHZEN_BASE_URL configured'),
        405: wrongMethod(),
      },
    },
  };
  return paths;
}
