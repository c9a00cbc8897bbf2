import type { IncomingMessage, ServerResponse } from 'node:http';
import { textOf, type EngineRequest, type EngineResponse, type WireText } from '../port.ts';

/** node:http's request seen through the port. */
export class NodeRequest implements EngineRequest {
  readonly #req: IncomingMessage;
  readonly #path: string;
  readonly #query: string | undefined;
  readonly #params: readonly string[];

  constructor(req: IncomingMessage, path: string, query: string | undefined, params: readonly string[]) {
    this.#req = req;
    this.#path = path;
    this.#query = query;
    this.#params = params;
  }

  getHeader(lowerCaseName: string): string {
    const value = this.#req.headers[lowerCaseName];
    return value === undefined ? '' : typeof value === 'string' ? value : (value[0] ?? '');
  }

  getParameter(index: number): string | undefined {
    return this.#params[index];
  }

  getQuery(key?: string): string | undefined {
    if (key === undefined || this.#query === undefined) return this.#query;
    return queryValue(this.#query, key);
  }

  getMethod(): string {
    return lowerMethod(this.#req.method ?? 'GET');
  }

  getUrl(): string {
    return this.#path;
  }
}

const EMPTY = new ArrayBuffer(0);

/** node:http's response seen through the port: headers gathered, then written in one go. */
export class NodeResponse implements EngineResponse {
  readonly #res: ServerResponse;
  readonly #req: IncomingMessage;
  #code = 200;
  #reason = 'OK';
  readonly #headers: string[] = [];
  /** Whether the body is being streamed (then `end` adds no Content-Length). */
  #streaming = false;

  constructor(res: ServerResponse, req: IncomingMessage) {
    this.#res = res;
    this.#req = req;
  }

  writeStatus(encoded: WireText): this {
    const status = textOf(encoded);
    const space = status.indexOf(' ');
    this.#code = Number(space < 0 ? status : status.slice(0, space));
    this.#reason = space < 0 ? '' : status.slice(space + 1);
    return this;
  }

  writeHeader(name: WireText, value: WireText): this {
    this.#headers.push(textOf(name), textOf(value));
    return this;
  }

  end(body: string | Uint8Array, closeConnection = false): this {
    if (this.#streaming) {
      this.#res.end(typeof body === 'string' ? body : Buffer.from(body));
      return this;
    }
    this.#headers.push('Content-Length', String(Buffer.byteLength(body)));
    if (closeConnection) this.#headers.push('Connection', 'close');
    // A copy of bytes: node:http may still hold them after this returns (see the port).
    if (this.#writeHead()) this.#res.end(typeof body === 'string' ? body : Buffer.from(body));
    return this;
  }

  write(chunk: string | Uint8Array): boolean {
    if (!this.#streaming) {
      this.#streaming = true;
      if (!this.#writeHead()) return true;
    }
    if (this.#res.writableEnded || this.#res.destroyed) return true;
    return this.#res.write(typeof chunk === 'string' ? chunk : Buffer.from(chunk));
  }

  onWritable(handler: () => boolean): this {
    this.#res.once('drain', () => void handler());
    return this;
  }

  close(): this {
    this.#res.destroy();
    return this;
  }

  endWithoutBody(): this {
    if (this.#writeHead()) this.#res.end();
    return this;
  }

  cork(write: () => void): this {
    write();
    return this;
  }

  onAborted(handler: () => void): this {
    this.#res.once('close', () => {
      if (!this.#res.writableFinished) handler();
    });
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.#req.on('data', (c: Buffer) => handler(c.buffer.slice(c.byteOffset, c.byteOffset + c.byteLength) as ArrayBuffer, false));
    this.#req.on('end', () => handler(EMPTY, true));
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return asciiBuffer(this.#req.socket.remoteAddress ?? '');
  }

  /** False when the connection is gone or a header cannot be written (then it is closed). */
  #writeHead(): boolean {
    if (this.#res.writableEnded || this.#res.destroyed) return false;
    try {
      this.#res.writeHead(this.#code, this.#reason, this.#headers);
      return true;
    } catch {
      // A header value node refuses (it validates every byte): no answer beats a malformed one.
      this.#res.destroy();
      return false;
    }
  }
}

/** `text` as the bytes of an ArrayBuffer of its own (small Buffers share a pool). */
export function asciiBuffer(text: string): ArrayBuffer {
  const b = Buffer.from(text, 'latin1');
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;
}

const LOWER: Record<string, string> = { GET: 'get', POST: 'post', PUT: 'put', DELETE: 'delete', HEAD: 'head', OPTIONS: 'options' };

export function lowerMethod(method: string): string {
  return LOWER[method] ?? method.toLowerCase();
}

/** The first value of `key` in a raw query string, decoded as uWS does (`+` is a space; `key` without `=` is absent). */
export function queryValue(query: string, key: string): string | undefined {
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    if (eq >= 0 && decode(pair.slice(0, eq)) === key) return decode(pair.slice(eq + 1));
  }
  return undefined;
}

function decode(text: string): string {
  const spaced = text.includes('+') ? text.replace(/\+/g, ' ') : text;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced; // malformed: left as sent, and refused later as any bad value is
  }
}
