import { appError } from '../../errors/index.ts';
import type { EngineRequest } from '../engine/port.ts';
import { parseIfMatch } from './if-match.ts';

const MAX_LIMIT = 10_000;

/** What an /api request asks beyond its path: paging, the revision to wait for, the changelog start. */
export interface Query {
  readonly limit: number | undefined;
  readonly cursor: string | undefined;
  readonly minRevision: number;
  /** `?since=` of /api/changes. */
  readonly since: number;
  /** A write's `If-Match` revision (docs/api.md §12.4); undefined without one, or with `*`. */
  readonly ifMatch?: number | undefined;
}

/** Shared by every request that asks nothing, so the hot path allocates no query. */
export const NO_QUERY: Query = { limit: undefined, cursor: undefined, minRevision: 0, since: 0 };

/** `?limit` and `?cursor` of list routes, the `X-Authz-Min-Revision` header, and a write's `If-Match`. */
export function parseQuery(req: EngineRequest, list: boolean, log: boolean, write = false): Query {
  if (write) {
    const ifMatch = parseIfMatch(req.getHeader('if-match'));
    if (ifMatch !== undefined && ifMatch !== 'any') return { ...parseQuery(req, list, log), ifMatch };
  }
  const minHeader = req.getHeader('x-authz-min-revision');
  let minRevision = 0;
  if (minHeader !== '') {
    if (!/^\d{1,15}$/.test(minHeader)) {
      throw appError('ERR_VALIDATION_HEADER', 'X-Authz-Min-Revision must be a non-negative integer');
    }
    minRevision = Number(minHeader);
  }
  if (!list || req.getQuery() === undefined) return minRevision === 0 ? NO_QUERY : { ...NO_QUERY, minRevision };
  const rawLimit = req.getQuery('limit') as string | undefined;
  const cursor = req.getQuery('cursor') as string | undefined;
  let limit: number | undefined;
  if (rawLimit !== undefined) {
    limit = /^\d{1,5}$/.test(rawLimit) ? Number(rawLimit) : 0;
    if (limit < 1 || limit > MAX_LIMIT) throw appError('ERR_VALIDATION_QUERY', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  let since = 0;
  const rawSince = log ? (req.getQuery('since') as string | undefined) : undefined;
  if (rawSince !== undefined) {
    if (!/^\d{1,15}$/.test(rawSince)) throw appError('ERR_VALIDATION_QUERY', 'since must be a non-negative integer');
    since = Number(rawSince);
  }
  return { limit, cursor, minRevision, since };
}
