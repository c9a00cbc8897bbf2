import { CHANGE_OPS } from '../../authz/changes.ts';
import { instant, name, userPermission } from './common-schemas.ts';
import { IMPORT_DATA, importCounts } from './data-schemas.ts';
import { named } from './schema-names.ts';

/**
 * The JSON Schemas of the API. The same objects compile the ajv request validators, the
 * fast-json-stringify response serialisers and the `/openapi.json` document, so the three cannot
 * drift apart. The shapes that recur carry a name (schema-names.ts): the document lists them once
 * under `components.schemas`, and the typed client's types are generated from there.
 */

export { name } from './common-schemas.ts';
const revision = { type: 'integer', minimum: 1, description: 'The tenant revision this write committed' } as const;

const webhookUrl = { type: ['string', 'null'], description: 'null: no webhook' } as const;

const obj = (properties: Record<string, object>, extra: object = {}) =>
  ({ type: 'object', additionalProperties: false, required: Object.keys(properties), properties, ...extra }) as const;
const listOf = (item: object) => ({ type: 'array', items: item }) as const;

// ---- §12: windows on edges, write requests of many changes, previews ---------------------------

/** The keys a window adds to an answer about its edge, each present only when set. */
const windowKeys = {
  not_before: { ...instant, description: 'The edge is active from this instant on (present only when set)' },
  expires_at: { ...instant, description: 'The edge is active until this instant, exclusive (present only when set)' },
} as const;
/** {@link obj} of the `required` keys, plus `optional` ones. */
const objWith = (required: Record<string, object>, optional: Record<string, object>) =>
  ({ type: 'object', additionalProperties: false, required: Object.keys(required), properties: { ...required, ...optional } }) as const;
/** {@link obj} plus the optional window keys. */
const windowed = (properties: Record<string, object>) => objWith(properties, windowKeys);

/** A bound asked in a body: any RFC 3339 date-time with a zone (the reader checks it and words its errors). */
const askedInstant = (what: string) =>
  ({
    type: 'string',
    description: `${what}: an RFC 3339 date-time with Z or an offset, at most 6 fractional digits (2026-12-01T09:00:00Z), at most 10 years ahead`,
  }) as const;
const askedWindow = {
  not_before: askedInstant('The edge is active from this instant on; one already past makes it active at once'),
  expires_at: askedInstant('The edge is active until this instant, exclusive; after not_before and after now'),
} as const;

const grantWindowed = named('Grant', windowed({ role: name, permission: name, revision }));
const membershipWindowed = named('Membership', windowed({ user: name, role: name, revision }));
const roleCreated = named('RoleCreated', obj({ role: name, description: { type: 'string' }, revision }));
const roleDeleted = named(
  'RoleDeleted',
  obj({ role: name, permissions_removed: { type: 'integer', minimum: 0 }, memberships_removed: { type: 'integer', minimum: 0 }, revision }),
);
/** A list of `item`, named after it (`RoleList`). */
const namedList = (itemName: string, item: object) => named(`${itemName}List`, listOf(named(itemName, item)));

/** One write of `/api/writes` (docs/api.md §12.2), by its op: for the document, the items' reader is http/input/writes.ts. */
export const writeItem = named('WriteItem', {
  description: 'One write of a batch, by its op',
  oneOf: [
    objWith({ op: { const: 'role.create' }, role: name }, { description: { type: 'string', maxLength: 1024 } }),
    obj({ op: { const: 'role.delete' }, role: name }),
    objWith({ op: { const: 'permission.grant' }, role: name, permission: name }, askedWindow),
    obj({ op: { const: 'permission.revoke' }, role: name, permission: name }),
    objWith({ op: { const: 'membership.add' }, user: name, role: name }, askedWindow),
    obj({ op: { const: 'membership.remove' }, user: name, role: name }),
  ],
} as const);

