/**
 * AuthZEN searches, evaluations and explain against a brute-force model over random data
 * (docs/authzen.md, docs/api.md §6 explain): every search walked to its end at several limits equals
 * the model; tokens are bound to the client, the route and the query, and refused when tampered.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../helpers/server.ts';
import type { PdpResult, RbacClient, SearchPage } from '../../src/client/index.ts';
import * as model from '../helpers/authzen-model.ts';

const SEED = 2411;
const m = model.randomModel(SEED, 7, 24, 14);
let server: RunningServer;
let client: RbacClient;

before(async () => {
  // With reasons, so that each deny's reason is checked against the model too.
  server = await startServer({ env: { AUTH_AUTHZEN_DENY_REASONS: 'true' } });
  client = server.client();
  await model.seed(client, m);
});

after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, server.output().slice(-2000));
});

const user = (id: string) => ({ type: 'user', id });
const LIMITS = [1, 3, 7, 1000, undefined];

type Fetch<T> = (page: { limit?: number; token?: string }) => Promise<PdpResult<SearchPage<T>>>;

/** Follows next_token to the end, checking each page's count, total and size. */
async function walk<T>(fetch: Fetch<T>, limit: number | undefined, expectedTotal: number): Promise<T[]> {
  const out: T[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = token === undefined ? (limit === undefined ? {} : { limit }) : { token };
    const res = await fetch(page);
    assert.equal(res.status, 200, `${res.status} ${JSON.stringify(res.body)}`);
    const body = res.value as SearchPage<T>;
    assert.deepEqual(Object.keys(body), ['page', 'results']);
    assert.equal(body.page.total, expectedTotal);
    assert.equal(body.page.count, body.results.length);
    const remaining = expectedTotal - out.length;
    assert.equal(body.results.length, Math.min(limit ?? 1000, 1000, remaining));
    out.push(...body.results);
    if (body.page.next_token === '') return out;
    token = body.page.next_token;
  }
  throw new Error('search did not end');
}

test('evaluation of every user, action and resource equals the model, with a reason on each deny', async () => {
  const resources = model.TYPES.flatMap((t) => [...model.knownResources(m, t).map((i) => [t, i]), [t, 'nope']]);
  const failures: string[] = [];
  for (const u of [...model.users(m), 'ghost']) {
    const body = {
      subject: user(u),
      evaluations: resources.flatMap(([t, i]) =>
        [...model.ACTIONS, 'ad:min'].map((a) => ({ action: { name: a }, resource: { type: t as string, id: i as string } })),
      ),
    };
    const res = await client.evaluations(body);
    assert.equal(res.status, 200);
    const got = (res.value as { evaluations: Array<{ decision: boolean; context?: { reason?: string } }> }).evaluations;
    body.evaluations.forEach((e, k) => {
      const want = model.evaluate(m, u, e.action.name, e.resource.type, e.resource.id);
      const d = got[k];
      if (d?.decision !== want) failures.push(`${u} ${e.action.name} ${e.resource.type}:${e.resource.id}: got ${JSON.stringify(d)}`);
      if (want) assert.deepEqual(d, { decision: true });
      else assert.equal(d?.context?.reason, u === 'ghost' ? 'unknown_subject' : 'not_granted');
    });
  }
  assert.deepEqual(failures, []);
});

test('subject search, walked to the end at several limits, equals the model', async () => {
  for (const t of model.TYPES) {
    for (const i of [...model.knownResources(m, t).slice(0, 6), 'nope']) {
      for (const a of model.ACTIONS) {
        const want = model.searchSubjects(m, a, t, i);
        for (const limit of LIMITS) {
          const got = await walk(
            (page) => client.searchSubjects({ subject: { type: 'user' }, action: { name: a }, resource: { type: t, id: i }, page }),
            limit,
            want.length,
          );
          assert.deepEqual(
            got,
            want.map((id) => ({ type: 'user', id })),
            `${a} on ${t}:${i} limit ${limit}`,
          );
        }
      }
    }
  }
});

test('resource search, walked to the end at several limits, equals the model', async () => {
  for (const u of [...model.users(m).slice(0, 12), 'ghost']) {
    for (const t of [...model.TYPES, 'none']) {
      for (const a of model.ACTIONS) {
        const want = model.searchResources(m, u, a, t);
        for (const limit of LIMITS) {
          const got = await walk((page) => client.searchResources({ subject: user(u), action: { name: a }, resource: { type: t }, page }), limit, want.length);
          assert.deepEqual(
            got,
            want.map((id) => ({ type: t, id })),
            `${u} ${a} on ${t} limit ${limit}`,
          );
        }
      }
    }
  }
});

