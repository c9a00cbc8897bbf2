import { NAME_PATTERN } from '../../authz/names.ts';
import { named } from './schema-names.ts';

/** The schemas both schemas.ts and data-schemas.ts are built of: one object each, so that /openapi.json names it once. */

export const name = named('Name', { type: 'string', pattern: NAME_PATTERN, minLength: 1, maxLength: 128 } as const);

export const count = { type: 'integer', minimum: 0 } as const;

/** An instant as answers carry it (docs/api.md §12.1): the §2 timestamp form plus `Z`, always UTC. */
export const instant = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$',
  description: 'UTC, RFC 3339, six fractional digits: 2026-12-01T09:00:00.000000Z',
} as const;

/** A user and a permission: a check asked, or a pair a preview says would be gained or lost. */
export const userPermission = named('UserPermission', {
  type: 'object',
  additionalProperties: false,
  required: ['user', 'permission'],
  properties: { user: name, permission: name },
} as const);
