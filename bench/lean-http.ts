/**
 * A minimal HTTP/1.1 client over node:net for the writer of the mixed run. It shares two cores
 * with wrk and the gateway, so every microsecond it spends is taken from the checks it runs
 * beside: fetch costs about 0.6 ms of CPU per request here, a new node:http connection about as
 * much again. This one sends a prebuilt request and reads only what it checks (status, revision,
 * body), on a kept-alive connection or on a new one per request. Answers must carry
 * Content-Length (the gateway's always do); anything else is an error, never a guess.
 */
import net from 'node:net';

export interface LeanResponse {
  status: number;
  /** X-Authz-Revision, NaN when absent. */
  revision: number;
  body: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** The request bytes for `method path` with a bearer credential and no body. */
export function leanRequest(method: string, path: string, key: string, keepAlive: boolean): Buffer {
  return Buffer.from(
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Length: 0\r\n` +
      `Connection: ${keepAlive ? 'keep-alive' : 'close'}\r\n\r\n`,
    'latin1',
  );
}

/** Parses one whole response at the start of `buf`: the response and its length, or undefined if incomplete. */
function parse(buf: Buffer): { response: LeanResponse; length: number } | undefined {
  const end = buf.indexOf(HEADER_END);
  if (end < 0) return undefined;
  const head = buf.toString('latin1', 0, end);
  const status = Number(head.slice(9, 12));
  let contentLength = -1;
  let revision = NaN;
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    if (name === 'content-length') contentLength = Number(line.slice(colon + 1).trim());
    else if (name === 'x-authz-revision') revision = Number(line.slice(colon + 1).trim());
  }
  if (!Number.isInteger(status) || contentLength < 0) throw new Error(`unexpected response head: ${head.slice(0, 200)}`);
  const length = end + HEADER_END.length + contentLength;
  if (buf.length < length) return undefined;
  return { response: { status, revision, body: buf.toString('utf8', end + HEADER_END.length, length) }, length };
}

/** One kept-alive connection; requests go one at a time. */
export class LeanConnection {
  readonly #port: number;
  readonly #timeoutMs: number;
  #socket: net.Socket | undefined;
  #buf: Buffer = Buffer.alloc(0);
  #waiting: { resolve: (r: LeanResponse) => void; reject: (e: Error) => void } | undefined;

  constructor(port: number, timeoutMs = 10_000) {
    this.#port = port;
    this.#timeoutMs = timeoutMs;
  }

  request(bytes: Buffer): Promise<LeanResponse> {
    if (this.#waiting !== undefined) return Promise.reject(new Error('a request is already in flight on this connection'));
    const socket = this.#socket ?? this.#connect();
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      socket.write(bytes);
    });
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }

  #connect(): net.Socket {
    const socket = net.connect({ port: this.#port, host: '127.0.0.1', noDelay: true });
    socket.setTimeout(this.#timeoutMs);
    this.#socket = socket;
    this.#buf = Buffer.alloc(0);
    const fail = (err: Error): void => {
      if (this.#socket === socket) this.#socket = undefined;
      socket.destroy();
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.reject(err);
    };
    socket.on('data', (chunk: Buffer) => {
      this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
      let got;
      try {
        got = parse(this.#buf);
      } catch (err) {
        fail(err as Error);
        return;
      }
      if (got === undefined) return;
      this.#buf = this.#buf.subarray(got.length);
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.resolve(got.response);
    });
    socket.on('timeout', () => fail(new Error(`no answer within ${this.#timeoutMs} ms`)));
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('the connection closed before the answer')));
    return socket;
  }
}

/** One request on a new TCP connection (`bytes` should say Connection: close), so the kernel picks the worker. */
export function leanOneShot(port: number, bytes: Buffer, timeoutMs = 5_000): Promise<LeanResponse> {
  const c = new LeanConnection(port, timeoutMs);
  return c.request(bytes).finally(() => c.close());
}
