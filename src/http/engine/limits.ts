import { appError, STATUS_TEXT, type AppError } from '../../errors/index.ts';
import type { EngineResponse } from './port.ts';
import { errorBody, RequestIds } from './wire.ts';

/**
 * The transport limits of docs/api.md §5, the same on both engines, and written only here (the
 * refusals below put them in their texts). Each engine enforces them before (or around) the
 * handlers, and answers them itself: they are about the request's framing, not about any route.
 */
export const MAX_HEAD_BYTES = 16 * 1024;
export const MAX_URL_BYTES = 8 * 1024;
/** Headers, then the body, must each arrive within this long. */
export const REQUEST_TIMEOUT_MS = 10_000;

/** What an engine refuses by itself: an error of the catalogue (status and the envelope's `error`). */
export type Refusal = AppError;

export const HEAD_TOO_LARGE: Refusal = appError('ERR_HTTP_HEAD_TOO_LARGE', { maxKiB: MAX_HEAD_BYTES / 1024 });
export const URL_TOO_LONG: Refusal = appError('ERR_HTTP_URL_TOO_LONG', { maxKiB: MAX_URL_BYTES / 1024 });
export const LENGTH_CONFLICT: Refusal = appError('ERR_HTTP_LENGTH_CONFLICT');
export const TOO_SLOW: Refusal = appError('ERR_HTTP_REQUEST_TIMEOUT', { seconds: REQUEST_TIMEOUT_MS / 1000 });
export const NOT_HTTP: Refusal = appError('ERR_HTTP_NOT_HTTP');

/**
 * Answers the refusals of one engine app: each app has its own, so the ids it makes up for
 * requests that sent none are its own too.
 */
export class Refusals {
  readonly #ids = new RequestIds();

  /** A refusal as a complete raw HTTP/1.1 response that closes the connection. */
  raw(refusal: Refusal, sentRequestId = ''): string {
    const { status, message } = refusal;
    const body = errorBody(status, message);
    return (
      `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}\r\nContent-Type: application/json\r\nVary: Origin\r\n` +
      `X-Request-Id: ${this.#ids.of(sentRequestId)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
    );
  }

  /** A refusal through an engine's response, inside its handler; the connection closes after it. */
  refuse(res: EngineResponse, refusal: Refusal, sentRequestId: string): void {
    const { status, message } = refusal;
    res.writeStatus(`${status} ${STATUS_TEXT[status] ?? ''}`);
    res.writeHeader('Content-Type', 'application/json');
    // Answered before any route or CORS policy is looked at: cacheable by no origin's answer.
    res.writeHeader('Vary', 'Origin');
    res.writeHeader('X-Request-Id', this.#ids.of(sentRequestId));
    res.end(errorBody(status, message), true);
  }
}
