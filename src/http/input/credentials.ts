import * as nodeCrypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { TenantId } from '../../authz/tenant.ts';
import type { TokenAuthority } from '../../crypto/tokens.ts';
import type { RevokedTokens } from './revoked-tokens.ts';

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** Three base64url parts: the shape of a compact JWS (jose judges the rest). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const MAX_REMEMBERED = 100_000;

/** Node 20.12+ hashes a short string in one call, without a Hash object per key (a third of the cost). */
const oneShot = (nodeCrypto as { hash?: typeof nodeCrypto.hash }).hash;
const sha256Hex: (text: string) => string =
  oneShot === undefined ? (text) => nodeCrypto.createHash('sha256').update(text).digest('hex') : (text) => oneShot('sha256', text, 'hex');

/**
 * Who is calling, once the credential is checked. One object per credential, remembered, so the
 * hot path allocates nothing for it.
 */
export interface Principal {
  readonly tenant: TenantId;
  /** A client key may do everything; a token what its scope allows (docs/api.md §3). */
  readonly scope: 'key' | 'read' | 'write';
  /** How audit rows name it: `key:<first 12 hex of the client hash>` or `token:<jti>`. */
  readonly credential: string;
  /** When it stops being valid (ms since the epoch); Infinity for a key. */
  readonly expiresAtMs: number;
  /**
   * True for a key whose client has certainly never written (the client index said so while the
   * request was read): its answers are the empty client's, without a cache look-up.
   */
  readonly neverWrote?: boolean;
}

/**
 * Turns an `Authorization` header into a {@link Principal}. Answers are remembered per header
 * value (least recently used first out past {@link MAX_REMEMBERED}, a token's entry expiring with
 * it), so a repeated key or token costs one look-up instead of a hash or a signature check, and a
 * key in steady use stays remembered however many others pass. Raw keys and tokens live only in this
 * process's memory; they are never stored, logged or echoed.
 */
export class Credentials {
  readonly #known = new LRUCache<string, Principal>({ max: MAX_REMEMBERED });
  readonly #tokens: TokenAuthority | undefined;
  readonly #mayExist: (tenant: TenantId) => boolean;
  /**
   * The last header answered from memory and its principal: a caller sends one key on every
   * request, so most look-ups end here with one string compare, before the LRU's bookkeeping.
   */
  #lastHeader = '';
  #lastPrincipal: Principal | undefined;

  /**
   * `tokens`: the verifier of signed tokens, when the service has a secret for them. `mayExist`:
   * false for a client that has certainly never written; its key is not remembered, so a flood
   * of random keys does not churn the map (and push real clients' keys out of it).
   */
  readonly #revoked: RevokedTokens | undefined;

