/**
 * Hand-made JWTs for black-box tests of token verification (docs/api.md §3), built with node:crypto
 * only, so that what the service accepts is pinned independently of the library it signs with.
 */
import { createHash, createHmac } from 'node:crypto';

export type JsonObject = Record<string, unknown>;

export const b64url = (value: JsonObject | string): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** The HMAC of each JWS algorithm name (`none` and unknown names sign nothing). */
const HMAC: Readonly<Record<string, string>> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' };

/**
 * `header.payload.signature`, the signature an HMAC of `header.payload` with `secret` under the
 * header's `alg` (or under `signAs` when given, to make a header lie about its algorithm).
 */
export function signJwt(header: JsonObject, payload: JsonObject, secret: string, signAs?: string): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  const hash = HMAC[signAs ?? String(header.alg)];
  return `${input}.${hash === undefined ? '' : createHmac(hash, secret).update(input).digest('base64url')}`;
}

/** Header and claims of a token, decoded without verifying anything. */
export function decodeJwt(token: string): { header: JsonObject; payload: JsonObject; signature: string } {
  const [h, p, signature, ...rest] = token.split('.');
  if (h === undefined || p === undefined || signature === undefined || rest.length > 0) throw new Error(`not a JWS compact token: ${token.slice(0, 12)}…`);
  const part = (s: string): JsonObject => JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as JsonObject;
  return { header: part(h), payload: part(p), signature };
}

/** Whether `token` carries a valid HS256 signature by `secret`. */
export function hs256Valid(token: string, secret: string): boolean {
  const dot = token.lastIndexOf('.');
  return createHmac('sha256', secret).update(token.slice(0, dot)).digest('base64url') === token.slice(dot + 1);
}

/** The token with its payload replaced (re-encoded) and its original signature kept. */
export function withPayload(token: string, payload: JsonObject): string {
  const [h, , s] = token.split('.');
  return `${h}.${b64url(payload)}.${s}`;
}

/** The client's hash a token's `sub` must be: lower-case hex SHA-256 of the lower-cased key. */
export const subOf = (key: string): string => createHash('sha256').update(key.toLowerCase()).digest('hex');
