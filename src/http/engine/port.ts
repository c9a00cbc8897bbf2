/**
 * The HTTP engine port: what `src/http/` needs from a web server, and nothing more.
 *
 * The request and response have the shape of uWebSockets.js's own objects, so the fast engine
 * hands its native objects straight to the handlers (no wrapper allocated on the hot path); the
 * node:http adapter implements the same shape. Handlers never learn which engine runs them.
 */

/** One request. Valid only during the handler's synchronous part (as uWS requires). */
export interface EngineRequest {
  /** The first value of a header by its lower-case name; '' when absent. */
  getHeader(lowerCaseName: string): string;
  /** The raw (still percent-encoded) path parameter at `index` of the route's pattern. */
  getParameter(index: number): string | undefined;
  /** Without a key: the raw query string after `?` (undefined without `?`). With a key: its first value, decoded. */
  getQuery(key?: string): string | undefined;
  /** The method in lower case. */
  getMethod(): string;
  /** The raw path, without the query. */
  getUrl(): string;
}

/**
 * A constant of the wire (a status line, a header's name or value) encoded once, with its text:
 * uWS takes the bytes as they are instead of encoding a string to UTF-8 on every call, node:http
 * takes the text. Made by {@link encodedText}; never changed after.
 */
export interface EncodedText extends Uint8Array {
  readonly text: string;
}

/** A status line or header part: text, or text encoded once. */
export type WireText = string | EncodedText;

/** `text` (ASCII) as an {@link EncodedText}. */
export function encodedText(text: string): EncodedText {
  const bytes = new Uint8Array(text.length);
  for (let k = 0; k < text.length; k++) bytes[k] = text.charCodeAt(k);
  return Object.assign(bytes, { text });
}

/** The text of a status line or header part. */
export function textOf(part: WireText): string {
  return typeof part === 'string' ? part : part.text;
}

/** One response; every method returns something engine-specific that handlers ignore. */
export interface EngineResponse {
  /** `200 OK`: code and reason phrase. Must come first. */
  writeStatus(status: WireText): unknown;
  writeHeader(name: WireText, value: WireText): unknown;
  /**
   * Sends the body and completes the response; `closeConnection` adds `Connection: close`. Bytes
   * are the caller's again once the call returns (a prebuilt answer is rewritten for the next
   * request): an engine that sends them later copies them first.
   */
  end(body: string | Uint8Array, closeConnection?: boolean): unknown;
  /** Completes a response to HEAD. */
  endWithoutBody(): unknown;
  /**
   * Streams part of a body whose length is not known (chunked), after the status and headers;
   * `end('')` completes it. False when the engine holds bytes back (backpressure): write no more
   * until {@link onWritable}'s handler runs. Only on engines that stream (both adapters' GET);
   * the others answer a streamed route from a body gathered whole.
   */
  write?(chunk: string | Uint8Array): boolean;
  /** Runs `handler` when a stream held back by {@link write} can take more (return true: it did). */
  onWritable?(handler: () => boolean): unknown;
  /** Closes the connection at once: a streamed body that cannot be completed is cut, never ended as if whole. */
  close?(): unknown;
  /** Runs `write` with the socket corked: required by uWS outside the handler's synchronous part. */
  cork(write: () => void): unknown;
  /** Called once if the client goes away before the response is complete. */
  onAborted(handler: () => void): unknown;
  /**
   * Streams the request body; `isLast` marks the final chunk (empty for an empty body). A body
   * that does not arrive within REQUEST_TIMEOUT_MS (limits.ts) is answered 408 by the engine itself, or its connection
   * closed (docs/api.md §5); `onAborted`'s handler then runs, and no last chunk ever comes.
   */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): unknown;
  /**
   * The peer's IP address as text, as the engine spells it (uWS writes IPv6 out in full); see
   * `peerAddress` in `peer-address.ts` for one canonical form. Readable until the response ends.
   */
  getRemoteAddressAsText(): ArrayBuffer;
}

export type Handler = (res: EngineResponse, req: EngineRequest) => void;

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';

/** The listening socket of a started app. */
export interface Listener {
  readonly port: number;
  /** Stops accepting connections; open ones keep being served. */
  stopAccepting(): void;
  /** Closes every open connection. */
  closeConnections(): void;
}

/** A web server under construction: register every route, then listen once. */
export interface EngineApp {
  /**
   * A handler for one method on a pattern in OpenAPI form (`/api/role/{role}`). A parameter
   * matches one non-empty path segment; a static segment wins over a parameter.
   */
  on(method: Method, pattern: string, handler: Handler): void;
  /** Every other method on a pattern registered with {@link on} (405, CORS preflights). */
  otherMethods(pattern: string, handler: Handler): void;
  /** Every request no pattern matches (404). */
  fallback(handler: Handler): void;
  /** Rejects with a message naming the address when it cannot listen. */
  listen(host: string, port: number): Promise<Listener>;
}

export type EngineName = 'uws' | 'node';

/** An engine that can run here, chosen once at start-up. */
export interface Engine {
  readonly name: EngineName;
  /** Why this engine: one sentence for the start-up log line. */
  readonly reason: string;
  /** Run once in the primary before it forks the workers. */
  prepareCluster(): void;
  createApp(): EngineApp;
}