  /**
   * `revoked`: the tokens revoked (docs/api.md §3). A token is looked up there when it is
   * verified, and forgotten from memory when it is revoked, so that a key, or a token in steady
   * use, pays nothing for revocation.
   */
  constructor(tokens: TokenAuthority | undefined, mayExist: (tenant: TenantId) => boolean = () => true, revoked?: RevokedTokens) {
    this.#tokens = tokens;
    this.#mayExist = mayExist;
    this.#revoked = revoked;
    revoked?.onRevoked((jti) => this.#forget(`token:${jti}`));
  }

  /** The principal of a client key, or of a token verified before and still valid; else undefined. */
  known(header: string): Principal | undefined {
    const last = this.#lastPrincipal;
    if (header === this.#lastHeader && last !== undefined && (last.expiresAtMs === Infinity || last.expiresAtMs > Date.now())) return last;
    const known = this.#known.get(header);
    if (known !== undefined) {
      if (known.expiresAtMs === Infinity || known.expiresAtMs > Date.now()) return this.#memo(header, known);
      this.#known.delete(header);
      return undefined;
    }
    const key = bearer(header);
    if (key === undefined || !isUuidV4(key)) return undefined;
    const tenant = tenantOfKey(key);
    return this.#mayExist(tenant) ? this.#remember(header, new KeyPrincipal(tenant, false)) : new KeyPrincipal(tenant, true);
  }

  /** Whether the header holds something shaped like a token that {@link verify} should judge. */
  mayBeToken(header: string): boolean {
    const credential = bearer(header);
    return this.#tokens !== undefined && credential !== undefined && JWT_SHAPE.test(credential);
  }

  /** The principal of a token (checked by jose, then remembered), or undefined when it is not valid. */
  async verify(header: string): Promise<Principal | undefined> {
    const token = bearer(header);
    if (this.#tokens === undefined || token === undefined) return undefined;
    const claims = await this.#tokens.verify(token);
    if (claims === undefined || this.#revoked?.has(claims.jti) === true) return undefined;
    // The sub of a token this service signed is a key's hash (TokenAuthority checked its form).
    const tenant = claims.sub as TenantId;
    return this.#remember(header, { tenant, scope: claims.scope, credential: `token:${claims.jti}`, expiresAtMs: claims.expiresAtMs });
  }

  /** Forgets every header remembered for the token named `credential` (rare: a revocation). */
  #forget(credential: string): void {
    const headers: string[] = [];
    for (const [header, principal] of this.#known.entries()) if (principal.scope !== 'key' && principal.credential === credential) headers.push(header);
    for (const header of headers) this.#known.delete(header);
    if (this.#lastPrincipal?.credential === credential) {
      this.#lastHeader = '';
      this.#lastPrincipal = undefined;
    }
  }

  #remember(header: string, principal: Principal): Principal {
    this.#known.set(header, principal);
    return this.#memo(header, principal);
  }

  #memo(header: string, principal: Principal): Principal {
    this.#lastHeader = header;
    this.#lastPrincipal = principal;
    return principal;
  }
}

/**
 * The principal of a client key. Its audit name is made when an audit row asks for it: a flood of
 * unknown keys (each a principal of its own, never remembered) does not pay for it.
 */
class KeyPrincipal implements Principal {
  readonly tenant: TenantId;
  readonly scope = 'key';
  readonly expiresAtMs = Infinity;
  readonly neverWrote: boolean;

  constructor(tenant: TenantId, neverWrote: boolean) {
    this.tenant = tenant;
    this.neverWrote = neverWrote;
  }

  get credential(): string {
    return `key:${this.tenant.slice(0, 12)}`;
  }
}

/** Hex digits by character code: 1 for 0-9, a-f and A-F. */
const HEX = new Uint8Array(128);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Whether `key` is a UUID version 4 in any case: {@link UUID_V4}'s answer, one pass without a regular expression. */
export function isUuidV4(key: string): boolean {
  if (key.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = key.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false;
    } else if (c >= 128 || HEX[c] !== 1) return false;
  }
  const variant = key.charCodeAt(19) | 0x20;
  return key.charCodeAt(14) === 52 && (variant === 97 || variant === 98 || variant === 56 || variant === 57);
}

/** Tenant id of a client key: the hex SHA-256 of its canonical (lower-case) form. */
export function tenantOfKey(key: string): TenantId {
  // The one place a key becomes a TenantId: its hash is what the brand stands for.
  return sha256Hex(key.toLowerCase()) as TenantId;
}

/** Character codes of `bearer`: the scheme is matched in any case by setting the 0x20 bit. */
const BEARER = [98, 101, 97, 114, 101, 114];

/** Whether a character code is printable ASCII other than space: a credential's ends need no trim. */
const plain = (c: number): boolean => c > 32 && c < 127;

/** The credential of `Bearer <credential>` (scheme in any case, one or more spaces), else undefined. */
export function bearer(header: string): string | undefined {
  const n = header.length;
  if (n < 8 || header.charCodeAt(6) !== 32) return undefined;
  for (let i = 0; i < 6; i++) if ((header.charCodeAt(i) | 0x20) !== BEARER[i]) return undefined;
  // The common case, nothing to trim, costs one slice; anything else is trimmed as String#trim does.
  if (plain(header.charCodeAt(7)) && plain(header.charCodeAt(n - 1))) return header.slice(7);
  const credential = header.slice(7).trim();
  return credential === '' ? undefined : credential;
}
