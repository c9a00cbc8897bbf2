import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { isTenantId } from '../authz/tenant.ts';

/** The `iss` of every token this service issues and accepts (docs/api.md §3). */
export const TOKEN_ISSUER = 'rbac-gateway';

export type TokenScope = 'read' | 'write';

/** What a verified token says. */
export interface TokenClaims {
  /** The client's hash (the `sub` claim). */
  readonly sub: string;
  readonly scope: TokenScope;
  readonly jti: string;
  /** Expiry, in milliseconds since the epoch. */
  readonly expiresAtMs: number;
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresIn: number;
  readonly scope: TokenScope;
}

/**
 * HS256 tokens with jose (docs/api.md §3). Verification accepts only HS256 with this secret and
 * issuer, and only the claims this service issues: `alg: none`, any other algorithm, a bad
 * signature, an expired token or an unknown scope are all refused (undefined). Keep the secret and
 * the tokens out of every log line and error.
 */
export class TokenAuthority {
  readonly #secret: Uint8Array;

  constructor(secret: string) {
    this.#secret = new TextEncoder().encode(secret);
  }

  async issue(sub: string, scope: TokenScope, ttlSeconds: number): Promise<IssuedToken> {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ scope })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(sub)
      .setIssuer(TOKEN_ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(randomUUID())
      .sign(this.#secret);
    return { token, expiresIn: ttlSeconds, scope };
  }

  /** The claims of a token this service issued and that is still valid, else undefined. */
  async verify(token: string): Promise<TokenClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.#secret, {
        algorithms: ['HS256'],
        issuer: TOKEN_ISSUER,
        requiredClaims: ['sub', 'scope', 'iat', 'exp', 'jti'],
        clockTolerance: 0,
      });
      const { sub, scope, jti, exp } = payload;
      if (!isTenantId(sub)) return undefined;
      if (scope !== 'read' && scope !== 'write') return undefined;
      if (typeof jti !== 'string' || jti === '' || typeof exp !== 'number') return undefined;
      return { sub, scope, jti, expiresAtMs: exp * 1000 };
    } catch {
      // Every way a token can be wrong is the same answer (401); which way is nobody's business.
      return undefined;
    }
  }
}
