/**
 * The one catalogue of error codes. A failure anywhere in the service is an {@link AppError} with a
 * code from this table; the table decides the HTTP status, the detailed text (the envelope's
 * `error`) and whether a retry may help. Errors cross threads and processes as `{code, message}`
 * and are rebuilt with {@link fromWire}, never recognised by `instanceof` across that boundary.
 */

export interface ErrorSpec {
  readonly status: number;
  /** Whether the same call, made again later, may succeed (the store retries these). */
  readonly retryable: boolean;
  /** The detailed text from the code's parameters (see {@link appError}). */
  readonly message: (...params: never[]) => string;
}

/** For codes whose text varies with the case (which body key, which rule): the caller words it. */
const free = (detail: string): string => detail;

interface RoleParams {
  readonly role: string;
}
interface GrantParams {
  readonly role: string;
  readonly permission: string;
}
interface MembershipParams {
  readonly user: string;
  readonly role: string;
}
interface RouteParams {
  readonly method: string;
  readonly url: string;
}

export const ERRORS = {
  ERR_HTTP_NOT_FOUND: { status: 404, retryable: false, message: (p: RouteParams) => `no route ${p.method} ${p.url}` },
  ERR_HTTP_CONSOLE_NOT_BUILT: {
    status: 404,
    retryable: false,
    message: () => 'the console is not built here: `npm run build` writes it to dist/console/ (docs/console.md)',
  },
  ERR_HTTP_METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    message: (p: RouteParams & { readonly allow: string }) => `${p.method} is not allowed on ${p.url}; allowed: ${p.allow}`,
  },
  ERR_HTTP_BODY_TOO_LARGE: { status: 413, retryable: false, message: (p: { readonly maxBytes: number }) => `body must be at most ${p.maxBytes} bytes` },
  ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: () => 'body must be sent with Content-Type application/json' },
  /**
   * Transport refusals (docs/api.md §5): answered by the engine itself, before any route runs.
   * The figures are the engine's limits (http/engine/limits.ts), given as parameters.
   */
  ERR_HTTP_HEAD_TOO_LARGE: {
    status: 431,
    retryable: false,
    message: (p: { readonly maxKiB: number }) => `the request headers must be at most ${p.maxKiB} KiB in all`,
  },
  ERR_HTTP_URL_TOO_LONG: {
    status: 414,
    retryable: false,
    message: (p: { readonly maxKiB: number }) => `the URL (path and query) must be at most ${p.maxKiB} KiB`,
  },
  ERR_HTTP_LENGTH_CONFLICT: {
    status: 400,
    retryable: false,
    message: () => "the body's length must be given once: one Content-Length or Transfer-Encoding chunked, not both",
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, retryable: false, message: (p: { readonly seconds: number }) => `the request did not arrive within ${p.seconds} s` },
  ERR_HTTP_NOT_HTTP: { status: 400, retryable: false, message: () => 'the request is not valid HTTP/1.1' },
  ERR_AUTH_UNAUTHENTICATED: {
    status: 401,
    retryable: false,
    message: () => 'a valid client key or token is required as Authorization: Bearer <credential>',
  },
  ERR_AUTH_READ_SCOPE: {
    status: 403,
    retryable: false,
    message: () => "a token of scope 'read' may only read: GET routes and POST /api/check",
  },
  ERR_AUTH_TOKEN_CANNOT_MINT: { status: 403, retryable: false, message: () => 'tokens are issued to client keys only: a token cannot mint tokens' },
  ERR_AUTH_TOKENS_OFF: {
    status: 501,
    retryable: false,
    message: () => 'token issuance is off: the service has no AUTH_JWT_SECRET_KEY configured',
  },
  /** DELETE /api/token/{jti} of a token this client was not issued, or that expired (docs/api.md §3). */
  ERR_AUTH_TOKEN_NOT_FOUND: {
    status: 404,
    retryable: false,
    message: (p: { readonly jti: string }) => `Token '${p.jti}' was not issued to this client or has expired`,
  },
  ERR_VALIDATION_NAME: { status: 400, retryable: false, message: free },
  ERR_VALIDATION_QUERY: { status: 400, retryable: false, message: free },
  ERR_VALIDATION_HEADER: { status: 400, retryable: false, message: free },
  ERR_VALIDATION_BODY: { status: 400, retryable: false, message: free },
  ERR_VALIDATION_CURSOR: { status: 400, retryable: false, message: () => 'cursor is not a valid cursor of this list' },
  ERR_AUTHZ_ROLE_NOT_FOUND: { status: 404, retryable: false, message: (p: RoleParams) => `Role '${p.role}' does not exist` },
  ERR_AUTHZ_ROLE_EXISTS: { status: 409, retryable: false, message: (p: RoleParams) => `Role '${p.role}' already exists` },
  ERR_AUTHZ_GRANT_EXISTS: {
    status: 409,
    retryable: false,
    message: (p: GrantParams) => `Permission '${p.permission}' is already granted to role '${p.role}'`,
  },
  ERR_AUTHZ_GRANT_NOT_FOUND: {
    status: 404,
    retryable: false,
    message: (p: GrantParams) => `Permission '${p.permission}' is not granted to role '${p.role}'`,
  },
  ERR_AUTHZ_MEMBERSHIP_EXISTS: {
    status: 409,
    retryable: false,
    message: (p: MembershipParams) => `User '${p.user}' is already a member of role '${p.role}'`,
  },
  ERR_AUTHZ_MEMBERSHIP_NOT_FOUND: {
    status: 404,
    retryable: false,
    message: (p: MembershipParams) => `User '${p.user}' is not a member of role '${p.role}'`,
  },
  /** If-Match named a revision the client is no longer (or not yet) at (docs/api.md §12.4). */
  ERR_CONSISTENCY_PRECONDITION_FAILED: {
    status: 412,
    retryable: false,
    message: (p: { readonly expected: number; readonly current: number }) => `If-Match "${p.expected}" does not match the current revision ${p.current}`,
  },
  ERR_WORKFLOW_SCHEDULE_NOT_FOUND: {
    status: 404,
    retryable: false,
    message: (p: { readonly workflow: string }) => `Workflow '${p.workflow}' has no schedule`,
  },
  ERR_WORKFLOW_WEBHOOK_REFUSED: { status: 400, retryable: false, message: free },
  /** A revision the database has not reached: no state can ever answer it, so it is the client's mistake. */
  ERR_CONSISTENCY_REVISION_AHEAD: {
    status: 400,
    retryable: false,
    message: (p: { readonly revision: number; readonly current: number }) =>
      `X-Authz-Min-Revision ${p.revision} is above the client's current revision ${p.current}; send a revision this service returned in X-Authz-Revision`,
  },
  ERR_AUTHZEN_NOT_CONFIGURED: {
    status: 404,
    retryable: false,
    message: () => 'no AuthZEN metadata: the service has no AUTH_AUTHZEN_BASE_URL configured',
  },
  ERR_CONSISTENCY_REVISION_TIMEOUT: {
    status: 503,
    retryable: true,
    message: (p: { readonly revision: number; readonly waitMs: number }) => `revision ${p.revision} was not reached within ${p.waitMs} ms`,
  },
  /** The database could not be reached, or gave up on the call, before anything committed. */
  ERR_STORE_UNAVAILABLE: { status: 503, retryable: true, message: free },
  /**
   * Refused without asking the database (its circuit is open). A 503 like ERR_STORE_UNAVAILABLE,
   * but not retried: the breaker has just decided that asking again now is pointless.
   */
  ERR_STORE_CIRCUIT_OPEN: {
    status: 503,
    retryable: false,
    message: (p: { readonly retryAfterMs: number }) => `the database is unavailable (circuit open, next attempt in ${Math.ceil(p.retryAfterMs / 1000)} s)`,
  },
  /** Never retried: the connection broke while committing, so the write may be in. */
  ERR_STORE_COMMIT_UNKNOWN: {
    status: 503,
    retryable: false,
    message: (p: { readonly what: string }) => `the connection to the database was lost while committing (${p.what}); the change may or may not be in`,
  },
  ERR_STORE_CONFLICT: {
    status: 503,
    retryable: true,
    message: (p: { readonly what: string; readonly reason: string }) => `the database aborted a concurrent transaction (${p.what}: ${p.reason})`,
  },
  /** Start-up: the database's names are stored otherwise than this process would (docs/operations.md §7). */
  ERR_STORE_ENCRYPTION_MISMATCH: { status: 500, retryable: false, message: (p: { readonly why: string }) => p.why },
  ERR_INTERNAL: { status: 500, retryable: false, message: free },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** The parameters of a code's message template. */
