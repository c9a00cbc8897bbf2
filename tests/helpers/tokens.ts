/**
 * Signed tokens (docs/api.md §3) as the token suites (tests/features/token*.test.ts) use them: the
 * secrets, the main server (two workers, so that a token must hold on every one of them), tokens
 * minted and remembered for the leak scan, clients and requests carrying them, and the answers
 * they get. `server` is set by the hooks {@link tokenServer} registers.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { RbacClient, type ApiResult } from '../../src/client/index.ts';
import { STATUS_TEXT, TIMESTAMP_RE } from './contract.ts';
import { rawRequest, type RawResult } from './raw-http.ts';
import { rememberSecret, startServer, type RunningServer } from './server.ts';
import { show } from './show.ts';

/** A random 48-character secret (36 random bytes, base64url). */
export const newSecret = (): string => randomBytes(36).toString('base64url');
export const SECRET = newSecret();
export const OTHER_SECRET = newSecret();
rememberSecret(OTHER_SECRET, 'AUTH_JWT_SECRET_KEY');

/** The short texts of the statuses the token suites meet beyond those of contract.ts. */
const MESSAGE: Readonly<Record<number, string>> = { ...STATUS_TEXT, 403: 'Forbidden', 501: 'Not implemented' };

export interface TokenData {
  token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

export let server: RunningServer;

/** Registers the hooks of the main server (with AUTH_JWT_SECRET_KEY, two workers) around the tests of the block it is called in. */
export function tokenServer(): void {
  before(async () => {
    server = await startServer({ env: { AUTH_JWT_SECRET_KEY: SECRET, AUTH_WORKERS: '2' } });
  });

  after(async () => {
    if (server !== undefined) assert.equal(await server.stop(), 0, `exit code after SIGTERM\n${server.output().slice(-2000)}`);
  });
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** `POST /api/token` as `c`; a token in the answer is remembered for the leak scan. */
export async function mint(c: RbacClient, body?: unknown, raw?: { rawBody: string; contentType: string }): Promise<ApiResult<TokenData>> {
  const res = await c.request<TokenData>('POST', '/api/token', raw ?? (body === undefined ? {} : { body }));
  const token: unknown = (res.data as { token?: unknown } | undefined)?.token;
  if (typeof token === 'string') rememberSecret(token, 'token');
  return res;
}

/** A token for `c`'s key; fails the test unless the answer is 201. */
export async function tokenFor(c: RbacClient, body?: { scope?: string; ttl_seconds?: number }): Promise<string> {
  const res = await mint(c, body);
  assert.equal(res.status, 201, `POST /api/token ${JSON.stringify(body ?? {})}: ${show(res)}`);
  assert.ok(res.data !== undefined && typeof res.data.token === 'string', show(res));
  return res.data.token;
}

/** A client of `server` (default: the main one) whose credential is `token`. */
export function withToken(token: string, on: RunningServer = server): RbacClient {
  rememberSecret(token);
  return new RbacClient({ baseUrl: on.baseUrl, key: token });
}

/** A request on a brand-new TCP connection (so the kernel picks the worker). */
export function fresh<T = unknown>(credential: string, method: string, path: string, body?: unknown): Promise<RawResult<T>> {
  rememberSecret(credential);
  return rawRequest<T>({ port: server.port, key: credential, method, path, ...(body === undefined ? {} : { body }), timeoutMs: 10_000 });
}

/** An error envelope of `status`, with its message, a detailed error and X-Authz-Revision when asked. */
export function expectError(res: ApiResult<unknown>, status: number, context = '', revision?: number): string {
  const where = `${context}: ${show(res)}`;
  assert.equal(res.status, status, where);
  const body = res.body as Record<string, unknown> | undefined;
  assert.ok(body !== undefined, `no JSON body; ${where}`);
  assert.equal(body.success, false, where);
  assert.equal(body.code, status, where);
  assert.equal(body.message, MESSAGE[status], where);
  assert.ok(typeof body.error === 'string' && body.error.length > 0, `no detailed error; ${where}`);
  assert.match(String(body.timestamp), TIMESTAMP_RE, where);
  assert.ok((res.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json'), where);
  if (revision !== undefined) assert.equal(res.revision, revision, `X-Authz-Revision; ${where}`);
  return body.error;
}

/** 401 with `WWW-Authenticate: Bearer`, and no part of the credential in the answer. */
export function expect401(res: ApiResult<unknown>, credential: string, context: string): void {
  expectError(res, 401, context);
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/i, `WWW-Authenticate; ${context}`);
  const answer = `${JSON.stringify(res.body)} ${[...res.headers].map(([k, v]) => `${k}: ${v}`).join(' ')}`;
  for (const part of credential.split('.').filter((p) => p.length >= 8)) {
    assert.ok(!answer.includes(part), `the answer contains part of the credential; ${context}`);
  }
}

export function expectRevisionHeader(res: ApiResult<unknown> | RawResult, context: string): number {
  assert.ok(
    res.revision !== undefined && Number.isInteger(res.revision) && res.revision >= 0,
    `X-Authz-Revision missing or not an integer; ${context}: ${show(res)}`,
  );
  return res.revision;
}

/** A client with a role `editors` granting `docs.write` to `alice`, and its revision (3). */
export async function seeded(): Promise<{ key: RbacClient; revision: number }> {
  const key = server.client();
  assert.equal((await key.createRole('editors', { description: 'can edit' })).status, 201);
  assert.equal((await key.grant('editors', 'docs.write')).status, 201);
  const added = await key.addMember('alice', 'editors');
  assert.equal(added.status, 201, show(added));
  return { key, revision: expectRevisionHeader(added, 'seeding') };
}

// The main server: two workers, so that a token must hold on every one of them. The tests that
