import { count, instant as answerInstant, name, userPermission } from './common-schemas.ts';
import { named } from './schema-names.ts';

/*
 * The schemas of a client's data leaving and coming back (docs/api.md §17): the lines of the
 * NDJSON export and import, and the answers of an import. Merged into schemas.ts's `data`.
 */

const instant = {
  ...answerInstant,
  description: 'UTC, RFC 3339, six fractional digits (an import also takes any RFC 3339 date-time with a zone)',
} as const;
const line = (required: Record<string, object>, optional: Record<string, object> = {}) =>
  ({ type: 'object', additionalProperties: false, required: Object.keys(required), properties: { ...required, ...optional } }) as const;
const edgeWindow = { not_before: instant, expires_at: instant } as const;

/** The counts a `client.import` change carries in /api/changes: export lines added and removed. */
export const importCounts = {
  added: { ...count, description: 'client.import: export lines added (cascades included)' },
  removed: { ...count, description: 'client.import: export lines removed (cascades included)' },
} as const;

/** One line of an export, or of an import's body: the header first, then roles, grants, memberships. */
export const exportLine = {
  oneOf: [
    line({
      format: { const: 'rbac-gateway.export' },
      version: { const: 1 },
      revision: { ...count, description: 'The revision the export was read at' },
      exported_at: instant,
    }),
    line({ type: { const: 'role' }, role: name }, { description: { type: 'string', maxLength: 1024 } }),
    line({ type: { const: 'permission' }, role: name, permission: name }, edgeWindow),
    line({ type: { const: 'membership' }, user: name, role: name }, edgeWindow),
  ],
} as const;

const imported = {
  revision: { ...count, description: 'The revision after the import (unchanged when it changed nothing)' },
  roles: { ...count, description: 'Roles of the client after the import' },
  permissions: { ...count, description: 'Grants of the client after the import' },
  memberships: { ...count, description: 'Memberships of the client after the import' },
  ...importCounts,
} as const;

export const IMPORT_DATA = {
  exportLines: named('ExportLine', { ...exportLine, description: 'Not an envelope: application/x-ndjson, one such object per line' }),
  imported: named('ImportResult', line(imported)),
  importPreview: named(
    'ImportPreview',
    line({
      ...imported,
      dry_run: { const: true },
      gained: { type: 'array', items: userPermission, maxItems: 10_000, description: 'Pairs whose has_permission would turn true, by user then permission' },
      lost: { type: 'array', items: userPermission, maxItems: 10_000, description: 'Pairs whose has_permission would turn false, by user then permission' },
      gained_count: count,
      lost_count: count,
      truncated: { type: 'boolean', description: 'Whether gained or lost was cut at 10,000 items (the counts are exact)' },
    }),
  ),
} as const;
