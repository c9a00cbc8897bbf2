import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { EXIT_CODES, type Command } from '../command.ts';
import type { Io } from '../io.ts';
import { authorization, drained, keyFromEnv, remoteError, REMOTE_HELP, REMOTE_OPTIONS, request, serviceUrl } from '../remote.ts';

/** GET /api/export, written through to a file or stdout as it arrives. */
export const exportCommand: Command = {
  name: 'export',
  summary: "write one client's data (GET /api/export) as NDJSON to a file or stdout",
  options: { ...REMOTE_OPTIONS, out: 'string' },
  help: `Usage: rbac-gateway export --url URL --key-env VAR [--out FILE]

Streams the data of the client whose key is in $VAR (GET /api/export, docs/api.md §17): a header
line, then its roles, grants and memberships, pending ones with their windows, from one revision.
${REMOTE_HELP}
  --out FILE       where to write it; "-" or none: stdout
The data is written as it arrives, never held in memory. FILE is written beside itself first and
renamed once the export is complete: a transfer cut before its end (the service closes the
connection when the client is written to meanwhile: export again) leaves FILE as it was.
A read token may export.

Prints {"exported":{"revision","roles","permissions","memberships","lines","bytes","seconds","out"}}
on stdout, or on stderr when stdout carries the data.
${EXIT_CODES}`,
  async run(parsed, io) {
    const out = parsed.strings.get('out') ?? '-';
    // Claimed first, so that even a usage error leaves stdout to the data alone.
    const stdout = out === '-' ? io.claimStdout() : undefined;
    const [url, key] = [serviceUrl(parsed), keyFromEnv(parsed)];
    const sink = stdout !== undefined ? stdoutSink(stdout) : await fileSink(resolve(out));
    try {
      const started = performance.now();
      const counts = await transfer(url, key, sink, io);
      await sink.commit();
      const seconds = Math.round(performance.now() - started) / 1000;
      io.result({ exported: { ...counts.summary(), seconds, out: out === '-' ? '-' : resolve(out) } });
    } catch (err) {
      sink.abort();
      throw err;
    }
  },
};

/** Reads the export into `sink`, counting as it goes; throws when it is no whole export. */
async function transfer(url: string, key: string, sink: Sink, io: Io): Promise<ExportCounts> {
  const res = await request(`${url}/api/export`, { headers: authorization(key) });
  if (res.status !== 200 || res.body === null) {
    throw remoteError('export', res.status, await res.text().catch(() => ''));
  }
  const counts = new ExportCounts();
  const progress = io.transfer('export', undefined);
  try {
    for await (const chunk of streamOf(res.body)) {
      counts.take(chunk);
      await sink.write(chunk);
      progress.update(counts.bytes, counts.lines);
    }
  } finally {
    progress.end();
  }
  counts.finish();
  return counts;
}

/**
 * The body's chunks; the stream failing midway (the connection closed before the end) is a cut
 * export. Left early (the sink failed), the rest is cancelled: the connection is let go.
 */
async function* streamOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (err) {
        finished = true;
        const why = err instanceof Error ? err.message : String(err);
        throw new Error(`the export was cut before its end (${why}): the client was probably written to meanwhile; export again`);
      }
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

/** Lines by kind, checked as they pass: the header first, every line ended. */
class ExportCounts {
  bytes = 0;
  lines = 0;
  #revision: number | undefined;
  readonly #kinds = { role: 0, permission: 0, membership: 0 };
  readonly #decoder = new TextDecoder();
  #rest = '';

  take(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    this.#rest += this.#decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = this.#rest.indexOf('\n'); nl >= 0; nl = this.#rest.indexOf('\n', start)) {
      this.#line(this.#rest.slice(start, nl));
      start = nl + 1;
    }
    this.#rest = this.#rest.slice(start);
  }

  /** The end of the body: a last line without its newline is a body cut short. */
  finish(): void {
    this.#rest += this.#decoder.decode();
    if (this.#revision === undefined) throw new Error('the answer holds no export header: is --url the service?');
    if (this.#rest !== '') throw new Error('the export was cut before its end (its last line is incomplete); export again');
  }

  summary(): Record<string, number> {
    const { role, permission, membership } = this.#kinds;
    return { revision: this.#revision ?? 0, roles: role, permissions: permission, memberships: membership, lines: this.lines, bytes: this.bytes };
  }

  #line(line: string): void {
    this.lines++;
    if (this.lines === 1) {
      this.#revision = headerRevision(line);
      return;
    }
    // The service writes `type` first: a prefix tells most lines apart without parsing them.
    const kind = /^\{"type":"(role|permission|membership)"/.exec(line)?.[1] ?? parsedType(line);
    if (kind === 'role' || kind === 'permission' || kind === 'membership') this.#kinds[kind]++;
  }
}

function headerRevision(line: string): number {
  try {
    const header = JSON.parse(line) as { format?: unknown; revision?: unknown };
    if (header.format === 'rbac-gateway.export' && typeof header.revision === 'number') return header.revision;
  } catch {
    // Reported below, as any other first line that is no header.
  }
  throw new Error('the answer is not an export (its first line is no rbac-gateway.export header): is --url the service?');
}

function parsedType(line: string): unknown {
  try {
    return (JSON.parse(line) as { type?: unknown }).type;
  } catch {
    return undefined;
  }
}

/** Where the export goes: written in order, then made whole (`commit`) or dropped (`abort`). */
interface Sink {
  write(chunk: Uint8Array): Promise<void>;
  commit(): Promise<void>;
  abort(): void;
}

/** Writes as the stream drains: memory stays a chunk or two, however large the export. */
async function writeThrough(stream: NodeJS.WritableStream, chunk: Uint8Array, failure: () => Error | undefined): Promise<void> {
  const failed = failure();
  if (failed !== undefined) throw failed;
  if (!stream.write(chunk)) await drained(stream);
  const after = failure();
  if (after !== undefined) throw after;
}

function stdoutSink(stdout: NodeJS.WritableStream): Sink {
  let error: Error | undefined;
  stdout.on('error', (err: Error) => (error ??= new Error(`cannot write to stdout: ${err.message}`)));
  return {
    write: (chunk) => writeThrough(stdout, chunk, () => error),
    commit: async () => {
      if (error !== undefined) throw error;
    },
    abort: () => undefined,
  };
}

/**
 * A temporary file beside `path` (same folder, same file system: the rename is atomic), synced and
 * renamed to it once complete. Opened before the request, so that a folder that cannot take it
 * fails at once.
 */
async function fileSink(path: string): Promise<Sink> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.partial`);
  const stream: WriteStream = createWriteStream(temporary, { flags: 'wx' });
  let error: Error | undefined;
  stream.on('error', (err: Error) => (error ??= new Error(`cannot write ${path}: ${err.message}`)));
  await once(stream, 'open').catch(() => undefined);
  if (error !== undefined) throw error;
  return {
    write: (chunk) => writeThrough(stream, chunk, () => error),
    async commit() {
      stream.end();
      await once(stream, 'close').catch(() => undefined);
      if (error !== undefined) throw error;
      const written = await open(temporary, 'r');
      await written.sync().finally(() => written.close());
      renameSync(temporary, path);
    },
    abort() {
      stream.destroy();
      rmSync(temporary, { force: true });
    },
  };
}
