import { CHANGE_OPS } from '../../authz/changes.ts';
import { NAME_PATTERN } from '../../authz/names.ts';

/**
 * The JSON Schemas of the API. The same objects compile the ajv request validators, the
 * fast-json-stringify response serialisers and the `/openapi.json` document, so the three cannot
 * drift apart.
 */

export const name = { type: 'string', pattern: NAME_PATTERN, minLength: 1, maxLength: 128 } as const;
const revision = { type: 'integer', minimum: 1, description: 'The tenant revision this write committed' } as const;

const webhookUrl = { type: ['string', 'null'], description: 'null: no webhook' } as const;

const obj = (properties: Record<string, object>, extra: object = {}) =>
  ({ type: 'object', additionalProperties: false, required: Object.keys(properties), properties, ...extra }) as const;
const listOf = (item: object) => ({ type: 'array', items: item }) as const;

export const data = {
  roles: listOf(obj({ role: name, description: { type: 'string' } })),
  roleCreated: obj({ role: name, description: { type: 'string' }, revision }),
  roleDeleted: obj({
    role: name,
    permissions_removed: { type: 'integer', minimum: 0 },
    memberships_removed: { type: 'integer', minimum: 0 },
    revision,
  }),
  hasPermission: obj({ has_permission: { type: 'boolean' } }),
  isMember: obj({ is_member: { type: 'boolean' } }),
  grant: obj({ role: name, permission: name, revision }),
  membership: obj({ user: name, role: name, revision }),
  names: listOf(obj({ name })),
  users: listOf(obj({ user: name })),
  roleNames: listOf(obj({ role: name })),
  changes: listOf({
    type: 'object',
    additionalProperties: false,
    required: ['revision', 'op', 'role', 'timestamp'],
    properties: {
      revision: { type: 'integer', minimum: 1 },
      op: { type: 'string', enum: [...CHANGE_OPS] },
      role: name,
      permission: name,
      user: name,
      timestamp: { type: 'string' },
    },
  }),
  token: obj({
    token: { type: 'string' },
    token_type: { type: 'string', enum: ['Bearer'] },
    expires_in: { type: 'integer', minimum: 1, maximum: 86400 },
    scope: { type: 'string', enum: ['read', 'write'] },
  }),
  audit: listOf({
    type: 'object',
    additionalProperties: false,
    required: ['id', 'timestamp', 'action', 'resource', 'status', 'credential', 'request_id', 'ip'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      timestamp: { type: 'string' },
      action: { type: 'string' },
      resource: { type: 'string', description: 'The request path as received, without its query' },
      status: { type: 'integer' },
      revision: { type: 'integer', minimum: 1, description: 'Only on successful writes' },
      credential: { type: 'string', description: 'key:<first 12 hex of the client hash> or token:<jti>' },
      request_id: { type: 'string' },
      ip: { type: 'string' },
    },
  }),
  canRun: obj({ can_run: { type: 'boolean' } }),
  scheduled: obj({
    workflow: name,
    interval_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
    webhook_url: webhookUrl,
    webhook_secret: { type: 'string', description: 'whsec_<base64>: signs the webhook deliveries (Standard Webhooks); shown only here' },
  }),
  schedules: listOf(
    obj({
      workflow: name,
      interval_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
      webhook_url: webhookUrl,
      last_run_at: { type: ['string', 'null'], description: 'null before the first run' },
    }),
  ),
  unscheduled: obj({ workflow: name }),
  runs: listOf(
    obj({
      run_at: { type: 'string' },
      revision: { type: 'integer', minimum: 0, description: 'The client revision the run read' },
      users_count: { type: 'integer', minimum: 0 },
      added: listOf(name),
      removed: listOf(name),
      delivery: obj({
        status: { type: 'string', enum: ['none', 'pending', 'delivered', 'failed'] },
        attempts: { type: 'integer', minimum: 0 },
        last_status: { type: ['integer', 'null'], description: "The receiver's last HTTP status, null before one" },
      }),
    }),
  ),
  explanation: obj({
    has_permission: { type: 'boolean' },
    granted_by: listOf(name),
    remedies: listOf(obj({ role: name, permissions: { type: 'integer', minimum: 1, description: "The role's number of permissions" } })),
  }),
  check: obj({
    results: listOf(obj({ user: name, permission: name, has_permission: { type: 'boolean' } })),
    all: { type: 'boolean' },
    any: { type: 'boolean' },
  }),
} as const;

export type DataSchemaName = keyof typeof data;

export const bodies = {
  createRole: {
    type: 'object',
    additionalProperties: false,
    properties: { description: { type: 'string', maxLength: 1024 } },
  },
  none: { type: 'object', additionalProperties: false, properties: {} },
  token: {
    type: 'object',
    additionalProperties: false,
    properties: {
      scope: { type: 'string', enum: ['read', 'write'] },
      ttl_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
    },
  },
  schedule: {
    type: 'object',
    additionalProperties: false,
    required: ['interval_seconds'],
    properties: {
      interval_seconds: { type: 'integer', minimum: 1, maximum: 86400, description: 'At least AUTH_WORKFLOW_MIN_INTERVAL_SECONDS (default 10)' },
      webhook_url: { type: ['string', 'null'], maxLength: 2048, description: 'http(s) URL on a host of AUTH_WEBHOOK_ALLOWED_HOSTS' },
    },
  },
  check: {
    type: 'object',
    additionalProperties: false,
    required: ['checks'],
    properties: {
      checks: {
        type: 'array',
        minItems: 1,
        maxItems: 1000,
        items: { type: 'object', additionalProperties: false, required: ['user', 'permission'], properties: { user: name, permission: name } },
      },
    },
  },
} as const;

export type BodySchemaName = keyof typeof bodies;

export const envelope = (dataSchema: object, paged: boolean) =>
  ({
    type: 'object',
    required: ['success', 'code', 'message', 'data', 'timestamp'],
    properties: {
      success: { const: true },
      code: { type: 'integer' },
      message: { type: 'string' },
      data: dataSchema,
      timestamp: { type: 'string', description: 'UTC, ISO 8601, six fractional digits, no zone' },
      ...(paged ? { next_cursor: { type: 'string', description: 'Present when the page was cut' } } : {}),
    },
  }) as const;

export const errorEnvelope = {
  type: 'object',
  required: ['success', 'code', 'message', 'error', 'timestamp'],
  properties: {
    success: { const: false },
    code: { type: 'integer' },
    message: { type: 'string' },
    error: { type: 'string' },
    timestamp: { type: 'string' },
  },
} as const;
