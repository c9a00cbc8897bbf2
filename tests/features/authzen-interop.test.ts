/**
 * The AuthZEN working group's interop scenarios (github.com/openid/authzen, interop/) replayed as
 * their runners replay them: every published question sent to /access/v1/evaluation one by one,
 * then all at once to /access/v1/evaluations, and each answer compared as exact JSON with the
 * published one. The scenarios' users, roles and expected decisions are encoded below as data; the
 * grants that express them are written through /api (docs/authzen.md, "Worked example: a gateway
 * and a Todo app").
 *
 * The server runs as a developer would start it locally: no AuthZEN setting but an http base URL on
 * the loopback address. Gateway plug-ins send subjects of type `identity`, the Todo app `user`;
 * both must be answered without any other setting.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../helpers/server.ts';
import type { RbacClient } from '../../src/client/index.ts';

const LOCAL = 'http://127.0.0.1:5000';
let server: RunningServer;
let client: RbacClient;

/** The five people of the scenarios: their directory id (the `sub` a gateway sees), e-mail and the todo they own. */
interface Person {
  readonly pid: string;
  readonly email: string;
  readonly todo: string;
}
const person = (digit: number, email: string): Person => ({
  pid: `CiRmZD${digit}2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs`,
  email,
  todo: `7240d0db-8ff0-41ec-98b2-34a096273b9${[2, 1, 3, 4, 5][digit] ?? ''}`,
});
const RICK = person(0, 'rick@the-citadel.com');
const MORTY = person(1, 'morty@the-citadel.com');
const SUMMER = person(2, 'summer@the-smiths.com');
const BETH = person(3, 'beth@the-smiths.com');
const JERRY = person(4, 'jerry@the-smiths.com');

/**
 * The scenarios' roles as grants. The Todo app asks about its five permissions; the gateway asks
 * whether an HTTP method may be called on a route, granted type-wide (`route:GET`) since a route
 * template is not a name. Editors change only their own todos: each editor's own todos are granted
 * per resource to a role of their own; admins may delete and evil geniuses update any todo.
 */
const VIEWER = ['can_read_user', 'can_read_todos', 'route:GET'];
const EDITOR = [...VIEWER, 'can_create_todo', 'route:POST', 'route:PUT', 'route:DELETE'];
const ROLES: Record<string, string[]> = {
  viewer: VIEWER,
  editor: EDITOR,
  admin: [...EDITOR, 'can_delete_todo'],
  evil_genius: [...EDITOR, 'can_update_todo'],
};
const own = (p: Person): string[] => [`todo:${p.todo}:can_update_todo`, `todo:${p.todo}:can_delete_todo`];
const MEMBERS: Array<[Person, string[]]> = [
  [RICK, ['admin', 'evil_genius']],
  [MORTY, ['editor']],
  [SUMMER, ['editor']],
  [BETH, ['viewer']],
  [JERRY, ['viewer']],
];

before(async () => {
  server = await startServer({ env: { AUTH_AUTHZEN_BASE_URL: LOCAL } });
  client = server.client();
  for (const [role, perms] of Object.entries(ROLES)) {
    assert.equal((await client.createRole(role)).status, 201);
    for (const p of perms) assert.equal((await client.grant(role, p)).status, 201, `${role} ${p}`);
  }
  for (const [p, roles] of MEMBERS) {
    for (const r of roles) assert.equal((await client.addMember(p.pid, r)).status, 201);
    if (roles.includes('editor')) {
      const mine = `owner-${p.email}`;
      assert.equal((await client.createRole(mine)).status, 201);
      for (const perm of own(p)) assert.equal((await client.grant(mine, perm)).status, 201);
      assert.equal((await client.addMember(p.pid, mine)).status, 201);
    }
  }
});
after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, server.output().slice(-2000));
});

interface Case {
  readonly request: object;
  readonly expected: boolean;
}

/** POSTs `body` and returns the answer's bytes, as an interop runner reads them. */
async function post(path: string, body: unknown): Promise<string> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${client.key ?? ''}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return text;
}

/** Every case alone (exactly `{"decision":…}`), then all of them as one batch (exactly `{"evaluations":[…]}`). */
async function replay(cases: readonly Case[]): Promise<void> {
  const failed: string[] = [];
  for (const { request, expected } of cases) {
    const got = await post('/access/v1/evaluation', request);
    if (got !== JSON.stringify({ decision: expected })) failed.push(`${JSON.stringify(request)} -> ${got}`);
  }
  assert.deepEqual(failed, []);
  const batch = await post('/access/v1/evaluations', { evaluations: cases.map((c) => c.request) });
  assert.equal(batch, JSON.stringify({ evaluations: cases.map((c) => ({ decision: c.expected })) }));
}

/** Expected answers written as the scenarios publish them, one letter a question: T(rue) or F(alse). */
const answers = (letters: string): boolean[] => [...letters].map((l) => l === 'T');

