import { STATUS_TEXT } from '../../errors/index.ts';
import { errorBody, requestIdOf } from '../reply.ts';
import type { EngineResponse } from './port.ts';

/**
 * The transport limits of CONTRACT.md §4, the same on both engines. Each engine enforces them
 * before (or around) the handlers, and answers them itself: they are about the request's
 * framing, not about any route.
 */
export const MAX_HEAD_BYTES = 16 * 1024;
export const MAX_URL_BYTES = 8 * 1024;
/** Headers, then the body, must each arrive within this long. */
export const REQUEST_TIMEOUT_MS = 10_000;

/** What an engine refuses by itself: the status and the envelope's `error`. */
export type Refusal = readonly [status: number, detail: string];

export const HEAD_TOO_LARGE: Refusal = [431, 'the request headers must be at most 16 KiB in all'];
export const URL_TOO_LONG: Refusal = [414, 'the URL (path and query) must be at most 8 KiB'];
export const LENGTH_CONFLICT: Refusal = [400, "the body's length must be given once: one Content-Length or Transfer-Encoding chunked, not both"];
export const TOO_SLOW: Refusal = [408, 'the request did not arrive within 10 s'];
export const NOT_HTTP: Refusal = [400, 'the request is not valid HTTP/1.1'];

/** A refusal as a complete raw HTTP/1.1 response that closes the connection. */
export function rawRefusal([status, detail]: Refusal, sentRequestId = ''): string {
  const body = errorBody(status, detail);
  return (
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}\r\nContent-Type: application/json\r\nVary: Origin\r\n` +
    `X-Request-Id: ${requestIdOf(sentRequestId)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** A refusal through an engine's response, inside its handler; the connection closes after it. */
export function refuse(res: EngineResponse, [status, detail]: Refusal, sentRequestId: string): void {
  res.writeStatus(`${status} ${STATUS_TEXT[status] ?? ''}`);
  res.writeHeader('Content-Type', 'application/json');
  // Answered before any route or CORS policy is looked at: cacheable by no origin's answer.
  res.writeHeader('Vary', 'Origin');
  res.writeHeader('X-Request-Id', requestIdOf(sentRequestId));
  res.end(errorBody(status, detail), true);
}
