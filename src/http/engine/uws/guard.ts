import type * as Uws from 'uWebSockets.js';
import type { EngineResponse, Handler, WireText } from '../port.ts';
import { HeadResponse } from './head-response.ts';
import {
  HEAD_TOO_LARGE,
  LENGTH_CONFLICT,
  MAX_HEAD_BYTES,
  MAX_URL_BYTES,
  REQUEST_TIMEOUT_MS,
  TOO_SLOW,
  URL_TOO_LONG,
  type Refusal,
  type Refusals,
} from '../limits.ts';

/*
 * What uWS does by itself, and what is left to this file. Its parser refuses, before any handler
 * runs: a request with both Content-Length and Transfer-Encoding, a Content-Length that is not
 * plain digits, a request without Host, and (20.5x) HTTP/1.0 and a head over
 * UWS_HTTP_MAX_HEADERS_SIZE (set by index.ts as it loads the library). The bundled 20.30 build
 * (uWebSockets v20.43) closes those without an answer, reads no UWS_HTTP_MAX_HEADERS_SIZE (a head
 * that spans several reads is closed past 4 KiB, one that arrives in one read is not limited up
 * to its 512 KiB receive buffer) and does not answer HTTP/1.0; the 20.5x releases answer them
 * with their own short HTML page and close. With a repeated Content-Length it takes the first.
 * Neither checks the two bytes after a chunk's data, so a chunk shorter than declared is not
 * seen. 20.30 closes a connection whose head is not complete 8 to 12 s after it opened or after
 * its last answer (partial heads do not reset that timer; it ticks every 4 s); 20.5x resets it
 * on every byte and closes after about 30 s. Both close a body that arrives slower than 16 KiB/s
 * (the same granularity).
 * So the head's size, the URL's and a repeated Content-Length are checked here, on every route
 * (about 0.35 µs a request with a handful of headers), a body gets a 10 s deadline with a 408,
 * and an answer to HEAD never carries a body (head-response.ts).
 */

/**
 * How a route's requests reach its handler: `bare` (GET: the native objects, the hot path),
 * `body` (POST, DELETE: a deadline on the body), `head` (HEAD: never a body in the answer), or
 * `any` (every other method, and unknown paths: told apart per request).
 */
export type Exposure = 'bare' | 'body' | 'head' | 'any';

/** How often the bodies being read are checked against their deadline: a 408 comes 10 to 10.25 s after the body was asked for. */
const SWEEP_MS = 250;

/**
 * The bodies of one app being read, by when they were asked for. One sweep every {@link SWEEP_MS}
 * answers those past REQUEST_TIMEOUT_MS: a timer per request would cost every POST a timer's
 * creation and cancellation. The sweep runs only while a body is being read.
 */
export class BodyDeadlines {
  readonly #open = new Map<DeadlineResponse, number>();
  #sweeper: NodeJS.Timeout | undefined;

  start(body: DeadlineResponse): void {
    this.#open.set(body, performance.now());
    this.#sweeper ??= setInterval(this.#sweep, SWEEP_MS).unref();
  }

  stop(body: DeadlineResponse): void {
    this.#open.delete(body);
  }