test('API gateway scenario: 25 route decisions for identities, alone and as one batch, exact JSON', async () => {
  const routes: Array<[string, string]> = [
    ['GET', '/users/{userId}'],
    ['GET', '/todos'],
    ['POST', '/todos'],
    ['PUT', '/todos/{todoId}'],
    ['DELETE', '/todos/{todoId}'],
  ];
  const published: Array<[Person, string]> = [
    [RICK, 'TTTTT'],
    [MORTY, 'TTTTT'],
    [SUMMER, 'TTTTT'],
    [BETH, 'TTFFF'],
    [JERRY, 'TTFFF'],
  ];
  const cases = published.flatMap(([p, letters]) =>
    answers(letters).map((expected, k) => {
      const [method, route] = routes[k] as [string, string];
      return { request: { subject: { type: 'identity', id: p.pid }, action: { name: method }, resource: { type: 'route', id: route } }, expected };
    }),
  );
  assert.equal(cases.length, 25);
  await replay(cases);
});

/** The Todo app's eight questions of one person, as the scenario asks them (the owner is sent, and ignored). */
function todoQuestions(p: Person): object[] {
  const subject = { type: 'user', id: p.pid };
  const todo = (t: Person) => ({ type: 'todo', id: t.todo, properties: { ownerID: t.email } });
  // Rick's second todo question is about Morty's todo; everyone else's about their own.
  const second = p === RICK ? MORTY : p;
  return [
    { subject, action: { name: 'can_read_user' }, resource: { type: 'user', id: BETH.email } },
    { subject, action: { name: 'can_read_user' }, resource: { type: 'user', id: p.email } },
    { subject, action: { name: 'can_read_todos' }, resource: { type: 'todo', id: 'todo-1' } },
    { subject, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 'todo-1' } },
    { subject, action: { name: 'can_update_todo' }, resource: todo(RICK) },
    { subject, action: { name: 'can_update_todo' }, resource: todo(second) },
    { subject, action: { name: 'can_delete_todo' }, resource: todo(RICK) },
    { subject, action: { name: 'can_delete_todo' }, resource: todo(second) },
  ];
}

test('Todo scenario: 40 decisions, owners included, alone and as one batch, exact JSON', async () => {
  const published: Array<[Person, string]> = [
    [RICK, 'TTTTTTTT'],
    [MORTY, 'TTTTFTFT'],
    [SUMMER, 'TTTTFTFT'],
    [BETH, 'TTTFFFFF'],
    [JERRY, 'TTTFFFFF'],
  ];
  const cases = published.flatMap(([p, letters]) => {
    const questions = todoQuestions(p);
    return answers(letters).map((expected, k) => ({ request: questions[k] as object, expected }));
  });
  assert.equal(cases.length, 40);
  await replay(cases);
});

test("Todo scenario's own batches: defaults for subject and action, one resource per item, exact JSON", async () => {
  const batches: Array<[Person, Person, Person, string]> = [
    [RICK, RICK, JERRY, 'TT'],
    [MORTY, RICK, MORTY, 'FT'],
    [JERRY, RICK, JERRY, 'FF'],
  ];
  for (const [who, first, second, letters] of batches) {
    const item = (t: Person) => ({ resource: { type: 'todo', id: t.todo, properties: { ownerID: t.email } } });
    const body = { subject: { type: 'user', id: who.pid }, action: { name: 'can_update_todo' }, evaluations: [item(first), item(second)] };
    assert.equal(await post('/access/v1/evaluations', body), JSON.stringify({ evaluations: answers(letters).map((decision) => ({ decision })) }));
  }
});

test('searches agree with the decisions: who may delete a route, whose todos an editor may change, what a viewer may do', async () => {
  const del = await client.searchSubjects({ subject: { type: 'identity' }, action: { name: 'DELETE' }, resource: { type: 'route', id: '/todos/{todoId}' } });
  assert.deepEqual(
    del.value?.results,
    [RICK, MORTY, SUMMER].map((p) => ({ type: 'identity', id: p.pid })).sort((a, b) => (a.id < b.id ? -1 : 1)),
  );
  const mine = await client.searchResources({ subject: { type: 'user', id: MORTY.pid }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } });
  assert.deepEqual(mine.value?.results, [{ type: 'todo', id: MORTY.todo }]);
  const any = await client.searchResources({ subject: { type: 'user', id: RICK.pid }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } });
  assert.deepEqual(
    any.value?.results.map((r) => r.id),
    [MORTY.todo, SUMMER.todo].sort(),
    'a global grant reaches every known todo',
  );
  const can = await client.searchActions({ subject: { type: 'identity', id: BETH.pid }, resource: { type: 'route', id: '/todos' } });
  assert.deepEqual(can.value?.results, [{ name: 'GET' }, { name: 'can_read_todos' }, { name: 'can_read_user' }]);
  // A viewer's deny explains itself: the smallest role that would grant creating a todo.
  const why = await client.explain(BETH.pid, 'can_create_todo');
  assert.deepEqual(why.data?.remedies[0], { role: 'editor', permissions: EDITOR.length });
});

test('the metadata of a local http base URL, with the routes the runners call', async () => {
  const res = await client.withKey(undefined).authzenConfiguration();
  assert.equal(res.status, 200);
  assert.equal(res.value?.policy_decision_point, LOCAL);
  assert.equal(res.value?.access_evaluation_endpoint, `${LOCAL}/access/v1/evaluation`);
  assert.equal(res.value?.access_evaluations_endpoint, `${LOCAL}/access/v1/evaluations`);
});
