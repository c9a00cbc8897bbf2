import type { EngineResponse } from '../engine/port.ts';

export interface CorsPolicy {
  readonly enabled: boolean;
  /**
   * True with an origin list: answers then depend on the request's Origin, so every response
   * says `Vary: Origin` (whatever the origin, or none), lest a shared cache hand one origin's
   * answer to another.
   */
  readonly varyOnOrigin: boolean;
  /** The `Access-Control-Allow-Origin` value for an origin, or undefined when not allowed. */
  allowOrigin(origin: string): string | undefined;
}

/** The policy of AUTH_ALLOW_CORS and AUTH_CORS_ORIGINS (`*`, or a comma-separated list). */
export function corsPolicy(enabled: boolean, origins: string): CorsPolicy {
  const any = origins.trim() === '*';
  const allowed = new Set(origins.split(',').map((o) => o.trim().toLowerCase()));
  return {
    enabled,
    varyOnOrigin: enabled && !any,
    allowOrigin: (origin) => (!enabled || origin === '' ? undefined : any ? '*' : allowed.has(origin.toLowerCase()) ? origin : undefined),
  };
}

export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, X-Request-Id, X-Authz-Min-Revision, If-Match';
const CORS_EXPOSE_HEADERS = 'X-Request-Id, X-Authz-Revision, Retry-After, Allow';

/** `Vary: Origin` with an origin list, and the `Access-Control-*` headers of an allowed origin. */
export function writeCorsHeaders(res: EngineResponse, cors: CorsPolicy, origin: string): void {
  if (cors.varyOnOrigin) res.writeHeader('Vary', 'Origin');
  const allow = origin === '' ? undefined : cors.allowOrigin(origin);
  if (allow !== undefined) {
    res.writeHeader('Access-Control-Allow-Origin', allow);
    res.writeHeader('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
  }
}
