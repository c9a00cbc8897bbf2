/**
 * Export and import of one client (CONTRACT §13.1) against the real server: the export's format,
 * order and windows; a round trip into a fresh client answers every read alike; merge and replace
 * and their counts; every bad body refused (400 naming the line, 413, 415) with nothing changed;
 * an import that changes nothing takes no revision; If-Match; a dry run stores nothing; a large
 * export streams while another client's checks keep being answered.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RbacClient } from '../../src/client/index.ts';
import { answersMatchTheDocument, contractServer } from '../helpers/contract-suite.ts';
import { expectErr, expectOk, seedRole } from '../helpers/envelopes.ts';
import { expectPreconditionFailed } from '../helpers/windows.ts';

const MAX_IMPORT = 64 * 1024;
const api = contractServer({ env: { AUTH_IMPORT_MAX_BYTES: String(MAX_IMPORT) } });
const { fresh } = api;

const LATER = '2031-06-01T09:00:00.000000Z';
const LATEST = '2032-01-01T00:00:00.000000Z';

async function lines(c: RbacClient): Promise<string[]> {
  const out: string[] = [];
  for await (const line of c.exportClient()) out.push(line);
  return out;
}

/** The export without its header line, as objects. */
async function body(c: RbacClient): Promise<unknown[]> {
  return (await lines(c)).slice(1).map((l) => JSON.parse(l) as unknown);
}

/** Revision 8: roles `b` and `a` (described), grants with a window, a pending membership. */
async function seeded(): Promise<RbacClient> {
  const c = fresh();
  expectOk(await c.createRole('b', { description: 'Bees' }), 201);
  expectOk(await c.createRole('a'), 201);
  expectOk(await c.grant('b', 'write'), 201);
  expectOk(await c.grant('a', 'read', { expiresAt: LATEST }), 201);
  expectOk(await c.grant('a', 'Read'), 201);
  expectOk(await c.addMember('zed', 'a'), 201);
  expectOk(await c.addMember('amy', 'a', { notBefore: LATER, expiresAt: LATEST }), 201);
  expectOk(await c.addMember('Bob', 'b'), 201);
  return c;
}

const ndjson = (...items: unknown[]): string => `${items.map((i) => JSON.stringify(i)).join('\n')}\n`;
const HEADER = { format: 'rbac-gateway.export', version: 1, revision: 0, exported_at: '2026-01-01T00:00:00.000000Z' };

/** Every read route's answer for the names in play, to compare two clients. */
async function reads(c: RbacClient): Promise<unknown[]> {
  const out: unknown[] = [(await c.request('GET', '/api/roles')).data];
  for (const role of ['a', 'b']) {
    out.push((await c.request('GET', `/api/role_permissions/${role}`)).data, (await c.request('GET', `/api/members/${role}`)).data);
  }
  for (const user of ['amy', 'zed', 'Bob']) {
    out.push((await c.request('GET', `/api/user_roles/${user}`)).data, (await c.request('GET', `/api/user_permissions/${user}`)).data);
    for (const p of ['read', 'Read', 'write']) out.push((await c.request('GET', `/api/explain/${user}/${p}`)).data);
  }
  for (const p of ['read', 'Read', 'write'])
    out.push((await c.request('GET', `/api/which_users_can/${p}`)).data, (await c.request('GET', `/api/which_roles_can/${p}`)).data);
  out.push((await c.request('GET', '/api/windows')).data);
  return out;
}

