import { createReadStream, fstatSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { importPath } from '../../client/transfer.ts';
import type { Parsed } from '../args.ts';
import { EXIT_CODES, type Command } from '../command.ts';
import { UsageError, type TransferProgress } from '../io.ts';
import { authorization, envelopeData, keyFromEnv, REMOTE_HELP, REMOTE_OPTIONS, serviceUrl, streamingPost, type Answer } from '../remote.ts';

/** POST /api/import, the body streamed from a file or stdin as it is read. */
export const importCommand: Command = {
  name: 'import',
  summary: "load an export into one client's data (POST /api/import), merged or replacing it",
  options: { ...REMOTE_OPTIONS, mode: 'string', in: 'string', 'dry-run': 'flag', 'if-match': 'string' },
  help: `Usage: rbac-gateway import --url URL --key-env VAR [--mode merge|replace] [--in FILE]
                           [--dry-run] [--if-match REVISION]

Sends an export (what "rbac-gateway export" writes, docs/api.md §17) to the client whose key is
in $VAR, as one transaction at one revision: all of it, or nothing (a bad line is refused with
its line number).
${REMOTE_HELP}
  --mode merge     add what the client lacks; keep what it has (a role's description is
                   updated). The default.
  --mode replace   make the client's data exactly the file: what the file lacks is deleted.
  --in FILE        the export to send; "-" or none: stdin
  --dry-run        store nothing; answer what would change (the pairs that would gain or lose a
                   permission)
  --if-match R     only while the client is at revision R ("*": any), else HTTP 412 (exit 1)
The file is streamed as it is read, never held in memory; the service takes up to
AUTH_IMPORT_MAX_BYTES (1 GiB by default).

Prints {"imported":{"revision","roles","permissions","memberships","added","removed","lines",
"bytes","seconds","in"}} (with --dry-run also "dry_run","gained","lost","gained_count",
"lost_count","truncated"). The service refusing the file is exit 1, its reason on stderr.
${EXIT_CODES}`,
  async run(parsed, io) {
    const options = importOptions(parsed);
    const [url, key] = [serviceUrl(parsed), keyFromEnv(parsed)];
    const source = openSource(parsed.strings.get('in') ?? '-');
    const headers: Record<string, string> = { ...authorization(key), 'content-type': 'application/x-ndjson' };
    if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch === '*' ? '*' : `"${options.ifMatch}"`;
    // A known size is sent as Content-Length; stdin from a pipe goes chunked.
    if (source.size !== undefined) headers['content-length'] = String(source.size);
    const started = performance.now();
    const progress = io.transfer('import', source.size);
    const counted = { bytes: 0, lines: 0 };
    let answer: Answer;
    try {
      answer = await streamingPost(`${url}${importPath(options)}`, headers, counting(source.stream, counted, progress));
    } finally {
      progress.end();
    }
    const data = envelopeData('import', answer);
    const seconds = Math.round(performance.now() - started) / 1000;
    io.result({ imported: { ...data, lines: counted.lines, bytes: counted.bytes, seconds, in: source.name } });
  },
};

interface Options {
  readonly mode: 'merge' | 'replace';
  readonly dryRun: boolean;
  readonly ifMatch?: number | '*';
}

function importOptions(parsed: Parsed): Options {
  const mode = parsed.strings.get('mode') ?? 'merge';
  if (mode !== 'merge' && mode !== 'replace') throw new UsageError(`--mode is merge or replace, not ${JSON.stringify(mode)}`);
  const ifMatch = parsed.strings.get('if-match');
  if (ifMatch !== undefined && ifMatch !== '*' && !/^(0|[1-9][0-9]{0,15})$/.test(ifMatch)) {
    throw new UsageError(`--if-match is a revision (a non-negative integer) or *, not ${JSON.stringify(ifMatch)}`);
  }
  const base = { mode, dryRun: parsed.flags.has('dry-run') } as const;
  return ifMatch === undefined ? base : { ...base, ifMatch: ifMatch === '*' ? '*' : Number(ifMatch) };
}

interface Source {
  readonly stream: NodeJS.ReadableStream;
  /** Bytes to send, when known (a regular file). */
  readonly size: number | undefined;
  readonly name: string;
}

function openSource(given: string): Source {
  if (given === '-') {
    const stat = fstatSync(0);
    return { stream: process.stdin, size: stat.isFile() ? stat.size : undefined, name: '-' };
  }
  const path = resolve(given);
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new Error(`${path} is not a file`);
    size = stat.size;
  } catch (err) {
    throw (err as NodeJS.ErrnoException).code === 'ENOENT' ? new Error(`there is no file ${path}`) : err;
  }
  return { stream: createReadStream(path), size, name: path };
}

/** The source's chunks as they are read, counted for the result and the progress bar. */
async function* counting(stream: NodeJS.ReadableStream, counted: { bytes: number; lines: number }, progress: TransferProgress): AsyncGenerator<Uint8Array> {
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    counted.bytes += bytes.byteLength;
    for (let nl = bytes.indexOf(10); nl >= 0; nl = bytes.indexOf(10, nl + 1)) counted.lines++;
    progress.update(counted.bytes, counted.lines);
    yield bytes;
  }
}
