/**
 * The rules of docs/authzen.md on the real server: 400 cases naming the field, what is ignored,
 * unknown ids, the exact bytes of decisions (reasons only when asked for), agents' tool calls, the
 * batch semantics and defaults, authentication and the order of checks, request ids, isolation
 * between clients, the metadata document, OpenAPI, metrics and audit of reads.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startServers, type RunningServer } from '../helpers/server.ts';
import type { PdpResult, RbacClient } from '../../src/client/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { sleep } from '../helpers/wait.ts';

const BASE = 'https://pdp.example.com/tenant-a';
const SECRET = 'authzen-rules-test-secret-0123456789abcdef';
let server: RunningServer;
let bare: RunningServer;
let metricsPort: number;
let alice: RbacClient;

before(async () => {
  metricsPort = await freePort();
  [server, bare] = (await startServers(
    {
      env: {
        AUTH_AUTHZEN_BASE_URL: BASE,
        AUTH_JWT_SECRET_KEY: SECRET,
        AUTH_AUDIT_CHECKS: 'true',
        AUTH_MAX_BODY_BYTES: '262144',
        AUTH_METRICS_PORT: String(metricsPort),
      },
    },
    { env: { AUTH_AUTHZEN_DENY_REASONS: 'true' } },
  )) as [RunningServer, RunningServer];
  alice = server.client();
  await alice.createRole('reader');
  await alice.grant('reader', 'doc:read');
  await alice.grant('reader', 'img:i1:view');
  await alice.createRole('boss');
  await alice.grant('boss', 'approve');
  await alice.addMember('alice', 'reader');
  await alice.addMember('bob', 'boss');
});

after(async () => {
  for (const s of [server, bare]) if (s !== undefined) assert.equal(await s.stop(), 0, s.output().slice(-2000));
});

const ok = { subject: { type: 'user', id: 'alice' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd1' } };

function raw(c: RbacClient, path: string, body: string, contentType?: string, headers: Record<string, string> = {}): Promise<PdpResult<unknown>> {
  return c
    .request<never>('POST', path, { rawBody: body, ...(contentType === undefined ? {} : { contentType }), headers })
    .then((r) => ({ ...r, value: r.status === 200 ? r.body : undefined }));
}

function refused(res: PdpResult<unknown>, field: string, what: string): void {
  assert.equal(res.status, 400, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal((res.body as { success?: boolean } | undefined)?.success, false, what);
  assert.ok((res.error ?? '').startsWith(field), `${what}: error ${JSON.stringify(res.error)} names ${field}`);
  assert.ok(res.revision !== undefined, `${what}: X-Authz-Revision`);
}

test('400: a body that is not a JSON object sent as application/json, whatever the other cause (never 415)', async () => {
  const body = JSON.stringify(ok);
  for (const [text, type, what] of [
    [body, 'text/plain', 'text/plain'],
    [body, 'application/x-www-form-urlencoded', 'a form'],
    [body, 'application/problem+json', 'another JSON type'],
    ['', 'application/json', 'empty body'],
    ['{', 'application/json', 'malformed JSON'],
    ['[]', 'application/json', 'an array'],
    ['null', 'application/json', 'null'],
    ['"x"', 'application/json', 'a string'],
  ] as const) {
    for (const path of [
      '/access/v1/evaluation',
      '/access/v1/evaluations',
      '/access/v1/search/subject',
      '/access/v1/search/resource',
      '/access/v1/search/action',
    ]) {
      const res = await raw(alice, path, text, type);
      assert.equal(res.status, 400, `${path} ${what}: ${res.status}`);
    }
  }
  assert.equal((await raw(alice, '/access/v1/evaluation', body, 'Application/JSON; charset=utf-8')).status, 200);
  // fetch sends bytes without a Content-Type (a string would go as text/plain).
  const untyped = await fetch(`${server.baseUrl}/access/v1/evaluation`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.key ?? ''}` },
    body: new TextEncoder().encode(body),
  });
  assert.equal(untyped.headers.get('content-type'), 'application/json');
  assert.equal(untyped.status, 400);
});

test('400 naming the field by its dotted path; unknown keys ignored at every level; any string is an id', async () => {
  const ev = (b: unknown) => alice.pdp('/access/v1/evaluation', b);
  const cases: Array<[unknown, string]> = [
    [{ action: ok.action, resource: ok.resource }, 'subject'],
    [{ ...ok, subject: null }, 'subject'],
    [{ ...ok, subject: 'alice' }, 'subject'],
    [{ ...ok, subject: { id: 'alice' } }, 'subject.type'],
    [{ ...ok, subject: { type: '', id: 'alice' } }, 'subject.type'],
    [{ ...ok, subject: { type: 'user', id: 5 } }, 'subject.id'],
    [{ ...ok, subject: { type: 'user', id: 'alice', properties: [] } }, 'subject.properties'],
    [{ ...ok, action: {} }, 'action.name'],
    [{ ...ok, action: { name: null } }, 'action.name'],
    [{ ...ok, resource: { type: 'doc' } }, 'resource.id'],
    [{ ...ok, resource: { type: 'doc', id: '' } }, 'resource.id'],
    [{ ...ok, context: 'now' }, 'context'],
  ];
  for (const [body, field] of cases) refused(await ev(body), field, JSON.stringify(body));
  const extra = { ...ok, extra: 1, subject: { ...ok.subject, extra: [1] }, action: { name: 'read', properties: { a: 1 } }, context: { time: 'now' } };
  assert.deepEqual((await ev(extra)).value, { decision: true });
  const odd = { subject: { type: 'user', id: 'al ice/ü' + 'x'.repeat(300) }, action: { name: 're ad' }, resource: { type: 'd:o:c', id: '\u0000' } };
  assert.deepEqual((await ev(odd)).value, { decision: false });
  const page = (p: unknown) => alice.pdp('/access/v1/search/resource', { subject: ok.subject, action: ok.action, resource: { type: 'doc' }, page: p });
  refused(await page({ limit: 0 }), 'page.limit', 'limit 0');
  refused(await page({ limit: 1.5 }), 'page.limit', 'limit 1.5');
  refused(await page({ limit: '2' }), 'page.limit', 'limit "2"');
  refused(await page({ token: 7 }), 'page.token', 'token 7');
  refused(await page('x'), 'page', 'page "x"');
  refused(await alice.pdp('/access/v1/search/subject', { ...ok, subject: { id: 'a' } }), 'subject.type', 'subject search without subject.type');
  refused(await alice.pdp('/access/v1/search/resource', { ...ok, resource: { id: 'd1' } }), 'resource.type', 'resource search without resource.type');
  refused(await alice.pdp('/access/v1/search/action', { subject: ok.subject }), 'resource', 'action search without resource');
  // The searched-for entity's id and the action search's action are ignored.
  assert.equal((await alice.pdp('/access/v1/search/action', { subject: ok.subject, resource: ok.resource, action: 5 })).status, 200);
  assert.equal((await alice.pdp('/access/v1/search/subject', { ...ok, subject: { type: 'user', id: 5 } })).status, 200);
});

/** The bytes of a 200 answer, as an interop runner reads them. */
async function answerText(s: RunningServer, key: string, path: string, body: unknown): Promise<string> {
  const res = await fetch(`${s.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return text;
}

const PERMIT = '{"decision":true}';
const DENY = '{"decision":false}';

test('decisions are exactly {"decision":true} or {"decision":false}, whatever the deny, alone and in a batch', async () => {
  const asks: Array<[object, string, object, boolean, string]> = [
    [{ type: 'user', id: 'alice' }, 'read', { type: 'doc', id: 'any' }, true, 'a type-wide grant'],
    [{ type: 'identity', id: 'alice' }, 'view', { type: 'img', id: 'i1' }, true, 'identity names users by default'],
    [{ type: 'user', id: 'bob' }, 'approve', { type: 'x', id: 'y' }, true, 'a global grant'],
    [{ type: 'user', id: 'alice' }, 'view', { type: 'img', id: 'i2' }, false, 'not granted'],
    [{ type: 'group', id: 'alice' }, 'read', { type: 'doc', id: 'd' }, false, 'a type that names no users'],
    [{ type: 'user', id: 'carol' }, 'read', { type: 'doc', id: 'd' }, false, 'a user without roles'],
    [{ type: 'user', id: 'alice' }, 'doc:read', { type: 'doc', id: 'd' }, false, 'an action with a colon'],
    [{ type: 'user', id: 'alice', properties: { roles: ['boss'] } }, 'approve', { type: 'x', id: 'y' }, false, 'properties grant nothing'],
  ];
  const requests = asks.map(([subject, name, resource]) => ({ subject, action: { name }, resource }));
  const key = alice.key ?? '';
  for (const [i, request] of requests.entries()) {
    const [, , , expected, what] = asks[i] as (typeof asks)[number];
    assert.equal(await answerText(server, key, '/access/v1/evaluation', request), expected ? PERMIT : DENY, what);
  }
  const batch = await answerText(server, key, '/access/v1/evaluations', { evaluations: requests });
  assert.equal(batch, `{"evaluations":[${asks.map(([, , , expected]) => (expected ? PERMIT : DENY)).join(',')}]}`);
});

test('AUTH_AUTHZEN_DENY_REASONS=true: a deny says why (unknown_subject, not_granted); a permit still carries nothing', async () => {
  const c = bare.client();
  assert.equal((await c.createRole('reader')).status, 201);
  assert.equal((await c.grant('reader', 'doc:read')).status, 201);
  assert.equal((await c.addMember('alice', 'reader')).status, 201);
  const ask = (type: string, id: string, name: string) => ({ subject: { type, id }, action: { name }, resource: { type: 'doc', id: 'd1' } });
  const unknown = '{"decision":false,"context":{"reason":"unknown_subject"}}';
  const notGranted = '{"decision":false,"context":{"reason":"not_granted"}}';
  const key = c.key ?? '';
  assert.equal(await answerText(bare, key, '/access/v1/evaluation', ask('user', 'alice', 'read')), PERMIT);
  assert.equal(await answerText(bare, key, '/access/v1/evaluation', ask('user', 'alice', 'write')), notGranted);
  assert.equal(await answerText(bare, key, '/access/v1/evaluation', ask('user', 'carol', 'read')), unknown);
  assert.equal(await answerText(bare, key, '/access/v1/evaluation', ask('group', 'alice', 'read')), unknown);
  const items = [ask('user', 'alice', 'read'), ask('identity', 'alice', 'write'), ask('robot', 'alice', 'read')];
  assert.equal(await answerText(bare, key, '/access/v1/evaluations', { evaluations: items }), `{"evaluations":[${PERMIT},${notGranted},${unknown}]}`);
});

test("agents' tool calls: `/` in an action name reads as `.`, in evaluations and in searches", async () => {
  const c = server.client();
  const roles: Record<string, string[]> = {
    'research-agent': ['tool:search_web:tools.call', 'tool:read_file:tools.call', 'tool:summarise:tools.call'],
    agent: ['mcp_server:resources.list'],
    'trusted-agent': ['tools.call'],
  };
  for (const [role, perms] of Object.entries(roles)) {
    assert.equal((await c.createRole(role)).status, 201);
    for (const p of perms) assert.equal((await c.grant(role, p)).status, 201, p);
  }
  for (const [who, role] of [
    ['agent-7', 'research-agent'],
    ['agent-7', 'agent'],
    ['agent-9', 'agent'],
    ['ops-bot', 'trusted-agent'],
  ] as const)
    assert.equal((await c.addMember(who, role)).status, 201);
  const ask = (id: string, name: string, type: string, rid: string) => ({ subject: { type: 'identity', id }, action: { name }, resource: { type, id: rid } });
  const cases: Array<[ReturnType<typeof ask>, boolean]> = [
    [ask('agent-7', 'tools/call', 'tool', 'search_web'), true],
    [ask('agent-7', 'tools/call', 'tool', 'deploy'), false],
    [ask('agent-9', 'tools/call', 'tool', 'search_web'), false],
    [ask('agent-9', 'resources/list', 'mcp_server', 'https://mcp.example.com'), true],
    [ask('agent-7', 'resources/list', 'mcp_server', 'https://mcp.example.com'), true],
    [ask('ops-bot', 'tools/call', 'tool', 'deploy'), true],
    [ask('ops-bot', 'resources/list', 'mcp_server', 'https://mcp.example.com'), false],
    [ask('agent-7', 'tools.call', 'tool', 'read_file'), true],
    [ask('agent-7', 'tools\\call', 'tool', 'read_file'), false],
    [ask('agent-7', 'tools/call/', 'tool', 'read_file'), false],
  ];
  const key = c.key ?? '';
  for (const [request, expected] of cases)
    assert.equal(await answerText(server, key, '/access/v1/evaluation', request), expected ? PERMIT : DENY, JSON.stringify(request));
  const batch = await answerText(server, key, '/access/v1/evaluations', { evaluations: cases.map(([r]) => r) });
  assert.equal(batch, `{"evaluations":[${cases.map(([, e]) => (e ? PERMIT : DENY)).join(',')}]}`);
  const who = await c.searchSubjects({ subject: { type: 'identity' }, action: { name: 'tools/call' }, resource: { type: 'tool', id: 'search_web' } });
  assert.deepEqual(who.value?.results, [
    { type: 'identity', id: 'agent-7' },
    { type: 'identity', id: 'ops-bot' },
  ]);
  const tools = await c.searchResources({ subject: { type: 'identity', id: 'agent-7' }, action: { name: 'tools/call' }, resource: { type: 'tool' } });
  assert.deepEqual(
    tools.value?.results.map((r) => r.id),
    ['read_file', 'search_web', 'summarise'],
  );
  const can = await c.searchActions({ subject: { type: 'identity', id: 'agent-7' }, resource: { type: 'tool', id: 'search_web' } });
  assert.deepEqual(can.value?.results, [{ name: 'tools.call' }], 'the stored spelling, which evaluates true as well');
});

test('batches: defaults replaced whole, item errors as denies, each semantic, and the 400s of the batch itself', async () => {
  const items = [
    { action: { name: 'read' } },
    { subject: { type: 'user', id: 'bob' }, action: { name: 'approve' } },
    { action: { name: 'view' }, resource: { type: 'img' } },
    5,
    { action: { name: 'read' }, resource: { type: 'doc', id: 'd9' } },
  ];
  const body = { subject: ok.subject, resource: ok.resource, evaluations: items };
  const all = [
    { decision: true },
    { decision: true },
    { decision: false, context: { error: { status: 400, message: 'evaluations[2].resource.id: resource.id is required' } } },
    { decision: false, context: { error: { status: 400, message: 'evaluations[3]: must be an object' } } },
    { decision: true },
  ];
  const run = async (semantic?: string): Promise<unknown> =>
    (await alice.pdp('/access/v1/evaluations', semantic === undefined ? body : { ...body, options: { evaluations_semantic: semantic, other: 1 } })).value;
  // Item 0 has no resource default merged field by field: it takes the top-level one whole.
  const first = (await alice.pdp('/access/v1/evaluations', body)).value as {
    evaluations: Array<{ decision: boolean; context?: { error?: { message: string } } }>;
  };
  assert.equal(first.evaluations[2]?.context?.error?.message.startsWith('evaluations[2].'), true);
  assert.deepEqual(await run(), { evaluations: all });
  assert.deepEqual(await run('execute_all'), { evaluations: all });
  assert.deepEqual(await run('deny_on_first_deny'), { evaluations: all.slice(0, 3) });
  assert.deepEqual(await run('permit_on_first_permit'), { evaluations: all.slice(0, 1) });
  const denies = { ...body, evaluations: [{ action: { name: 'nope' } }, { action: { name: 'read' } }] };
  assert.deepEqual((await alice.pdp('/access/v1/evaluations', { ...denies, options: { evaluations_semantic: 'permit_on_first_permit' } })).value, {
    evaluations: [{ decision: false }, { decision: true }],
  });
  // Without items, or with none: exactly a single evaluation.
  assert.deepEqual((await alice.pdp('/access/v1/evaluations', ok)).value, { decision: true });
  assert.deepEqual((await alice.pdp('/access/v1/evaluations', { ...ok, evaluations: [] })).value, { decision: true });
  refused(await alice.pdp('/access/v1/evaluations', { evaluations: [] }), 'subject', 'no items and no subject');
  refused(await alice.pdp('/access/v1/evaluations', { ...body, evaluations: 'x' }), 'evaluations', 'evaluations not an array');
  refused(await alice.pdp('/access/v1/evaluations', { ...body, evaluations: Array(1001).fill({}) }), 'evaluations', '1001 items');
  assert.equal(
    ((await alice.pdp('/access/v1/evaluations', { ...body, evaluations: Array(1000).fill({}) })).value as { evaluations: unknown[] }).evaluations.length,
    1000,
  );
  refused(await alice.pdp('/access/v1/evaluations', { ...body, options: { evaluations_semantic: 'any' } }), 'options.evaluations_semantic', 'unknown semantic');
  refused(await alice.pdp('/access/v1/evaluations', { ...body, options: 3 }), 'options', 'options not an object');
  refused(await alice.pdp('/access/v1/evaluations', { ...body, subject: { type: 'user' } }), 'subject.id', 'an invalid default');
});

test('order of checks: 404, 405 (Allow), 401 (WWW-Authenticate), 413, 400; read tokens may decide', async () => {
  const anon = alice.withKey(undefined);
  assert.equal((await raw(anon, '/access/v1/nothing', '{}', 'application/json')).status, 404);
  const wrong = await alice.request('GET', '/access/v1/evaluation');
  assert.equal(wrong.status, 405);
  assert.match(wrong.headers.get('allow') ?? '', /\bPOST\b/);
  const metaPost = await alice.request('POST', '/.well-known/authzen-configuration');
  assert.equal(metaPost.status, 405);
  assert.match(metaPost.headers.get('allow') ?? '', /GET.*HEAD|HEAD.*GET/);
  for (const c of [anon, alice.withKey('not-a-key'), alice.withKey('a.b.c')]) {
    const res = await raw(c, '/access/v1/evaluation', 'not json', 'text/plain');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  }
  const big = JSON.stringify({ ...ok, context: { pad: 'x'.repeat(300_000) } });
  assert.equal((await raw(alice, '/access/v1/evaluation', big, 'text/plain')).status, 413);
  const token = (await alice.issueToken({ scope: 'read' })).data?.token as string;
  const reader = alice.withKey(token);
  assert.deepEqual((await reader.evaluation(ok)).value, { decision: true });
  assert.equal((await reader.searchActions({ subject: ok.subject, resource: ok.resource })).status, 200);
});

test('X-Request-ID is echoed (1-128 visible ASCII), else replaced; X-Authz-Revision and X-Authz-Min-Revision as on /api', async () => {
  const res = await alice.evaluation(ok, { headers: { 'X-Request-ID': 'req-42:abc' } });
  assert.equal(res.requestId, 'req-42:abc');
  assert.equal(res.revision, 7);
  const err = await alice.pdp('/access/v1/evaluation', {}, { requestId: 'bad-1' });
  assert.equal(err.requestId, 'bad-1');
  const long = await alice.evaluation(ok, { requestId: 'x'.repeat(129) });
  assert.ok(long.requestId !== null && long.requestId.length > 0 && long.requestId !== 'x'.repeat(129));
  assert.equal((await alice.evaluation(ok, { minRevision: 7 })).status, 200);
  assert.equal((await alice.evaluation(ok, { headers: { 'x-authz-min-revision': 'soon' } })).status, 400);
});

test('clients are isolated: another key sees none of this client, and the body cannot choose the client', async () => {
  const other = server.client();
  assert.deepEqual((await other.evaluation(ok)).value, { decision: false });
  const search = await other.searchSubjects({ subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: 'd1' } });
  assert.deepEqual(search.value, { page: { next_token: '', count: 0, total: 0 }, results: [] });
  const sneaky = { ...ok, context: { client: alice.key }, subject: { ...ok.subject, properties: { client: alice.key } } };
  assert.equal((await other.evaluation(sneaky as never)).value?.decision, false);
});

test('metadata: both well-known forms, built from AUTH_AUTHZEN_BASE_URL only; 404 elsewhere and without the setting', async () => {
  const doc = {
    policy_decision_point: BASE,
    access_evaluation_endpoint: `${BASE}/access/v1/evaluation`,
    access_evaluations_endpoint: `${BASE}/access/v1/evaluations`,
    search_subject_endpoint: `${BASE}/access/v1/search/subject`,
    search_resource_endpoint: `${BASE}/access/v1/search/resource`,
    search_action_endpoint: `${BASE}/access/v1/search/action`,
  };
  const anon = alice.withKey(undefined);
  for (const path of ['', '/tenant-a']) {
    const res = await anon.authzenConfiguration(path);
    assert.equal(res.status, 200, path);
    assert.deepEqual(res.value, doc);
    assert.deepEqual(Object.keys(res.value ?? {}), Object.keys(doc));
    assert.equal(res.headers.get('cache-control'), 'public, max-age=300');
    const spoofed = await fetch(`${server.baseUrl}/.well-known/authzen-configuration${path}`, {
      headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', authorization: 'Bearer nonsense' },
    });
    assert.deepEqual(await spoofed.json(), doc);
  }
  assert.equal((await anon.authzenConfiguration('/other')).status, 404);
  const none = await bare.client().withKey(undefined).authzenConfiguration();
  assert.equal(none.status, 404);
  assert.match(none.error ?? '', /AUTH_AUTHZEN_BASE_URL/);
  assert.equal((await bare.client().evaluation(ok)).status, 200, 'the decision routes are served without a base URL');
});

test('AUTH_AUTHZEN_BASE_URL, AUTH_AUTHZEN_SUBJECT_TYPES and AUTH_AUTHZEN_DENY_REASONS are checked at start-up; the defaults', () => {
  for (const bad of [
    'http://pdp.example.com',
    'http://127.1:5000',
    'http://10.0.0.7:5000',
    'ftp://localhost',
    'https://pdp.example.com/',
    'https://u:p@pdp.example.com',
    'https://pdp.example.com?x=1',
    'https://pdp.example.com#f',
    'pdp.example.com',
  ]) {
    assert.throws(() => loadConfig({ AUTH_AUTHZEN_BASE_URL: bad }, '/nonexistent'), /AUTH_AUTHZEN_BASE_URL/, bad);
  }
  for (const good of [
    'https://pdp.example.com',
    'https://pdp.example.com:8443/a/b',
    'http://127.0.0.1:5000',
    'http://localhost:5000/pdp',
    'http://[::1]:5000',
    'http://localhost',
  ])
    assert.equal(loadConfig({ AUTH_AUTHZEN_BASE_URL: good }, '/nonexistent').AUTH_AUTHZEN_BASE_URL, good);
  assert.throws(() => loadConfig({ AUTH_AUTHZEN_BASE_URL: 'http://pdp.example.com' }, '/nonexistent'), /or http:\/\/ on localhost, 127\.0\.0\.1 or \[::1\]/);
  assert.equal(loadConfig({}, '/nonexistent').AUTH_AUTHZEN_SUBJECT_TYPES, 'user,identity');
  assert.equal(loadConfig({}, '/nonexistent').AUTH_AUTHZEN_DENY_REASONS, false);
  assert.equal(loadConfig({ AUTH_AUTHZEN_DENY_REASONS: 'true' }, '/nonexistent').AUTH_AUTHZEN_DENY_REASONS, true);
  assert.throws(
    () => loadConfig({ AUTH_AUTHZEN_DENY_REASONS: 'maybe' }, '/nonexistent'),
    /AUTH_AUTHZEN_DENY_REASONS="maybe" is invalid: allowed is true or false/,
  );
  assert.throws(() => loadConfig({ AUTH_AUTHZEN_SUBJECT_TYPES: 'user,,identity' }, '/nonexistent'), /AUTH_AUTHZEN_SUBJECT_TYPES/);
  assert.throws(() => loadConfig({ AUTH_AUTHZEN_SUBJECT_TYPES: 'us er' }, '/nonexistent'), /AUTH_AUTHZEN_SUBJECT_TYPES/);
});

test('OpenAPI lists the six routes; metrics count them by operationId and count each decision; reads are audited', async () => {
  const doc = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> };
  const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((op) => op.operationId));
  for (const id of [
    'authzen_evaluation',
    'authzen_evaluations',
    'authzen_search_subject',
    'authzen_search_resource',
    'authzen_search_action',
    'authzen_configuration',
    'explain',
  ])
    assert.ok(ids.includes(id), id);
  const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');
  const evalSeries = 'rbac_http_requests_total{route="authzen_evaluations",method="POST",status="200"}';
  const before = await scrape();
  const batch = await alice.evaluations(
    { subject: ok.subject, resource: ok.resource, evaluations: [{ action: { name: 'read' } }, { action: { name: 'x' } }, { action: { name: 'read' } }] },
    { requestId: 'audit-me' },
  );
  assert.equal(batch.status, 200);
  const afterScrape = await scrape();
  assert.equal(value(afterScrape, evalSeries) - value(before, evalSeries), 1);
  assert.equal(value(afterScrape, 'rbac_check_decisions_total{result="allow"}') - value(before, 'rbac_check_decisions_total{result="allow"}'), 2);
  assert.equal(value(afterScrape, 'rbac_check_decisions_total{result="deny"}') - value(before, 'rbac_check_decisions_total{result="deny"}'), 1);
  let row: { action: string; resource: string; status: number } | undefined;
  for (let i = 0; i < 50 && row === undefined; i++) {
    row = (await alice.audit()).data?.find((r) => r.request_id === 'audit-me');
    if (row === undefined) await sleep(100);
  }
  assert.deepEqual(row && { action: row.action, resource: row.resource, status: row.status }, {
    action: 'read',
    resource: '/access/v1/evaluations',
    status: 200,
  });
});
