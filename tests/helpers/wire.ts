/**
 * One HTTP/1.1 exchange over a raw TCP socket, for requests no HTTP client would send as they
 * are: any method, any bytes in the request target (dot segments, bad percent-encoding, raw
 * UTF-8), any header. Each exchange has its own connection (`Connection: close`); the response is
 * read by its framing (Content-Length, chunked, or up to the close) and the socket then dropped.
 * Never rejects: the outcome says what happened, the timeout included.
 */
import { connect } from 'node:net';

export interface WireRequest {
  readonly method: string;
  /** The request target exactly as it goes on the wire (sent as UTF-8). */
  readonly target: string;
  /** In order; `Host`, `Content-Length` (with a body) and `Connection: close` are added. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: Buffer;
}

export interface WireResponse {
  readonly kind: 'response';
  readonly status: number;
  /** Lower-case names; every value of a repeated header, in order. */
  readonly headers: ReadonlyMap<string, readonly string[]>;
  readonly body: Buffer;
}

/** No complete response: `closed` (the server ended or reset the connection), `refused`, `timeout`. */
export interface WireFailure {
  readonly kind: 'closed' | 'refused' | 'timeout';
  readonly detail: string;
  /** What had arrived before. */
  readonly received: Buffer;
}

export type WireOutcome = WireResponse | WireFailure;

/** The first value of a header, or undefined. */
export function header(res: WireResponse, name: string): string | undefined {
  return res.headers.get(name)?.[0];
}

export function encodeRequest(port: number, r: WireRequest): Buffer {
  const lines = [`${r.method} ${r.target} HTTP/1.1`, `Host: 127.0.0.1:${port}`];
  for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
  if (r.body !== undefined) lines.push(`Content-Length: ${r.body.length}`);
  lines.push('Connection: close', '', '');
  const head = Buffer.from(lines.join('\r\n'), 'utf8');
  return r.body === undefined ? head : Buffer.concat([head, r.body]);
}

export function exchange(port: number, r: WireRequest, timeoutMs = 5000): Promise<WireOutcome> {
  const bytes = encodeRequest(port, r);
  const noBody = r.method === 'HEAD';
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = connect({ host: '127.0.0.1', port });
    const settle = (outcome: WireOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const received = (): Buffer => Buffer.concat(chunks);
    const timer = setTimeout(() => settle({ kind: 'timeout', detail: `no complete response within ${timeoutMs} ms`, received: received() }), timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const parsed = parse(received(), noBody, false);
      if (parsed !== undefined) settle(parsed);
    });
    socket.on('end', () =>
      settle(parse(received(), noBody, true) ?? { kind: 'closed', detail: 'connection closed before a complete response', received: received() }),
    );
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after a complete response still counts as that response.
      const parsed = parse(received(), noBody, true);
      if (parsed !== undefined) return settle(parsed);
      settle({ kind: err.code === 'ECONNREFUSED' ? 'refused' : 'closed', detail: `${err.code ?? 'error'}: ${err.message}`, received: received() });
    });
  });
}

/** A complete response in `buf`, or undefined while more is needed (`atEnd`: no more will come). */
function parse(buf: Buffer, noBody: boolean, atEnd: boolean): WireResponse | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
  if (m === null) return undefined;
  const status = Number(m[1]);
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  const rest = buf.subarray(end + 4);
  const done = (body: Buffer): WireResponse => ({ kind: 'response', status, headers, body });
  if (noBody || status === 204 || status === 304 || status < 200) return done(Buffer.alloc(0));
  if (/chunked/i.test(headers.get('transfer-encoding')?.join(',') ?? '')) {
    const body = dechunk(rest);
    return body === undefined ? undefined : done(body);
  }
  const length = headers.get('content-length')?.[0];
  if (length !== undefined) return rest.length >= Number(length) ? done(rest.subarray(0, Number(length))) : undefined;
  return atEnd ? done(rest) : undefined;
}

function dechunk(buf: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (buf.length < eol + 2 + size + 2) return undefined;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