/** The answers of §12, merged into {@link data}. */
const changeData = {
  grantWindowed,
  membershipWindowed,
  hasPermissionWindowed: named('GrantStatus', windowed({ has_permission: { type: 'boolean' } })),
  isMemberWindowed: named('MembershipStatus', windowed({ is_member: { type: 'boolean' } })),
  /** GET /api/role_permissions, GET /api/members and GET /api/user_roles: items of windowed edges carry their window. */
  namesWindowed: namedList('GrantedPermission', windowed({ name })),
  usersWindowed: namedList('RoleMember', windowed({ user: name })),
  roleNamesWindowed: namedList('UserRole', windowed({ role: name })),
  windows: namedList('Window', {
    type: 'object',
    additionalProperties: false,
    required: ['kind', 'role'],
    properties: {
      kind: { type: 'string', enum: ['membership', 'permission'] },
      role: name,
      user: { ...name, description: 'For a membership' },
      permission: { ...name, description: 'For a grant' },
      ...windowKeys,
    },
  }),
  writesDone: named(
    'WritesDone',
    obj({
      revision,
      results: listOf(
        named('WriteResult', {
          description: 'Per write, in order: the data its own route answers (docs/api.md §5, §12.1)',
          anyOf: [roleCreated, roleDeleted, grantWindowed, membershipWindowed],
        }),
      ),
    }),
  ),
  dryRun: named(
    'DryRunResult',
    obj({
      revision: { type: 'integer', minimum: 0, description: 'The client revision the preview read' },
      valid: { type: 'boolean', description: 'Whether POST /api/writes would succeed now' },
      results: listOf(
        named('DryRunItem', {
          type: 'object',
          additionalProperties: false,
          required: ['status'],
          properties: {
            status: {
              type: 'integer',
              enum: [200, 201, 400, 404, 409, 424],
              description: "The status the write's own route would answer; 424 after the first failure",
            },
            error: { type: 'string', description: 'Why it would fail' },
          },
        }),
      ),
      gained: { ...listOf(userPermission), maxItems: 10_000, description: 'Pairs whose has_permission would turn true, by user then permission' },
      lost: { ...listOf(userPermission), maxItems: 10_000, description: 'Pairs whose has_permission would turn false, by user then permission' },
      gained_count: { type: 'integer', minimum: 0 },
      lost_count: { type: 'integer', minimum: 0 },
      truncated: { type: 'boolean', description: 'Whether gained or lost was cut at 10,000 items (the counts are exact)' },
    }),
  ),
} as const;

/** The bodies of §12, merged into {@link bodies}; each is read further by http/input/window.ts or writes.ts. */
const changeBodies = {
  /** POST and PUT /api/permission/… and /api/membership/…: an empty body is a permanent edge. */
  edgeWindow: named('EdgeWindowRequest', { type: 'object', additionalProperties: false, properties: askedWindow }),
  /**
   * POST /api/writes and /api/dry-run, as a whole only: a bad item refuses a whole /api/writes but
   * is one item's status of a dry-run, so the items are read by http/input/writes.ts.
   */
  writes: {
    type: 'object',
    additionalProperties: false,
    required: ['writes'],
    properties: {
      writes: {
        type: 'array',
        minItems: 1,
        maxItems: 1000,
        items: {
          description:
            'One write, by its op: role.create {role, description?}, role.delete {role}, permission.grant {role, permission, not_before?, expires_at?}, ' +
            'permission.revoke {role, permission}, membership.add {user, role, not_before?, expires_at?}, membership.remove {user, role}',
          examples: [
            { op: 'role.create', role: 'editor', description: 'Edits articles' },
            { op: 'permission.grant', role: 'editor', permission: 'article.edit' },
            { op: 'membership.add', user: 'alice', role: 'editor', expires_at: '2026-12-31T17:00:00Z' },
          ],
        },
      },
    },
  },
} as const;