export type ErrorParams<C extends ErrorCode> = Parameters<(typeof ERRORS)[C]['message']>;

/** Short text of each status, used as the envelope's `message`. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'Request timeout',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Payload too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  431: 'Request header fields too large',
  500: 'Internal server error',
  501: 'Not implemented',
  503: 'Service unavailable',
};

/** A failure with a catalogued code; `message` is the detailed text shown as the envelope's `error`. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;

  /** `message` as given: prefer {@link appError}, which words it from the catalogue. */
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    const spec: ErrorSpec = ERRORS[code];
    this.status = spec.status;
    this.retryable = spec.retryable;
  }
}

/** The catalogued text of `code` for these parameters. */
export function errorMessage<C extends ErrorCode>(code: C, ...params: ErrorParams<C>): string {
  // One call site for every code: TypeScript cannot tie ERRORS[code] to ErrorParams<C> by itself.
  const template = ERRORS[code].message as (...p: ErrorParams<C>) => string;
  return template(...params);
}

/** An {@link AppError} worded by the catalogue: `appError('ERR_AUTHZ_ROLE_NOT_FOUND', { role })`. */
export function appError<C extends ErrorCode>(code: C, ...params: ErrorParams<C>): AppError {
  return new AppError(code, errorMessage(code, ...params));
}

/** The plain form an error takes across a thread or process boundary. */
export interface WireError {
  readonly code: ErrorCode;
  readonly message: string;
}

export function toWire(err: unknown): WireError {
  if (err instanceof AppError) return { code: err.code, message: err.message };
  return { code: 'ERR_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code);
}

/**
 * Rebuilds an {@link AppError} from its wire form; unknown codes become ERR_INTERNAL. The code is
 * checked, not trusted: the sender may be another build of the service.
 */
export function fromWire(wire: { readonly code: string; readonly message: string }): AppError {
  return new AppError(isErrorCode(wire.code) ? wire.code : 'ERR_INTERNAL', wire.message);
}
