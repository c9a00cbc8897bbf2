import { errorEnvelope } from './schemas.ts';

/** The pieces every operation of the OpenAPI document is made of: its headers and responses. */

export type Headers = Record<string, object>;

/** The response headers the service sends (docs/api.md §2, §3, §4, §9, §13), as OpenAPI header objects. */
export const HEADER = {
  requestId: {
    'X-Request-Id': {
      required: true,
      description: 'Echoed from the request (1-128 visible ASCII characters), else generated',
      schema: { type: 'string', minLength: 1, maxLength: 128 },
    },
  },
  revision: (required: boolean): Headers => ({
    'X-Authz-Revision': { required, description: "The client's revision this answer reflects", schema: { type: 'string', pattern: '^[0-9]+$' } },
  }),
  retryAfter: { 'Retry-After': { required: true, description: 'Seconds to wait before trying again', schema: { type: 'string', pattern: '^[0-9]+$' } } },
  authenticate: { 'WWW-Authenticate': { required: true, description: 'Bearer', schema: { type: 'string', const: 'Bearer' } } },
  allow: { Allow: { required: true, description: 'The methods this path accepts', schema: { type: 'string' } } },
} as const;

/** The extra headers of an error status on an authenticated route. */
export function errorHeaders(status: number, authenticated: boolean): Headers {
  if (status === 401) return HEADER.authenticate;
  if (status === 405) return HEADER.allow;
  const revision = authenticated ? HEADER.revision(false) : {};
  return status === 503 ? { ...revision, ...HEADER.retryAfter } : revision;
}

const json = (schema: object) => ({ 'application/json': { schema } });
export const error = (description: string, headers: Headers = {}) => ({
  description,
  headers: { ...HEADER.requestId, ...headers },
  content: json(errorEnvelope),
});
export const plainJson = (description: string, schema: object, headers: Headers = {}) => ({
  description,
  headers: { ...HEADER.requestId, ...headers },
  content: json(schema),
});
export const wrongMethod = () => error('Wrong method for this path', HEADER.allow);