test('action search, walked to the end at several limits, equals the model', async () => {
  for (const u of [...model.users(m).slice(0, 12), 'ghost']) {
    for (const t of model.TYPES) {
      for (const i of [...model.knownResources(m, t).slice(0, 4), 'x:y', 'nope']) {
        const want = model.searchActions(m, u, t, i);
        for (const limit of [1, 2, undefined]) {
          const got = await walk((page) => client.searchActions({ subject: user(u), resource: { type: t, id: i }, page }), limit, want.length);
          assert.deepEqual(
            got,
            want.map((name) => ({ name })),
            `${u} on ${t}:${i} limit ${limit}`,
          );
        }
      }
    }
  }
});

test('explain equals the model for every user and permission', async () => {
  const permissions = [...model.permissionPool(14), 'never-granted'];
  for (const u of [...model.users(m).slice(0, 8), 'ghost']) {
    const answers = await Promise.all(permissions.map((p) => client.explain(u, p)));
    answers.forEach((res, k) => {
      const p = permissions[k] as string;
      assert.equal(res.status, 200);
      assert.deepEqual(res.data, model.explain(m, u, p), `${u} ${p}`);
    });
  }
});

test('a page token is bound to the client, the route, the query and the limit, and refused when tampered', async () => {
  const t = 'doc';
  const u = model.users(m).find((x) => model.searchResources(m, x, 'read', t).length > 2) as string;
  assert.ok(u !== undefined, 'the random data has a user with three readable docs');
  const query = { subject: user(u), action: { name: 'read' }, resource: { type: t } };
  const first = await client.searchResources({ ...query, page: { limit: 1 } });
  const token = first.value?.page.next_token as string;
  assert.ok(token.length > 0);
  const refused = async (res: PdpResult<unknown>, field: string, why: string): Promise<void> => {
    assert.equal(res.status, 400, `${why}: ${res.status}`);
    assert.match(res.error ?? '', new RegExp(field.replace('.', '\\.')), why);
  };
  // The token keeps its limit: a continuation without one gets pages of one.
  const second = await client.searchResources({ ...query, page: { token } });
  assert.equal(second.value?.page.count, 1);
  assert.deepEqual(second.value?.results, [{ type: t, id: model.searchResources(m, u, 'read', t)[1] }]);
  await refused(await client.searchResources({ ...query, page: { token, limit: 2 } }), 'page.limit', 'another limit');
  await refused(await client.searchResources({ ...query, action: { name: 'write' }, page: { token } }), 'page.token', 'another action');
  await refused(await client.searchResources({ ...query, context: { at: 1 }, page: { token } }), 'page.token', 'another context');
  await refused(await client.searchResources({ ...query, subject: { ...user(u), properties: { x: 1 } }, page: { token } }), 'page.token', 'another subject');
  await refused(await server.client().searchResources({ ...query, page: { token } }), 'page.token', 'another client');
  const other = { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: t, id: 'x' }, page: { token } };
  await refused(await client.searchSubjects(other), 'page.token', 'another route');
  // The second-to-last character of the signature changed (always: one in 64 tokens has an 'A' there).
  const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.slice(-1);
  await refused(await client.searchResources({ ...query, page: { token: flipped } }), 'page.token', 'a tampered token');
  await refused(await client.searchResources({ ...query, page: { token: 'x' } }), 'page.token', 'a made-up token');
  await refused(await client.pdp('/access/v1/search/resource', { ...query, page: { token: 5 } }), 'page.token', 'a number');
  // Keys in another order are the same query.
  const reordered = { resource: { type: t }, action: { name: 'read' }, subject: { id: u, type: 'user' }, page: { token } };
  assert.equal((await client.searchResources(reordered)).status, 200);
});

test('a write between two pages: the next page continues after the last id at the new revision', async () => {
  const c = server.client();
  await c.createRole('r');
  for (const id of ['a', 'c', 'e']) await c.grant('r', `doc:${id}:read`);
  await c.addMember('alice', 'r');
  const query = { subject: user('alice'), action: { name: 'read' }, resource: { type: 'doc' } };
  const first = await c.searchResources({ ...query, page: { limit: 2 } });
  assert.deepEqual(
    first.value?.results.map((r) => r.id),
    ['a', 'c'],
  );
  await c.grant('r', 'doc:b:read');
  await c.grant('r', 'doc:d:read');
  const next = await c.searchResources({ ...query, page: { token: first.value?.page.next_token as string } });
  assert.deepEqual(
    next.value?.results.map((r) => r.id),
    ['d', 'e'],
  );
  assert.equal(next.value?.page.total, 5);
  assert.equal(next.revision, 7);
});