export const data = {
  roles: namedList('Role', obj({ role: name, description: { type: 'string' } })),
  roleCreated,
  roleDeleted,
  hasPermission: named('HasPermission', obj({ has_permission: { type: 'boolean' } })),
  isMember: named('IsMember', obj({ is_member: { type: 'boolean' } })),
  grant: named('GrantRemoved', obj({ role: name, permission: name, revision })),
  membership: named('MembershipRemoved', obj({ user: name, role: name, revision })),
  names: namedList('PermissionItem', obj({ name })),
  users: namedList('UserItem', obj({ user: name })),
  roleNames: namedList('RoleItem', obj({ role: name })),
  changes: namedList('Change', {
    type: 'object',
    additionalProperties: false,
    required: ['revision', 'op', 'timestamp'],
    properties: {
      revision: { type: 'integer', minimum: 1 },
      op: { type: 'string', enum: [...CHANGE_OPS, 'client.import'] },
      role: { ...name, description: 'Every op but client.import' },
      permission: name,
      user: name,
      ...windowKeys,
      ...importCounts,
      timestamp: { type: 'string' },
    },
  }),
  token: named(
    'IssuedToken',
    obj({
      token: { type: 'string' },
      token_type: { type: 'string', enum: ['Bearer'] },
      expires_in: { type: 'integer', minimum: 1, maximum: 86400 },
      scope: { type: 'string', enum: ['read', 'write'] },
    }),
  ),
  tokenRevoked: named(
    'RevokedToken',
    obj({
      jti: { type: 'string', description: "The revoked token's jti" },
      revoked_until: { ...instant, description: "The token's expiry: it is refused until then, and expired after" },
    }),
  ),
  audit: namedList('AuditRow', {
    type: 'object',
    additionalProperties: false,
    // A boundary change's row (credential `system`) has no request and no peer: no request_id, no ip.
    required: ['id', 'timestamp', 'action', 'resource', 'status', 'credential'],
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
  canRun: named('CanRun', obj({ can_run: { type: 'boolean' } })),
  scheduled: named(
    'WorkflowScheduled',
    obj({
      workflow: name,
      interval_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
      webhook_url: webhookUrl,
      webhook_secret: { type: 'string', description: 'whsec_<base64>: signs the webhook deliveries (Standard Webhooks); shown only here' },
    }),
  ),
  schedules: namedList(
    'WorkflowSchedule',
    obj({
      workflow: name,
      interval_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
      webhook_url: webhookUrl,
      last_run_at: { type: ['string', 'null'], description: 'null before the first run' },
    }),
  ),
  unscheduled: named('WorkflowUnscheduled', obj({ workflow: name })),
  runs: namedList(
    'WorkflowRun',
    obj({
      run_at: { type: 'string' },
      revision: { type: 'integer', minimum: 0, description: 'The client revision the run read' },
      users_count: { type: 'integer', minimum: 0 },
      added: listOf(name),
      removed: listOf(name),
      delivery: named(
        'WebhookDelivery',
        obj({
          status: { type: 'string', enum: ['none', 'pending', 'delivered', 'failed'] },
          attempts: { type: 'integer', minimum: 0 },
          last_status: { type: ['integer', 'null'], description: "The receiver's last HTTP status, null before one" },
        }),
      ),
    }),
  ),
  explanation: named(
    'Explanation',
    obj({
      has_permission: { type: 'boolean' },
      granted_by: listOf(name),
      remedies: listOf(named('Remedy', obj({ role: name, permissions: { type: 'integer', minimum: 1, description: "The role's number of permissions" } }))),
    }),
  ),
  check: named(
    'CheckResult',
    obj({
      results: listOf(named('CheckResultItem', obj({ user: name, permission: name, has_permission: { type: 'boolean' } }))),
      all: { type: 'boolean' },
      any: { type: 'boolean' },
    }),
  ),
  ...changeData,
  ...IMPORT_DATA,
} as const;

export type DataSchemaName = keyof typeof data;

export const bodies = {
  createRole: named('RoleCreateRequest', {
    type: 'object',
    additionalProperties: false,
    properties: { description: { type: 'string', maxLength: 1024 } },
  }),
  none: { type: 'object', additionalProperties: false, properties: {} },
  token: named('TokenRequest', {
    type: 'object',
    additionalProperties: false,
    properties: {
      scope: { type: 'string', enum: ['read', 'write'] },
      ttl_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
    },
  }),
  schedule: named('ScheduleRequest', {
    type: 'object',
    additionalProperties: false,
    required: ['interval_seconds'],
    properties: {
      interval_seconds: { type: 'integer', minimum: 1, maximum: 86400, description: 'At least AUTH_WORKFLOW_MIN_INTERVAL_SECONDS (default 10)' },
      webhook_url: { type: ['string', 'null'], maxLength: 2048, description: 'http(s) URL on a host of AUTH_WEBHOOK_ALLOWED_HOSTS' },
    },
  }),
  check: named('CheckRequest', {
    type: 'object',
    additionalProperties: false,
    required: ['checks'],
    properties: { checks: { type: 'array', minItems: 1, maxItems: 1000, items: userPermission } },
  }),
  ...changeBodies,
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

export const errorEnvelope = named('ErrorEnvelope', {
  type: 'object',
  required: ['success', 'code', 'message', 'error', 'timestamp'],
  properties: {
    success: { const: false },
    code: { type: 'integer' },
    message: { type: 'string' },
    error: { type: 'string' },
    timestamp: { type: 'string' },
  },
} as const);
