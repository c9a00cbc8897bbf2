/**
 * Requests through node:http, for tests that must control connections: with the default
 * `agent: false` every request opens a brand-new TCP connection (`Connection: close`), so the
 * kernel picks the worker that accepts it (SO_REUSEPORT). Pass a keep-alive agent to reuse one.
 * Never throws on an HTTP status; rejects with a {@link RawError} on connection failures and on
 * the timeout.
 */
import http, { type Agent, type IncomingHttpHeaders } from 'node:http';

export interface RawResult<T = unknown> {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed JSON body, undefined when empty or not JSON. */
  body: unknown;
  /** `data` of a success envelope. */
  data: T | undefined;
  /** `error` of an error envelope. */
  error: string | undefined;
  nextCursor: string | undefined;
  /** `X-Authz-Revision`, when sent. */
  revision: number | undefined;
  /** The client-side port of the connection that carried the request. */
  localPort: number | undefined;
  /** performance.now() when the request was fully handed to the kernel, if it was. */
  sentAt: number | undefined;
}

export interface RawOptions {
  port: number;
  method?: string;
  path: string;
  /** Bearer credential. */
  key?: string;
  headers?: Record<string, string>;
  /** JSON body. */
  body?: unknown;
  /** false (default): a new TCP connection for this request only. */
  agent?: Agent | false;
  /** Abort after this long (default 5000 ms). */
  timeoutMs?: number;
  /** Called once the request is fully written to the socket (performance.now()). */
  onSent?: (at: number) => void;
}

export class RawError extends Error {
  /** ECONNRESET, ECONNREFUSED, EPIPE, TIMEOUT, … */
  readonly code: string;
  readonly sentAt: number | undefined;
  constructor(code: string, message: string, sentAt: number | undefined) {
    super(`${code}: ${message}`);
    this.code = code;
    this.sentAt = sentAt;
  }
}

export function rawRequest<T = unknown>(o: RawOptions): Promise<RawResult<T>> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key !== undefined) headers.authorization = `Bearer ${o.key}`;
    let payload: string | undefined;
    if (o.body !== undefined) {
      payload = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    let sentAt: number | undefined;
    let settled = false;
    const fail = (code: string, message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new RawError(code, message, sentAt));
    };
    const req = http.request({ host: '127.0.0.1', port: o.port, method: o.method ?? 'GET', path: o.path, headers, agent: o.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? 'ERESPONSE', err.message));
      res.on('aborted', () => fail('ECONNRESET', 'response aborted'));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = text.length > 0 ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        const env = (typeof body === 'object' && body !== null ? body : {}) as {
          success?: unknown;
          data?: unknown;
          error?: unknown;
          next_cursor?: unknown;
        };
        const rev = res.headers['x-authz-revision'];
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          body,
          data: env.success === true ? (env.data as T) : undefined,
          error: env.success === false && typeof env.error === 'string' ? env.error : undefined,
          nextCursor: env.success === true && typeof env.next_cursor === 'string' ? env.next_cursor : undefined,
          revision: typeof rev === 'string' ? Number(rev) : undefined,
          localPort: res.socket?.localPort,
          sentAt,
        });
      });
    });
    const timer = setTimeout(() => {
      fail('TIMEOUT', `no answer to ${o.method ?? 'GET'} ${o.path} within ${o.timeoutMs ?? 5000} ms`);
      req.destroy();
    }, o.timeoutMs ?? 5000);
    req.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? 'EREQUEST', err.message));
    req.on('finish', () => {
      sentAt = performance.now();
      o.onSent?.(sentAt);
    });
    req.end(payload);
  });
}

/** The process that answered: the prefix of the X-Request-Id it generated, unique per worker (diagnostics). */
export function answeredBy(res: RawResult): string {
  const id = res.headers['x-request-id'];
  return typeof id === 'string' ? (id.split('-')[0] ?? id) : '?';
}