  readonly #sweep = (): void => {
    const now = performance.now();
    // In the order they started: the first one not yet due ends the sweep.
    for (const [body, since] of this.#open) {
      if (now - since < REQUEST_TIMEOUT_MS) break;
      this.#open.delete(body);
      body.expire();
    }
    if (this.#open.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  };
}

/** The handler with the transport checks of its head in front, and what its method needs. */
export function guarded(
  handler: Handler,
  exposure: Exposure,
  refusals: Refusals,
  deadlines: BodyDeadlines,
): (res: Uws.HttpResponse, req: Uws.HttpRequest) => void {
  return (res, req) => {
    const problem = headProblem(req);
    const head = exposure === 'head' || (exposure === 'any' && req.getMethod() === 'head');
    if (problem !== undefined) return refusals.refuse(head ? new HeadResponse(res) : res, problem, req.getHeader('x-request-id'));
    if (head) return handler(new HeadResponse(res), req);
    handler(exposure === 'body' ? new DeadlineResponse(res, req.getHeader('x-request-id'), refusals, deadlines) : res, req);
  };
}

/** Sums of the head being walked by {@link countHeader}: module state, so the walk allocates no closure per request. */
const walk = { size: 0, lengths: 0 };

function countHeader(name: string, value: string): void {
  walk.size += name.length + value.length;
  if (name === 'content-length') walk.lengths++;
}

/** What the request's head breaks of the transport limits, if anything. */
function headProblem(req: Uws.HttpRequest): Refusal | undefined {
  const query = req.getQuery() as string | undefined;
  let url = req.getUrl().length + (query === undefined ? 0 : query.length + 1);
  // Characters, not bytes: only a URL long enough to pass the limit in UTF-8 is counted in bytes.
  if (url * 3 > MAX_URL_BYTES) url = Buffer.byteLength(req.getUrl()) + (query === undefined ? 0 : Buffer.byteLength(query) + 1);
  walk.size = url;
  walk.lengths = 0;
  req.forEach(countHeader);
  if (walk.size > MAX_HEAD_BYTES) return HEAD_TOO_LARGE;
  if (url > MAX_URL_BYTES) return URL_TOO_LONG;
  // Identical copies too, as node:http refuses them: two framings of one request are never needed.
  if (walk.lengths > 1) return LENGTH_CONFLICT;
  return undefined;
}

/**
 * The native response, plus the body's deadline: once the body has been asked for, it has
 * REQUEST_TIMEOUT_MS to arrive, else 408 and the connection closes, and the handler hears of it
 * through its `onAborted` (as when uWS itself closes a slow body first). Nothing is written to
 * the native response once it is complete or gone: uWS throws on a discarded response.
 */
class DeadlineResponse implements EngineResponse {
  readonly #res: Uws.HttpResponse;
  readonly #sentRequestId: string;
  readonly #refusals: Refusals;
  readonly #deadlines: BodyDeadlines;
  #onAborted: (() => void) | undefined;
  #watching = false;
  #over = false;
  /** Whether the body's deadline runs (from its first read to its last chunk). */
  #timed = false;

  constructor(res: Uws.HttpResponse, sentRequestId: string, refusals: Refusals, deadlines: BodyDeadlines) {
    this.#res = res;
    this.#sentRequestId = sentRequestId;
    this.#refusals = refusals;
    this.#deadlines = deadlines;
  }

  writeStatus(status: WireText): this {
    if (!this.#over) this.#res.writeStatus(status);
    return this;
  }

  writeHeader(name: WireText, value: WireText): this {
    if (!this.#over) this.#res.writeHeader(name, value);
    return this;
  }

  end(body: string | Uint8Array, closeConnection?: boolean): this {
    if (this.#finish()) this.#res.end(body, closeConnection);
    return this;
  }

  endWithoutBody(): this {
    if (this.#finish()) this.#res.endWithoutBody();
    return this;
  }

  cork(write: () => void): this {
    if (!this.#over) this.#res.cork(write);
    return this;
  }

  onAborted(handler: () => void): this {
    this.#onAborted = handler;
    this.#watch();
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.#watch();
    if (!this.#timed) {
      this.#timed = true;
      this.#deadlines.start(this);
    }
    this.#res.onData((chunk, isLast) => {
      if (this.#over) return;
      if (isLast) this.#deadlines.stop(this);
      handler(chunk, isLast);
    });
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return this.#res.getRemoteAddressAsText();
  }

  /** Marks the response complete; false if it already was (or is gone). */
  #finish(): boolean {
    if (this.#over) return false;
    this.#over = true;
    this.#deadlines.stop(this);
    return true;
  }

  /** uWS allows one abort handler per response: this one, which passes the news on. */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    this.#res.onAborted(() => {
      const told = this.#over; // by expire, which has passed the news on already
      this.#over = true;
      this.#deadlines.stop(this);
      if (!told) this.#onAborted?.();
    });
  }

  /** The body's deadline passed: 408 and the connection closes (called by {@link BodyDeadlines}). */
  expire(): void {
    if (this.#over) return;
    this.#over = true;
    this.#res.cork(() => this.#refusals.refuse(this.#res, TOO_SLOW, this.#sentRequestId));
    this.#onAborted?.();
  }
}
