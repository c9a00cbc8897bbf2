import { error, errorHeaders, HEADER } from './openapi-parts.ts';
import type { DataRoute } from './route-types.ts';
import { named } from './schema-names.ts';
import { data, envelope } from './schemas.ts';

/** The answer of an import: what it did, or with dry_run=true what it would do. */
const IMPORT_ANSWER = named('ImportEnvelope', envelope({ anyOf: [data.imported, data.importPreview] }, false));

/**
 * What the OpenAPI document says of the two NDJSON routes (docs/api.md §17) beyond any route:
 * the export's body is lines, not an envelope; the import takes lines, a mode, a dry run and
 * If-Match, and refuses 412, 413 and 415 as well.
 */
export function dataOperation(r: DataRoute, op: Record<string, unknown>): void {
  const responses = op.responses as Record<string, object>;
  const parameters = op.parameters as object[];
  if (r.id === 'export') {
    responses[200] = {
      description:
        'A header line, then one line per role, grant and membership (pending ones included), by code point; cut before its end if the client changed meanwhile',
      headers: { ...HEADER.requestId, ...HEADER.revision(true) },
      content: { 'application/x-ndjson': { schema: data.exportLines } },
    };
    return;
  }
  responses[200] = {
    description: 'Imported (or, with dry_run=true, what would be)',
    headers: { ...HEADER.requestId, ...HEADER.revision(true) },
    content: { 'application/json': { schema: IMPORT_ANSWER } },
  };
  const refusals: Record<number, string> = {
    412: 'If-Match named another revision than the current one',
    413: 'Body over AUTH_IMPORT_MAX_BYTES',
    415: 'Body is not application/x-ndjson',
  };
  for (const [status, text] of Object.entries(refusals)) responses[status] = error(text, errorHeaders(Number(status), true));
  op.requestBody = {
    required: true,
    content: { 'application/x-ndjson': { schema: { type: 'string', description: 'An export: its header line, then its lines' } } },
  };
  parameters.push(
    {
      name: 'mode',
      in: 'query',
      required: false,
      description: 'merge (default) adds what is missing; replace makes the data exactly the file',
      schema: { enum: ['merge', 'replace'] },
    },
    { name: 'dry_run', in: 'query', required: false, description: 'true: store nothing, answer what would change', schema: { enum: ['true', 'false'] } },
    {
      name: 'If-Match',
      in: 'header',
      required: false,
      description: 'Import only while the client is at this revision, quoted as X-Authz-Revision gives it ("7"), or * (any): else 412',
      schema: { type: 'string' },
    },
  );
}
