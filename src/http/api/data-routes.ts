import type { Route } from './route-types.ts';

/** The routes of a client's data leaving and coming back as NDJSON (docs/api.md §17). */
export const DATA_ROUTES: readonly Route[] = [
  {
    id: 'export',
    kind: 'data',
    method: 'GET',
    path: '/api/export',
    params: [],
    status: 200,
    message: 'OK',
    data: 'exportLines',
    summary:
      "The client's data as NDJSON (application/x-ndjson) from one revision: a header line, then roles, grants and memberships (pending ones included), by code point",
  },
  {
    id: 'client.import',
    kind: 'data',
    method: 'POST',
    path: '/api/import',
    params: [],
    status: 200,
    message: 'Imported',
    data: 'imported',
    badRequest: 'A bad line (its number and why), a missing header line, a version other than 1, a bad mode or dry_run',
    summary:
      'Imports an export (application/x-ndjson; ?mode=merge adds what is missing, ?mode=replace makes the data exactly the file) in one transaction at one revision; ?dry_run=true stores nothing',
  },
];
