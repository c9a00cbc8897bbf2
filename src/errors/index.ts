/**
 * The one catalogue of error codes. A failure anywhere in the service is an {@link AppError} with a
 * code from this table; the table decides the HTTP status, the short message and whether a retry
 * may help. Errors cross threads and processes as `{code, message}` and are rebuilt with
 * {@link fromWire}, never recognised by `instanceof` across that boundary.
 */

export interface ErrorSpec {
  readonly status: number;
  readonly retryable: boolean;
}

export const ERRORS = {
  ERR_HTTP_NOT_FOUND: { status: 404, retryable: false },
  ERR_HTTP_METHOD_NOT_ALLOWED: { status: 405, retryable: false },
  ERR_HTTP_BODY_TOO_LARGE: { status: 413, retryable: false },
  ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false },
  ERR_AUTH_UNAUTHENTICATED: { status: 401, retryable: false },
  ERR_VALIDATION_NAME: { status: 400, retryable: false },
  ERR_VALIDATION_QUERY: { status: 400, retryable: false },
  ERR_VALIDATION_HEADER: { status: 400, retryable: false },
  ERR_VALIDATION_BODY: { status: 400, retryable: false },
  ERR_VALIDATION_CURSOR: { status: 400, retryable: false },
  ERR_AUTHZ_ROLE_NOT_FOUND: { status: 404, retryable: false },
  ERR_AUTHZ_ROLE_EXISTS: { status: 409, retryable: false },
  ERR_AUTHZ_GRANT_EXISTS: { status: 409, retryable: false },
  ERR_AUTHZ_GRANT_NOT_FOUND: { status: 404, retryable: false },
  ERR_AUTHZ_MEMBERSHIP_EXISTS: { status: 409, retryable: false },
  ERR_AUTHZ_MEMBERSHIP_NOT_FOUND: { status: 404, retryable: false },
  ERR_CONSISTENCY_REVISION_TIMEOUT: { status: 503, retryable: true },
  ERR_STORE_UNAVAILABLE: { status: 503, retryable: true },
  ERR_STORE_COMMIT_UNKNOWN: { status: 503, retryable: false },
  ERR_STORE_CONFLICT: { status: 503, retryable: true },
  ERR_INTERNAL: { status: 500, retryable: false },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Short text of each status, used as the envelope's `message`. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  400: 'Bad request',
  401: 'Unauthorized',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'Request timeout',
  409: 'Conflict',
  413: 'Payload too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  431: 'Request header fields too large',
  500: 'Internal server error',
  503: 'Service unavailable',
};

/** A failure with a catalogued code; `message` is the detailed text shown as the envelope's `error`. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    const spec: ErrorSpec = ERRORS[code];
    this.status = spec.status;
    this.retryable = spec.retryable;
  }
}

/** The plain form an error takes across a thread or process boundary. */
export interface WireError {
  code: string;
  message: string;
}

export function toWire(err: unknown): WireError {
  if (err instanceof AppError) return { code: err.code, message: err.message };
  return { code: 'ERR_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code);
}

/** Rebuilds an {@link AppError} from its wire form; unknown codes become ERR_INTERNAL. */
export function fromWire(wire: WireError): AppError {
  return new AppError(isErrorCode(wire.code) ? wire.code : 'ERR_INTERNAL', wire.message);
}
