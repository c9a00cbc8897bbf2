import { AUTHZEN_SCHEMAS } from '../../authzen/requests.ts';
import { AUTHZEN_CONFIGURATION_ID, AUTHZEN_ROUTES, type AuthzenRoute } from './authzen-routes.ts';
import { error, errorHeaders, HEADER, plainJson, wrongMethod } from './openapi-parts.ts';
import { named } from './schema-names.ts';

const failure = (status: number, description: string) => error(description, errorHeaders(status, true));

const context = named('DecisionContext', {
  type: 'object',
  description:
    'Present on some denies only: error {status, message} of a batch item, or reason (unknown_subject, not_granted) with AUTH_AUTHZEN_DENY_REASONS=true',
  properties: {
    reason: { type: 'string', enum: ['unknown_subject', 'not_granted'] },
    error: { type: 'object', required: ['status', 'message'], properties: { status: { type: 'integer' }, message: { type: 'string' } } },
  },
});
const decision = named('Decision', { type: 'object', required: ['decision'], properties: { decision: { type: 'boolean' }, context } });
const page = named('SearchPageInfo', {
  type: 'object',
  required: ['next_token', 'count', 'total'],
  properties: { next_token: { type: 'string', description: "'' on the last page" }, count: { type: 'integer' }, total: { type: 'integer' } },
});
const found = named('FoundEntity', { type: 'object', required: ['type', 'id'], properties: { type: { type: 'string' }, id: { type: 'string' } } });
const foundAction = named('FoundAction', { type: 'object', required: ['name'], properties: { name: { type: 'string' } } });
const searchAnswer = (results: object) => ({ type: 'object', required: ['page', 'results'], properties: { page, results: { type: 'array', items: results } } });

/** The 200 bodies of the AuthZEN routes, by what the route answers. */
const SUCCESS = {
  evaluation: decision,
  evaluations: named('EvaluationsResponse', {
    oneOf: [decision, named('Evaluations', { type: 'object', required: ['evaluations'], properties: { evaluations: { type: 'array', items: decision } } })],
  }),
  entities: named('EntitySearchResponse', searchAnswer(found)),
  actions: named('ActionSearchResponse', searchAnswer(foundAction)),
};

function successOf(r: AuthzenRoute): object {
  if (r.kind === 'evaluation') return SUCCESS.evaluation;
  if (r.kind === 'evaluations') return SUCCESS.evaluations;
  return r.finds === 'action' ? SUCCESS.actions : SUCCESS.entities;
}

/** The request bodies, named by the objects authzen/requests.ts validates with. */
const REQUEST_NAMES = {
  evaluation: 'EvaluationRequest',
  evaluations: 'EvaluationsRequest',
  searchSubject: 'SubjectSearchRequest',
  searchResource: 'ResourceSearchRequest',
  searchAction: 'ActionSearchRequest',
} as const;
for (const [k, schemaName] of Object.entries(REQUEST_NAMES)) named(schemaName, AUTHZEN_SCHEMAS[k as keyof typeof REQUEST_NAMES]);
named('Entity', AUTHZEN_SCHEMAS.evaluation.properties.subject);
named('Action', AUTHZEN_SCHEMAS.evaluation.properties.action);
named('SearchedEntity', AUTHZEN_SCHEMAS.searchSubject.properties.subject);
named('PageRequest', AUTHZEN_SCHEMAS.searchSubject.properties.page);

/** authzen/metadata.ts writes every one of these. */
const METADATA_KEYS = [
  'policy_decision_point',
  'access_evaluation_endpoint',
  'access_evaluations_endpoint',
  'search_subject_endpoint',
  'search_resource_endpoint',
  'search_action_endpoint',
];
const METADATA = named('AuthzenMetadata', {
  type: 'object',
  required: METADATA_KEYS,
  properties: Object.fromEntries(METADATA_KEYS.map((k) => [k, { type: 'string', format: 'uri' }])),
});

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
