/**
 * Revoking tokens (docs/api.md §3, DELETE /api/token/{jti}), black-box against the real service
 * with two workers: the answer's shape, who may revoke what (404 for an unknown or another
 * client's jti, 403 for a read token), the revoked token refused on every worker from the answer
 * on while every other credential goes on, the audit row, the revision left alone, and a restart.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { decodeJwt } from '../helpers/jwt.ts';
import { answeredBy } from '../helpers/raw-http.ts';
import { keyCredential, waitForRows } from '../helpers/audit.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';
import { SECRET, tokenFor, withToken, fresh, expectError, expect401, seeded, server, tokenServer } from '../helpers/tokens.ts';

const jtiOf = (token: string): string => String(decodeJwt(token).payload.jti);
const expOf = (token: string): number => Number(decodeJwt(token).payload.exp);

/** `exp` (seconds) as the answers write an instant: RFC 3339 UTC with six fractional digits. */
const instantOf = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** `GET /api/roles` with `credential` on `n` new connections: the statuses seen, and how many workers answered. */
async function onNewConnections(credential: string, n: number): Promise<{ statuses: Set<number>; workers: number }> {
  const statuses = new Set<number>();
  const workers = new Set<string>();
  for (let i = 0; i < n; i++) {
    const res = await fresh(credential, 'GET', '/api/roles');
    statuses.add(res.status);
    workers.add(answeredBy(res));
  }
  return { statuses, workers: workers.size };
}

describe('DELETE /api/token/{jti}, on two workers', () => {
  tokenServer();

  test('200 {jti, revoked_until}; from the answer on the token is 401 on every worker, every other credential works', async (t) => {
    const { key, revision } = await seeded();
    const revoked = await tokenFor(key, { scope: 'read', ttl_seconds: 3600 });
    const kept = await tokenFor(key, { scope: 'read', ttl_seconds: 3600 });
    const writer = await tokenFor(key);
    // Known (verified and remembered) on both workers before it is revoked.
    const before = await onNewConnections(revoked, 12);
    assert.deepEqual([...before.statuses], [200]);
    // A connection kept open across the revocation: its worker remembers the token too.
    const held = withToken(revoked);
    assert.equal((await held.listRoles()).status, 200);

    const res = await key.revokeToken(jtiOf(revoked));
    assert.equal(res.status, 200, show(res));
    assert.deepEqual(res.data, { jti: jtiOf(revoked), revoked_until: instantOf(expOf(revoked)) });
    const body = res.body as unknown as Record<string, unknown>;
    assert.equal(body.success, true);
    assert.equal(body.message, 'Token revoked');
    assert.equal(res.revision, revision, "a revocation does not move the client's revision");

    expect401(await held.listRoles(), revoked, 'the revoked token on a connection kept open');
    const after = await onNewConnections(revoked, 16);
    assert.deepEqual([...after.statuses], [401], 'the revoked token is refused on every new connection');
    t.diagnostic(`refused by ${after.workers} worker processes right after the answer`);
    expect401(await withToken(revoked).check([{ user: 'alice', permission: 'docs.write' }]), revoked, 'POST /api/check');

    const others = await onNewConnections(kept, 8);
    assert.deepEqual([...others.statuses], [200], 'another token of the client still works');
    assert.equal((await withToken(writer).createRole('after-revocation')).status, 201, 'a write token still writes');
    assert.equal((await key.listRoles()).status, 200, 'the key still works');
    assert.equal((await key.listRoles()).revision, revision + 1);

    // Revoking it again answers the same; the revoked token itself cannot revoke anything.
    const again = await key.revokeToken(jtiOf(revoked));
    assert.equal(again.status, 200, show(again));
    assert.deepEqual(again.data, res.data);
  });

  test('a write token of the client revokes; a read token is 403; an unknown or another client’s jti is 404', async () => {
    const key = server.client();
    assert.equal((await key.createRole('r')).status, 201);
    const writer = withToken(await tokenFor(key));
    const reader = withToken(await tokenFor(key, { scope: 'read' }));
    const target = await tokenFor(key, { scope: 'read' });

    const refused = await reader.revokeToken(jtiOf(target));
    expectError(refused, 403, 'a read token revokes', 1);
    assert.equal((await withToken(target).listRoles()).status, 200, 'a refused revocation revokes nothing');

    const unknown = randomUUID();
    const missing = await key.revokeToken(unknown);
    const error = expectError(missing, 404, 'an unknown jti', 1);
    assert.ok(error.includes(unknown), `the error names the jti: ${error}`);
    assert.equal((missing.body as { code?: unknown }).code, 404);

    const other = server.client();
    const theirs = await tokenFor(other);
    expectError(await key.revokeToken(jtiOf(theirs)), 404, "another client's token");
    expectError(await writer.revokeToken(jtiOf(theirs)), 404, "another client's token, by a write token");
    assert.equal((await withToken(theirs).listRoles()).status, 200, "the other client's token still works");

    const done = await writer.revokeToken(jtiOf(target));
    assert.equal(done.status, 200, show(done));
    expect401(await withToken(target).listRoles(), target, 'revoked by a write token of its client');
    expectError(await key.request('DELETE', '/api/token/not%20a%20jti'), 400, 'a jti outside the name rule');
  });

  test('audited as token.revoke, with its status; a 404 too', async () => {
    const key = server.client();
    const target = await tokenFor(key);
    const done = await key.revokeToken(jtiOf(target), { requestId: 'revoke-ok-1' });
    assert.equal(done.status, 200, show(done));
    const missing = await key.revokeToken('no-such-token', { requestId: 'revoke-missing-1' });
    assert.equal(missing.status, 404);
    const rows = await waitForRows(key, ['revoke-ok-1', 'revoke-missing-1']);
    const ok = rows.find((r) => r.request_id === 'revoke-ok-1');
    const failed = rows.find((r) => r.request_id === 'revoke-missing-1');
    assert.deepEqual(
      { action: ok?.action, resource: ok?.resource, status: ok?.status, credential: ok?.credential, revision: ok?.revision },
      { action: 'token.revoke', resource: `/api/token/${jtiOf(target)}`, status: 200, credential: keyCredential(key.key as string), revision: undefined },
    );
    assert.deepEqual({ action: failed?.action, status: failed?.status }, { action: 'token.revoke', status: 404 });
  });
});

test('a revoked token stays refused after a restart; the others still work', async (t) => {
  const tmp = tempDir('rbac-revoke-');
  t.after(tmp.cleanup);
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  const env = { AUTH_JWT_SECRET_KEY: SECRET, AUTH_WORKERS: '2' };
  const first = await startServer({ sqlitePath, env });
  t.after(() => first.kill());
  const key = first.client();
  assert.equal((await key.createRole('kept')).status, 201);
  const revoked = await tokenFor(key, { ttl_seconds: 3600 });
  const kept = await tokenFor(key, { ttl_seconds: 3600 });
  assert.equal((await key.revokeToken(jtiOf(revoked))).status, 200);
  assert.equal(await first.stop(), 0);

  const second = await startServer({ sqlitePath, env });
  t.after(() => second.kill());
  for (let i = 0; i < 8; i++) {
    expect401(await withToken(revoked, second).listRoles(), revoked, `after a restart, request ${i}`);
    assert.equal((await withToken(kept, second).listRoles()).status, 200, `another token after a restart, request ${i}`);
  }
  assert.equal(await second.stop(), 0);
});
