import { isName, NAME_RULE } from '../../authz/names.ts';
import type { ImportEdge, ImportFile, ImportMode } from '../../authz/transfer.ts';
import { AppError, appError } from '../../errors/index.ts';
import type { EngineRequest, EngineResponse } from '../engine/port.ts';
import type { BodyReader, BodyResult } from './body.ts';
import { isJsonObject, own, readWindowKeys } from './window.ts';

/*
 * The body of POST /api/import (docs/api.md §17): NDJSON in the export's format, its header
 * line first. Any bad line is a 400 naming its number and what is wrong; nothing is imported.
 */

/** What an import asks: the file, checked, and the query's mode and dry run. */
export interface ImportAsked {
  readonly file: ImportFile;
  readonly mode: ImportMode;
  readonly dry: boolean;
}

const NDJSON_TYPE = 'application/x-ndjson';
const MAX_DESCRIPTION = 1024;

const KEYS: Record<string, readonly string[]> = {
  header: ['format', 'version', 'revision', 'exported_at'],
  role: ['type', 'role', 'description'],
  permission: ['type', 'role', 'permission', 'not_before', 'expires_at'],
  membership: ['type', 'user', 'role', 'not_before', 'expires_at'],
};

function lineError(n: number, detail: string): AppError {
  return appError('ERR_VALIDATION_BODY', `line ${n}: ${detail}`);
}

/** `?mode=` and `?dry_run=`; throws a 400 naming the parameter. */
function importQuery(req: EngineRequest): { mode: ImportMode; dry: boolean } {
  const mode = req.getQuery('mode') ?? 'merge';
  if (mode !== 'merge' && mode !== 'replace') throw appError('ERR_VALIDATION_QUERY', 'mode must be merge or replace');
  const dry = req.getQuery('dry_run') ?? 'false';
  if (dry !== 'true' && dry !== 'false') throw appError('ERR_VALIDATION_QUERY', 'dry_run must be true or false');
  return { mode, dry: dry === 'true' };
}

function isNdjson(contentType: string): boolean {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === NDJSON_TYPE;
}

/** Reads import bodies of at most AUTH_IMPORT_MAX_BYTES (`reader`'s limit); must start inside the engine's handler. */
export function readImport(reader: BodyReader, res: EngineResponse, req: EngineRequest): Promise<BodyResult> {
  let query: { mode: ImportMode; dry: boolean };
  try {
    query = importQuery(req);
  } catch (err) {
    return Promise.resolve({ error: err as AppError, close: true });
  }
  // Refused before a byte is read: the rest of the body is never read, so the connection closes.
  if (!isNdjson(req.getHeader('content-type'))) {
    const error = new AppError('ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', `body must be sent with Content-Type ${NDJSON_TYPE}`);
    return Promise.resolve({ error, close: true });
  }
  const now = Date.now() * 1000;
  return new Promise((resolve) => {
    reader.collect(res, req, (body) => {
      if (body.error !== undefined) return resolve(body);
      try {
        resolve({ value: { ...query, file: parseImport(body.bytes.toString('utf8'), now) } satisfies ImportAsked });
      } catch (err) {
        resolve({ error: err as AppError, close: false });
      }
    });
  });
}

/** A name field of line `n`. */
function nameOf(obj: Record<string, unknown>, field: string, n: number): string {
  const v = own(obj, field);
  if (v === undefined) throw lineError(n, `must have the key '${field}'`);
  if (typeof v !== 'string' || !isName(v)) throw lineError(n, `${field} must be ${NAME_RULE}`);
  return v;
}

function checkKeys(obj: Record<string, unknown>, allowed: readonly string[], n: number): void {
  for (const k of Object.keys(obj)) if (!allowed.includes(k)) throw lineError(n, `unknown key '${k}'`);
}

function checkHeader(obj: unknown): void {
  if (!isJsonObject(obj)) throw lineError(1, 'the header must be a JSON object');
  if (own(obj, 'format') !== 'rbac-gateway.export') throw lineError(1, "the header must have format 'rbac-gateway.export'");
  checkKeys(obj, KEYS.header as readonly string[], 1);
  if (own(obj, 'version') !== 1) throw lineError(1, 'version must be 1');
}

/** The window of an edge line, settled as a write settles it (a `not_before` already past is not kept). */
function edgeOf(obj: Record<string, unknown>, role: string, other: string, n: number, now: number): ImportEdge {
  let w;
  try {
    w = readWindowKeys(obj, now);
  } catch (err) {
    throw lineError(n, (err as AppError).message);
  }
  const notBefore = w.notBefore !== undefined && w.notBefore > now ? w.notBefore : null;
  return [role, other, notBefore, w.expiresAt ?? null];
}

/** Parses and checks a whole import body; throws a 400 naming the first bad line. */
export function parseImport(text: string, now: number): ImportFile {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw lineError(1, 'the header line is missing');
  const roles: Array<[string, string]> = [];
  const grants: ImportEdge[] = [];
  const memberships: ImportEdge[] = [];
  const seen = new Map<string, number>();
  const edgeLines: Array<[string, number]> = [];
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    let obj: unknown;
    try {
      obj = JSON.parse(lines[i] as string);
    } catch {
      throw lineError(n, 'not valid JSON');
    }
    if (n === 1) {
      checkHeader(obj);
      continue;
    }
    if (!isJsonObject(obj)) throw lineError(n, 'must be a JSON object');
    const type = own(obj, 'type');
    if (type !== 'role' && type !== 'permission' && type !== 'membership') throw lineError(n, 'type must be role, permission or membership');
    checkKeys(obj, KEYS[type] as readonly string[], n);
    const role = nameOf(obj, 'role', n);
    const other = type === 'role' ? '' : nameOf(obj, type === 'permission' ? 'permission' : 'user', n);
    const key = `${type}\0${role}\0${other}`;
    const before = seen.get(key);
    if (before !== undefined) throw lineError(n, `the same ${type} as line ${before}`);
    seen.set(key, n);
    if (type === 'role') {
      const description = own(obj, 'description') ?? '';
      if (typeof description !== 'string') throw lineError(n, 'description must be a string');
      if ([...description].length > MAX_DESCRIPTION) throw lineError(n, `description must be at most ${MAX_DESCRIPTION} characters`);
      roles.push([role, description]);
      continue;
    }
    (type === 'permission' ? grants : memberships).push(edgeOf(obj, role, other, n, now));
    edgeLines.push([role, n]);
  }
  for (const [role, n] of edgeLines) if (!seen.has(`role\0${role}\0`)) throw lineError(n, `role '${role}' has no role line`);
  return { roles, grants, memberships };
}