describe('GET /api/export', () => {
  test('a header at the revision, then roles, grants and memberships by code point, windows included', async () => {
    const c = await seeded();
    const res = await fetch(`${api.server.baseUrl}/api/export`, { headers: { authorization: `Bearer ${c.key ?? ''}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    assert.equal(res.headers.get('x-authz-revision'), '8');
    const text = await res.text();
    assert.ok(text.endsWith('\n'));
    const [header, ...rest] = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(Object.keys(header ?? {}), ['format', 'version', 'revision', 'exported_at']);
    assert.equal(header?.revision, 8);
    assert.match(String(header?.exported_at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    assert.deepEqual(rest, [
      { type: 'role', role: 'a', description: '' },
      { type: 'role', role: 'b', description: 'Bees' },
      { type: 'permission', role: 'a', permission: 'Read' },
      { type: 'permission', role: 'a', permission: 'read', expires_at: LATEST },
      { type: 'permission', role: 'b', permission: 'write' },
      { type: 'membership', user: 'amy', role: 'a', not_before: LATER, expires_at: LATEST },
      { type: 'membership', user: 'zed', role: 'a' },
      { type: 'membership', user: 'Bob', role: 'b' },
    ]);
  });

  test('an empty client exports its header alone; a read token may export', async () => {
    const c = fresh();
    const only = await lines(c);
    assert.equal(only.length, 1);
    assert.equal((JSON.parse(only[0] as string) as { revision: number }).revision, 0);
  });
});

describe('POST /api/import', () => {
  test('a round trip into a fresh client answers every read alike', async () => {
    const source = await seeded();
    const text = `${(await lines(source)).join('\n')}\n`;
    const target = fresh();
    const done = expectOk(await target.importClient(text));
    assert.deepEqual(done, { revision: 1, roles: 2, permissions: 3, memberships: 3, added: 8, removed: 0 });
    assert.deepEqual(await reads(target), await reads(source));
    assert.deepEqual(await body(target), await body(source));
    const changes = expectOk(await target.request('GET', '/api/changes'));
    assert.deepEqual(
      (changes as Array<Record<string, unknown>>).map(({ timestamp: _t, ...rest }) => rest),
      [{ revision: 1, op: 'client.import', added: 8, removed: 0 }],
    );
  });

  test('an import that changes nothing takes no revision and writes no change', async () => {
    const c = await seeded();
    const text = `${(await lines(c)).join('\n')}\n`;
    const again = await c.importClient(text, { mode: 'replace' });
    assert.deepEqual(expectOk(again), { revision: 8, roles: 2, permissions: 3, memberships: 3, added: 0, removed: 0 });
    assert.equal(again.revision, 8);
    assert.equal((expectOk(await c.request('GET', '/api/changes?since=8')) as unknown[]).length, 0);
  });

  test('merge adds what is missing and updates descriptions; replace makes the data exactly the file', async () => {
    const c = await seeded();
    const file = ndjson(
      HEADER,
      { type: 'role', role: 'a', description: 'Now described' },
      { type: 'role', role: 'c', description: '' },
      { type: 'permission', role: 'a', permission: 'read' },
      { type: 'permission', role: 'c', permission: 'x' },
      { type: 'membership', user: 'zed', role: 'c' },
    );
    const merged = expectOk(await c.importClient(file));
    assert.deepEqual(merged, { revision: 9, roles: 3, permissions: 4, memberships: 4, added: 3, removed: 0 });
    const roles = expectOk(await c.request('GET', '/api/roles'));
    assert.deepEqual(roles, [
      { role: 'a', description: 'Now described' },
      { role: 'b', description: 'Bees' },
      { role: 'c', description: '' },
    ]);
    // The window merge kept: the stored edge stays as it was.
    assert.ok((await body(c)).some((l) => JSON.stringify(l) === JSON.stringify({ type: 'permission', role: 'a', permission: 'read', expires_at: LATEST })));
    const replaced = expectOk(await c.importClient(file, { mode: 'replace' }));
    // b with its grant and member go (3 lines); a's Read, amy's and zed's memberships of a go (3); a's read changes window (neither).
    assert.deepEqual(replaced, { revision: 10, roles: 2, permissions: 2, memberships: 1, added: 0, removed: 6 });
    assert.deepEqual(await body(c), JSON.parse(`[${file.trimEnd().split('\n').slice(1).join(',')}]`));
  });

  test('If-Match: another revision is 412 with nothing stored; the current one imports', async () => {
    const c = await seeded();
    const file = ndjson(HEADER, { type: 'role', role: 'new' });
    const before = await lines(c);
    expectPreconditionFailed(await c.importClient(file, { ifMatch: 7 }), 8, 'import');
    assert.deepEqual((await lines(c)).slice(1), before.slice(1));
    expectOk(await c.importClient(file, { ifMatch: 8 }));
  });

  test('a dry run answers the difference and stores nothing', async () => {
    const c = await seeded();
    const before = await lines(c);
    const file = ndjson(
      HEADER,
      { type: 'role', role: 'a' },
      { type: 'permission', role: 'a', permission: 'new' },
      { type: 'membership', user: 'zed', role: 'a' },
    );
    const dry = expectOk(await c.importClient(file, { mode: 'replace', dryRun: true }));
    assert.deepEqual(dry, {
      revision: 8,
      roles: 1,
      permissions: 1,
      memberships: 1,
      added: 1,
      removed: 6,
      dry_run: true,
      gained: [{ user: 'zed', permission: 'new' }],
      lost: [
        { user: 'Bob', permission: 'write' },
        { user: 'zed', permission: 'Read' },
        { user: 'zed', permission: 'read' },
      ],
      gained_count: 1,
      lost_count: 3,
      truncated: false,
    });
    assert.deepEqual((await lines(c)).slice(1), before.slice(1));
    assert.equal((await c.request('GET', '/api/roles')).revision, 8);
  });

  describe('bad bodies are refused whole, naming the line; nothing changes', () => {
    const role = { type: 'role', role: 'r' };
    const cases: Array<[string, string, number, RegExp]> = [
      ['missing header', ndjson(role), 400, /^line 1: /],
      ['empty body', '', 400, /^line 1: /],
      ['version 2', ndjson({ ...HEADER, version: 2 }), 400, /^line 1: version must be 1/],
      ['bad JSON line', `${JSON.stringify(HEADER)}\n${JSON.stringify(role)}\n{"type":\n`, 400, /^line 3: not valid JSON/],
      ['unknown type', ndjson(HEADER, { type: 'group', role: 'r' }), 400, /^line 2: type must be/],
      ['unknown key', ndjson(HEADER, { ...role, colour: 'red' }), 400, /^line 2: unknown key 'colour'/],
      ['bad name', ndjson(HEADER, role, { type: 'membership', user: 'a b', role: 'r' }), 400, /^line 3: user must be 1 to 128/],
      ['bad window', ndjson(HEADER, role, { type: 'permission', role: 'r', permission: 'p', expires_at: 'soon' }), 400, /^line 3: expires_at must be/],
      ['past expiry', ndjson(HEADER, role, { type: 'permission', role: 'r', permission: 'p', expires_at: '2001-01-01T00:00:00Z' }), 400, /^line 3: expires_at/],
      ['undeclared role', ndjson(HEADER, { type: 'permission', role: 'r', permission: 'p' }), 400, /^line 2: role 'r' has no role line/],
      ['duplicate', ndjson(HEADER, role, role), 400, /^line 3: the same role as line 2/],
      ['too large', ndjson(HEADER, ...Array.from({ length: 3000 }, (_, i) => ({ type: 'role', role: `role-${i}` }))), 413, /./],
    ];
    for (const [name, text, status, why] of cases) {
      test(name, async () => {
        const c = await seeded();
        const before = await lines(c);
        const res = await c.importClient(text, { mode: 'replace' });
        expectErr(res, status, why);
        assert.equal(res.revision, 8);
        assert.deepEqual((await lines(c)).slice(1), before.slice(1));
      });
    }
    test('another Content-Type is 415', async () => {
      const c = await seeded();
      const res = await c.request('POST', '/api/import', { rawBody: ndjson(HEADER, role), contentType: 'application/json' });
      expectErr(res, 415, /application\/x-ndjson/);
      assert.equal(res.revision, 8);
    });
  });
});

describe('a large export', () => {
  test('100,000 memberships stream while another client keeps answering checks', async () => {
    const big = fresh();
    const users = Array.from({ length: 100_000 }, (_, i) => ({ type: 'membership', user: `user-${String(i).padStart(6, '0')}`, role: 'crowd' }));
    // Within AUTH_IMPORT_MAX_BYTES: imported in slices that merge.
    expectOk(await big.importClient(ndjson(HEADER, { type: 'role', role: 'crowd' }, { type: 'permission', role: 'crowd', permission: 'p' })));
    for (let i = 0; i < users.length; i += 1000) expectOk(await big.importClient(ndjson(HEADER, { type: 'role', role: 'crowd' }, ...users.slice(i, i + 1000))));
    const other = fresh();
    await seedRole(other, 'r', ['p'], ['alice']);
    let streaming = true;
    const latencies: number[] = [];
    const checks = (async () => {
      while (streaming) {
        const started = performance.now();
        assert.equal(expectOk(await other.request<{ has_permission: boolean }>('GET', '/api/has_permission/alice/p')).has_permission, true);
        latencies.push(performance.now() - started);
      }
    })();
    let count = 0;
    let previous = '';
    for await (const line of big.exportClient()) {
      count++;
      // Line 4 on: memberships, one user each, whose lines then sort as their users do.
      if (count > 4) assert.ok(previous < line, 'memberships in code point order');
      if (count > 3) previous = line;
    }
    streaming = false;
    await checks;
    assert.equal(count, 1 + 1 + 1 + users.length);
    latencies.sort((a, b) => a - b);
    assert.ok(latencies.length > 0);
    // Generous: the export must not hold the checks up for long (a shared machine).
    assert.ok((latencies[Math.floor(latencies.length * 0.99)] ?? 0) < 1000, `p99 ${String(latencies.at(-1))} ms`);
  });
});

answersMatchTheDocument('every answer matches /openapi.json', 20);
