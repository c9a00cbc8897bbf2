import type { Schemas, WriteOptions } from './types.ts';

/*
 * A client's data leaving and coming back (docs/api.md §17): the export read line by line as
 * it streams (memory stays one chunk), and the import sent as it is given.
 */

/** The data of a successful POST /api/import. */
export type ImportResult = Schemas['ImportResult'];

/** The data of POST /api/import?dry_run=true: what it would do, and the pairs that would change. */
export type ImportPreview = Schemas['ImportPreview'];

/** One line of an export (its header first), as GET /api/export streams it and POST /api/import reads it. */
export type ExportLine = Schemas['ExportLine'];

export interface ImportOptions extends WriteOptions {
  /** `merge` (default) adds what is missing; `replace` makes the client's data exactly the body. */
  readonly mode?: 'merge' | 'replace';
  /** Store nothing; answer what would change. */
  readonly dryRun?: boolean;
}

/** The query of an import request. */
export function importPath(options: ImportOptions): string {
  const query = new URLSearchParams();
  if (options.mode !== undefined) query.set('mode', options.mode);
  if (options.dryRun === true) query.set('dry_run', 'true');
  const qs = query.toString();
  return qs.length === 0 ? '/api/import' : `/api/import?${qs}`;
}

/** Thrown by an export that did not answer 200, or whose stream was cut before its end. */
export class ExportError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'ExportError';
    this.status = status;
  }
}

/**
 * The lines of GET /api/export as they arrive (without their newlines), the header first. A
 * transfer cut before its end (the client changed while it was read) throws: what came is no
 * snapshot.
 */
export async function* exportLines(baseUrl: string, key: string | undefined): AsyncGenerator<string> {
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  const res = await fetch(`${baseUrl}/api/export`, { headers });
  if (res.status !== 200 || res.body === null) throw new ExportError(res.status, `export failed with ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let rest = '';
  try {
    for await (const chunk of res.body) {
      rest += decoder.decode(chunk as Uint8Array, { stream: true });
      let nl = rest.indexOf('\n');
      while (nl >= 0) {
        yield rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        nl = rest.indexOf('\n');
      }
    }
  } catch (err) {
    throw new ExportError(200, `export cut before its end: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (rest.length > 0) yield rest;
}
