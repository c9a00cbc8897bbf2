import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { appError } from '../errors/index.ts';

/**
 * The AuthZEN request bodies (docs/authzen.md): JSON Schemas compiled once, and one readable
 * sentence per refusal naming the field by its dotted path. Unknown keys are ignored at every
 * level, as AuthZEN §10.1.1 asks (unlike the /api bodies).
 */

export interface Entity {
  readonly type: string;
  readonly id: string;
}
export interface Action {
  readonly name: string;
}
/** One access evaluation request: who, what, on which resource. */
export interface EvaluationRequest {
  readonly subject: Entity;
  readonly action: Action;
  readonly resource: Entity;
  readonly context?: object;
}
export type Semantic = 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit';
export const SEMANTICS: readonly Semantic[] = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'];
/** The batch route's body: top-level defaults and the items (unchecked until merged with them). */
export interface EvaluationsRequest {
  readonly subject?: Entity;
  readonly action?: Action;
  readonly resource?: Entity;
  readonly context?: object;
  readonly options?: { readonly evaluations_semantic?: Semantic };
  readonly evaluations?: readonly unknown[];
}
export interface PageRequest {
  readonly limit?: number;
  readonly token?: string;
}
/** A search: the searched-for entity has its `type` only (an `id` sent is ignored). */
export interface SearchRequest {
  readonly subject: Entity;
  readonly action: Action;
  readonly resource: Entity;
  readonly context?: object;
  readonly page?: PageRequest;
}

export const MAX_EVALUATIONS = 1000;

const text = { type: 'string', minLength: 1 } as const;
const object = { type: 'object' } as const;
const entity = { type: 'object', required: ['type', 'id'], properties: { type: text, id: text, properties: object } } as const;
const typeOnly = { type: 'object', required: ['type'], properties: { type: text, properties: object } } as const;
const action = { type: 'object', required: ['name'], properties: { name: text, properties: object } } as const;
const page = { type: 'object', properties: { limit: { type: 'integer', minimum: 1 }, token: { type: 'string' } } } as const;

/** The schemas, also published in /openapi.json. */
export const AUTHZEN_SCHEMAS = {
  evaluation: { type: 'object', required: ['subject', 'action', 'resource'], properties: { subject: entity, action, resource: entity, context: object } },
  evaluations: {
    type: 'object',
    properties: {
      subject: entity,
      action,
      resource: entity,
      context: object,
      options: { type: 'object', properties: { evaluations_semantic: { enum: SEMANTICS } } },
      evaluations: { type: 'array', maxItems: MAX_EVALUATIONS },
    },
  },
  searchSubject: {
    type: 'object',
    required: ['subject', 'action', 'resource'],
    properties: { subject: typeOnly, action, resource: entity, context: object, page },
  },
  searchResource: {
    type: 'object',
    required: ['subject', 'action', 'resource'],
    properties: { subject: entity, action, resource: typeOnly, context: object, page },
  },
  searchAction: { type: 'object', required: ['subject', 'resource'], properties: { subject: entity, resource: entity, context: object, page } },
} as const;

export type AuthzenSchemaName = keyof typeof AUTHZEN_SCHEMAS;

const ajv = new Ajv({ allErrors: false, strict: true });
const validators = Object.fromEntries(Object.entries(AUTHZEN_SCHEMAS).map(([k, schema]) => [k, ajv.compile(schema)])) as Record<
  AuthzenSchemaName,
  ValidateFunction
>;

/** The dotted path of the field an ajv error is about (`subject.type`, `page.limit`). */
function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.slice(1).replace(/\//g, '.');
  if (e.keyword !== 'required') return path;
  const missing = String((e.params as { missingProperty: unknown }).missingProperty);
  return path === '' ? missing : `${path}.${missing}`;
}

/** The rule an ajv error broke, in words. */
function ruleOf(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'minLength':
      return 'must not be empty';
    case 'type':
      return `must be ${p.type === 'object' || p.type === 'integer' ? 'an' : 'a'} ${String(p.type)}`;
    case 'enum':
      return `must be one of ${SEMANTICS.join(', ')}`;
    case 'maxItems':
      return `must have at most ${MAX_EVALUATIONS} items`;
    case 'minimum':
      return 'must be at least 1';
    default:
      return e.message ?? 'is invalid';
  }
}

/** Why `value` fails schema `name` ('' when it passes): `<field> <rule>`. */
export function refusal(name: AuthzenSchemaName, value: unknown): string {
  const validate = validators[name];
  if (validate(value)) return '';
  const first = validate.errors?.[0];
  return first === undefined ? 'body is invalid' : `${fieldOf(first)} ${ruleOf(first)}`;
}

/** `value` as the request of schema `name`; a 400 naming the field when it is not one. */
export function parseRequest<T>(name: AuthzenSchemaName, value: unknown): T {
  const why = refusal(name, value);
  if (why !== '') throw appError('ERR_VALIDATION_BODY', why);
  return value as T;
}

const JSON_MEDIA = 'application/json';

/**
 * The body as a JSON object, else a 400 (docs/authzen.md: a missing or other Content-Type, an
 * empty body, malformed JSON or a top level that is not an object are 400, not 415).
 */
export function jsonObjectOf(body: Buffer, contentType: string): object {
  const semi = contentType.indexOf(';');
  const media = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media !== JSON_MEDIA) throw appError('ERR_VALIDATION_BODY', 'body must be sent with Content-Type application/json');
  if (body.length === 0) throw appError('ERR_VALIDATION_BODY', 'body must be a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw appError('ERR_VALIDATION_BODY', 'body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw appError('ERR_VALIDATION_BODY', 'body must be a JSON object');
  return value;
}
