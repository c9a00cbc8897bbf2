import type { Socket } from 'node:net';
import { HEAD_TOO_LARGE, LENGTH_CONFLICT, MAX_HEAD_BYTES, MAX_URL_BYTES, NOT_HTTP, URL_TOO_LONG, type Refusal } from '../limits.ts';
import { textOf, type EngineRequest, type EngineResponse, type WireText } from '../port.ts';
import { asciiBuffer } from './exchange.ts';

/**
 * A request whose head node:http refused only for its request target (raw bytes outside ASCII
 * in the path, which uWS passes through): the head is read here, the offending bytes are
 * percent-encoded, and the request is routed like any other, so it meets the same rules (404,
 * 405, 401, then "400 naming the field") on both engines. Its answer closes the connection,
 * since the parser that would read the next request is gone.
 */
export interface RawHead {
  readonly method: string;
  readonly path: string;
  readonly query: string | undefined;
  readonly headers: ReadonlyMap<string, string>;
  /** What of the body came with the head (up to its Content-Length). */
  readonly body: Buffer;
  /** Bytes of the request target and of the header names and values, as node:http counts them. */
  readonly headBytes: number;
  /** Bytes of the request target as received (before its bytes outside ASCII were percent-encoded). */
  readonly targetBytes: number;
  /** How many Content-Length headers it has, and whether it has Transfer-Encoding. */
  readonly lengths: number;
  readonly transferEncoding: boolean;
  /** The declared Content-Length, when it is one. */
  readonly declared: number;
}

/**
 * The transport limits node:http would have checked had it parsed this head (docs/api.md §4),
 * and a body that did not come whole with the head: it is never waited for here.
 */
export function rawHeadProblem(head: RawHead): Refusal | undefined {
  if (head.headBytes > MAX_HEAD_BYTES) return HEAD_TOO_LARGE;
  if (head.targetBytes > MAX_URL_BYTES) return URL_TOO_LONG;
  if (head.lengths > 1 || (head.lengths === 1 && head.transferEncoding)) return LENGTH_CONFLICT;
  if (head.transferEncoding || head.body.length < head.declared) return NOT_HTTP;
  return undefined;
}

const HEAD_END = '\r\n\r\n';

/** The head of `packet` (the bytes node:http refused) with its target made ASCII, or undefined. */
export function readRawHead(packet: Buffer | undefined): RawHead | undefined {
  if (packet === undefined) return undefined;
  const text = packet.toString('latin1');
  const end = text.indexOf(HEAD_END);
  if (end < 0) return undefined;
  const [requestLine = '', ...fields] = text.slice(0, end).split('\r\n');
  const line = /^([A-Z]{1,16}) (\S+) HTTP\/1\.[01]$/.exec(requestLine);
  if (line === null) return undefined;
  const headers = new Map<string, string>();
  let headBytes = (line[2] as string).length;
  let lengths = 0;
  for (const field of fields) {
    const colon = field.indexOf(':');
    if (colon <= 0) return undefined;
    const name = field.slice(0, colon).toLowerCase();
    headBytes += field.length - 1;
    if (name === 'content-length') lengths++;
    if (!headers.has(name)) headers.set(name, field.slice(colon + 1).trim());
  }
  const target = percentEncodeOutsideAscii(line[2] as string);
  const length = Number(headers.get('content-length') ?? '0');
  const bodyStart = Buffer.byteLength(text.slice(0, end + HEAD_END.length), 'latin1');
  const body = packet.subarray(bodyStart, bodyStart + (Number.isSafeInteger(length) && length > 0 ? length : 0));
  const q = target.indexOf('?');
  return {
    method: (line[1] as string).toLowerCase(),
    path: q < 0 ? target : target.slice(0, q),
    query: q < 0 ? undefined : target.slice(q + 1),
    headers,
    body,
    headBytes,
    targetBytes: (line[2] as string).length,
    lengths,
    transferEncoding: headers.has('transfer-encoding'),
    declared: Number.isSafeInteger(length) && length > 0 ? length : 0,
  };
}

/** Each latin1 character (a raw byte) outside printable ASCII as `%XX`. */
function percentEncodeOutsideAscii(target: string): string {
  let out = '';
  for (const ch of target) {
    const code = ch.charCodeAt(0);
    out += code > 0x20 && code < 0x7f ? ch : `%${code.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export class RawRequest implements EngineRequest {
  readonly #head: RawHead;
  readonly #params: readonly string[];
  readonly #queryOf: (query: string, key: string) => string | undefined;

  constructor(head: RawHead, params: readonly string[], queryOf: (query: string, key: string) => string | undefined) {
    this.#head = head;
    this.#params = params;
    this.#queryOf = queryOf;
  }

  getHeader(lowerCaseName: string): string {
    return this.#head.headers.get(lowerCaseName) ?? '';
  }

  getParameter(index: number): string | undefined {
    return this.#params[index];
  }

  getQuery(key?: string): string | undefined {
    const query = this.#head.query;
    return key === undefined || query === undefined ? query : this.#queryOf(query, key);
  }

  getMethod(): string {
    return this.#head.method;
  }

  getUrl(): string {
    return this.#head.path;
  }
}

const EMPTY = new ArrayBuffer(0);

/** Writes one response straight to the socket, then closes it; the body is what came with the head. */
export class RawResponse implements EngineResponse {
  readonly #socket: Socket;
  readonly #body: Buffer;
  #status = '200 OK';
  #head = '';

  constructor(socket: Socket, body: Buffer) {
    this.#socket = socket;
    this.#body = body;
  }

  writeStatus(status: WireText): this {
    this.#status = textOf(status);
    return this;
  }

  writeHeader(name: WireText, value: WireText): this {
    this.#head += `${textOf(name)}: ${textOf(value)}\r\n`;
    return this;
  }

  /** The body as bytes: a text in UTF-8, bytes as they are, both counted in Content-Length as sent. */
  end(body: string | Uint8Array): this {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    this.#finish(`Content-Length: ${bytes.byteLength}\r\n`, bytes);
    return this;
  }

  endWithoutBody(): this {
    this.#finish('', undefined);
    return this;
  }

  cork(write: () => void): this {
    write();
    return this;
  }

  onAborted(handler: () => void): this {
    this.#socket.once('close', handler);
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    const body = this.#body;
    queueMicrotask(() => handler(body.length === 0 ? EMPTY : (body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer), true));
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return asciiBuffer(this.#socket.remoteAddress ?? '');
  }

  /** The head (ASCII, as node:http would refuse anything else in it), then the body's bytes unchanged. */
  #finish(length: string, body: Uint8Array | undefined): void {
    if (!this.#socket.writable) return;
    const head = Buffer.from(`HTTP/1.1 ${this.#status}\r\n${this.#head}${length}Connection: close\r\n\r\n`, 'latin1');
    this.#socket.end(body === undefined || body.byteLength === 0 ? head : Buffer.concat([head, body]));
  }
}
