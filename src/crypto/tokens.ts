import { createHash, randomUUID } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
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
  readonly jti: string;
  /** Expiry (the `exp` claim), in milliseconds since the epoch. */
  readonly expiresAtMs: number;
}

/** A secret's key id, the `kid` header of the tokens it signs: the first 16 hex of its SHA-256 (docs/api.md §3). */
export function keyIdOf(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16);
}

/**
 * HS256 tokens with jose (docs/api.md §3). One secret signs, and its tokens carry its key id
 * (`kid`); older secrets (AUTH_JWT_PREVIOUS_SECRET_KEYS) only verify, so that a secret can be
 * rotated without logging every caller out. Verification accepts only HS256 with a known secret
 * and this issuer, and only the claims this service issues: `alg: none`, any other algorithm, a bad
 * signature, an unknown `kid`, an expired token or an unknown scope are all refused (undefined).
 * Keep the secrets and the tokens out of every log line and error.
 */
export class TokenAuthority {
  readonly #secret: Uint8Array;
  readonly #kid: string;
  /** Every secret that verifies, by key id: the signing one first. */
  readonly #byKid = new Map<string, Uint8Array>();

  constructor(secret: string, previous: readonly string[] = []) {
    const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
    this.#secret = encode(secret);
    this.#kid = keyIdOf(secret);
    for (const s of [secret, ...previous]) if (!this.#byKid.has(keyIdOf(s))) this.#byKid.set(keyIdOf(s), encode(s));
  }

  async issue(sub: string, scope: TokenScope, ttlSeconds: number): Promise<IssuedToken> {
    const now = Math.floor(Date.now() / 1000);
    const jti = randomUUID();
    const token = await new SignJWT({ scope })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: this.#kid })
      .setSubject(sub)
      .setIssuer(TOKEN_ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(jti)
      .sign(this.#secret);
    return { token, expiresIn: ttlSeconds, scope, jti, expiresAtMs: (now + ttlSeconds) * 1000 };
  }

  /**
   * The claims of a token this service issued and that is still valid, else undefined. The secret
   * is the one its `kid` names; a token without `kid` (issued before key ids) is tried against each.
   */
  async verify(token: string): Promise<TokenClaims | undefined> {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return undefined;
    }
    if (kid === undefined) {
      for (const secret of this.#byKid.values()) {
        const claims = await verifiedWith(token, secret);
        if (claims !== undefined) return claims;
      }
      return undefined;
    }
    const secret = typeof kid === 'string' ? this.#byKid.get(kid) : undefined;
    return secret === undefined ? undefined : verifiedWith(token, secret);
  }
}

/** The claims of `token` when `secret` signed it and it is valid now, else undefined. */
async function verifiedWith(token: string, secret: Uint8Array): Promise<TokenClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, secret, {
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
