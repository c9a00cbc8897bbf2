import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { required, type Parsed } from './args.ts';
import { UsageError } from './io.ts';

/*
 * What `export` and `import` share: they are HTTP clients of a running service (docs/api.md §17),
 * not maintenance on its database, so they read no settings but the URL and the key.
 */

/** The options both commands take to reach the service. */
export const REMOTE_OPTIONS = { url: 'string', 'key-env': 'string' } as const;

export const REMOTE_HELP = `  --url URL        the service's base URL (http:// or https://), as http://127.0.0.1:5000
  --key-env VAR    the name of the environment variable that holds the client's key (or a
                   token); the key itself is never an argument, and is never printed`;

/** `--url`, checked: http or https, no credentials in it (secrets are never arguments), no trailing slash. */
export function serviceUrl(parsed: Parsed): string {
  const given = required(parsed, 'url');
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(`--url ${JSON.stringify(given)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--url must be an http:// or https:// URL');
  if (url.username !== '' || url.password !== '') throw new UsageError('--url may not hold credentials: name the key with --key-env');
  if (url.search !== '' || url.hash !== '') throw new UsageError('--url is the base URL only, without a query or fragment');
  return url.href.replace(/\/+$/, '');
}

/** The key, from the environment variable `--key-env` names: unset or empty is bad usage (exit 2). */
export function keyFromEnv(parsed: Parsed): string {
  const name = required(parsed, 'key-env');
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new UsageError('--key-env takes the name of an environment variable (letters, digits, _), not the key itself');
  const value = process.env[name];
  if (value === undefined) throw new UsageError(`the environment variable ${name} (named by --key-env) is not set`);
  if (value.trim() === '') throw new UsageError(`the environment variable ${name} (named by --key-env) is empty`);
  return value;
}

/** A request the service answered with an error status: exit 1, the envelope's error as the reason. */
export class RemoteError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'RemoteError';
    this.status = status;
  }
}

/**
 * The `data` of a §2 success envelope; anything else is a {@link RemoteError} whose message is the
 * status and the envelope's `error` (or `message`), or the start of a body that is no envelope.
 */
export function envelopeData(what: string, { status, text }: Answer): Record<string, unknown> {
  let envelope: { success?: unknown; data?: unknown; error?: unknown; message?: unknown } | undefined;
  try {
    envelope = JSON.parse(text) as typeof envelope;
  } catch {
    envelope = undefined; // a proxy's page, say: its start is the best reason there is
  }
  const ok = status >= 200 && status < 300;
  if (ok && envelope?.success === true && typeof envelope.data === 'object' && envelope.data !== null) {
    return envelope.data as Record<string, unknown>;
  }
  if (ok) throw new Error(`${what}: the answer (HTTP ${status}) is not the service's: is --url the service?`);
  throw remoteError(what, status, text);
}

/** The error an answer that is not a success stands for, from its body (`text`). */
export function remoteError(what: string, status: number, text: string): RemoteError {
  let said: unknown;
  try {
    const envelope = JSON.parse(text) as { error?: unknown; message?: unknown };
    said = envelope.error ?? envelope.message;
  } catch {
    said = undefined;
  }
  const reason = typeof said === 'string' ? said : text.trim().slice(0, 300);
  return new RemoteError(status, `${what} failed: HTTP ${status}${reason === '' ? '' : `: ${reason}`}`);
}

/** fetch, with a failure to connect named by its cause (fetch itself only says "fetch failed"). */
export async function request(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
    throw new Error(`cannot reach ${new URL(url).origin}: ${cause}`);
  }
}

/** The headers every request carries: the key as a bearer credential. */
export const authorization = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

/** An answer read whole: its status and its body's text. */
export interface Answer {
  readonly status: number;
  readonly text: string;
}

/**
 * POSTs `body` as it is produced, waiting whenever the connection holds bytes back (memory stays
 * a chunk or two, however large the file). node:http rather than fetch: when the service answers
 * before taking the whole body (413 over AUTH_IMPORT_MAX_BYTES, 401) and closes the connection,
 * the answer that came is what counts, not the failed write that follows it.
 */
export function streamingPost(url: string, headers: Record<string, string>, body: AsyncIterable<Uint8Array>): Promise<Answer> {
  const target = new URL(url);
  const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, { method: 'POST', headers });
  return new Promise<Answer>((resolve, reject) => {
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => reject(new Error(`the answer from ${target.origin} was cut: ${err.message}`)));
    });
    let connected = false;
    req.on('socket', (socket) => socket.once('connect', () => (connected = true)));
    req.on('error', (err) => {
      if (answered) return;
      // Closing a connection with unread bytes resets it, and a reset drops whatever answer came first.
      const why = connected
        ? `the service closed the connection before taking the whole body (${err.message}); a body over its AUTH_IMPORT_MAX_BYTES is refused so (HTTP 413)`
        : `cannot reach ${target.origin}: ${err.message}`;
      reject(new Error(why));
    });
    sendBody(req, body).catch((err: unknown) => {
      req.destroy();
      reject(err instanceof Error ? err : new Error(String(err)));
    });
  });
}

async function sendBody(req: ClientRequest, body: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const chunk of body) {
    if (req.destroyed) return; // the service answered early and closed: its answer is the result
    if (!req.write(chunk)) await drained(req);
  }
  if (!req.destroyed) req.end();
}

/**
 * Resolves when `stream` can take more (or has failed or closed: the caller checks which). Its
 * listeners go with it: a wait per chunk must not pile them up.
 */
export function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      for (const event of ['drain', 'error', 'close']) stream.removeListener(event, done);
      resolve();
    };
    for (const event of ['drain', 'error', 'close']) stream.once(event, done);
  });
}
