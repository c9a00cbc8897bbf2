/**
 * The AuthZEN working group's interop scenarios (github.com/openid/authzen, interop/), seeded
 * through /api and replayed, where they are expressible with roles and permissions (docs/api.md
 * §11.4): the API gateway scenario (route-level decisions of five identities, granted type-wide
 * as `route:<METHOD>`), and the Todo application (a global permission per action). The Todo
 * decisions that hinge on `resource.properties.ownerID` (an editor may change only their own
 * todos) are not expressible: properties never change a decision, so they are left out.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../helpers/server.ts';
import type { RbacClient } from '../../src/client/index.ts';

let server: RunningServer;

before(async () => {
  server = await startServer({ env: { AUTH_AUTHZEN_SUBJECT_TYPES: 'user,identity' } });
});
after(async () => {
  if (server !== undefined) assert.equal(await server.stop(), 0, server.output().slice(-2000));
});

/** Roles (with their permissions) and who holds them, written through /api. */
async function seed(c: RbacClient, roles: Record<string, string[]>, holders: Record<string, string[]>): Promise<void> {
  for (const [role, perms] of Object.entries(roles)) {
    assert.equal((await c.createRole(role)).status, 201);
    for (const p of perms) assert.equal((await c.grant(role, p)).status, 201, `${role} ${p}`);
  }
  for (const [user, rs] of Object.entries(holders)) for (const r of rs) assert.equal((await c.addMember(user, r)).status, 201);
}

// The five identities of the scenarios (the Citadel demo directory).
const ID = (n: number): string => `CiRmZD${'AEIMQ'[n] ?? ''}2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs`;
const RICK = 'rick@the-citadel.com';
const MORTY = 'morty@the-citadel.com';
const SUMMER = 'summer@the-smiths.com';
const BETH = 'beth@the-smiths.com';
const JERRY = 'jerry@the-smiths.com';

test('API gateway scenario: every published route decision, one evaluation each and as one batch', async () => {
  const c = server.client();
  const writer = ['route:GET', 'route:POST', 'route:PUT', 'route:DELETE'];
  await seed(
    c,
    { 'route-reader': ['route:GET'], 'route-writer': writer },
    {
      [ID(0)]: ['route-writer'],
      [ID(1)]: ['route-writer'],
      [ID(2)]: ['route-writer'],
      [ID(3)]: ['route-reader'],
      [ID(4)]: ['route-reader'],
    },
  );
  const routes: Array<[string, string]> = [
    ['GET', '/users/{userId}'],
    ['GET', '/todos'],
    ['POST', '/todos'],
    ['PUT', '/todos/{todoId}'],
    ['DELETE', '/todos/{todoId}'],
  ];
  const cases = [0, 1, 2, 3, 4].flatMap((n) =>
    routes.map(([method, route]) => ({
      request: { subject: { type: 'identity', id: ID(n) }, action: { name: method }, resource: { type: 'route', id: route } },
      expected: n < 3 || method === 'GET',
    })),
  );
  assert.equal(cases.length, 25);
  for (const { request, expected } of cases) {
    const res = await c.evaluation(request);
    assert.equal(res.value?.decision, expected, JSON.stringify(request));
  }
  const batch = await c.evaluations({ evaluations: cases.map((k) => k.request) });
  assert.deepEqual(
    (batch.value as { evaluations: Array<{ decision: boolean }> }).evaluations.map((d) => d.decision),
    cases.map((k) => k.expected),
  );
  // Who may call each route: a subject search per route.
  const del = await c.searchSubjects({ subject: { type: 'identity' }, action: { name: 'DELETE' }, resource: { type: 'route', id: '/todos/{todoId}' } });
  assert.deepEqual(
    del.value?.results,
    [ID(0), ID(1), ID(2)].sort().map((id) => ({ type: 'identity', id })),
  );
});

const TODO_ROLES = {
  viewer: ['can_read_user', 'can_read_todos'],
  editor: ['can_read_user', 'can_read_todos', 'can_create_todo'],
  admin: ['can_read_user', 'can_read_todos', 'can_create_todo', 'can_update_todo', 'can_delete_todo'],
};
const TODO = '7240d0db-8ff0-41ec-98b2-34a096273b9f';

test('Todo scenario: the decisions that do not depend on the owner, evaluated and searched', async () => {
  const c = server.client();
  await seed(c, TODO_ROLES, { [RICK]: ['admin'], [MORTY]: ['editor'], [SUMMER]: ['editor'], [BETH]: ['viewer'], [JERRY]: ['viewer'] });
  const ask = (user: string, action: string, type: string, id: string, ownerID?: string) => ({
    subject: { type: 'user', id: user, properties: { identity: 'ignored' } },
    action: { name: action },
    resource: { type, id, ...(ownerID === undefined ? {} : { properties: { ownerID } }) },
  });
  const cases: Array<[ReturnType<typeof ask>, boolean]> = [];
  for (const user of [RICK, MORTY, SUMMER, BETH, JERRY]) {
    const editor = user !== BETH && user !== JERRY;
    cases.push([ask(user, 'can_read_user', 'user', BETH), true], [ask(user, 'can_read_user', 'user', user), true]);
    cases.push([ask(user, 'can_read_todos', 'todo', 'todo-1'), true], [ask(user, 'can_create_todo', 'todo', 'todo-1'), editor]);
    for (const owner of [RICK, user]) {
      // Owner-dependent for editors: only the admin's (always) and the viewers' (never) are role decisions.
      if (user === RICK || !editor)
        cases.push([ask(user, 'can_update_todo', 'todo', TODO, owner), user === RICK], [ask(user, 'can_delete_todo', 'todo', TODO, owner), user === RICK]);
    }
  }
  for (const [request, expected] of cases) assert.equal((await c.evaluation(request)).value?.decision, expected, JSON.stringify(request));
  const who = await c.searchSubjects({ subject: { type: 'user' }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: TODO } });
  assert.deepEqual(
    who.value?.results.map((r) => r.id),
    [MORTY, RICK, SUMMER].sort(),
  );
  const can = await c.searchActions({ subject: { type: 'user', id: BETH }, resource: { type: 'todo', id: TODO } });
  assert.deepEqual(can.value?.results, [{ name: 'can_read_todos' }, { name: 'can_read_user' }]);
  // A viewer's deny explains itself: the smallest role that would grant the action.
  const why = await c.explain(BETH, 'can_create_todo');
  assert.deepEqual(why.data, {
    has_permission: false,
    granted_by: [],
    remedies: [
      { role: 'editor', permissions: 3 },
      { role: 'admin', permissions: 5 },
    ],
  });
});

test('Todo scenario per todo: owners granted their own todos as resources, found by a resource search', async () => {
  const c = server.client();
  await seed(
    c,
    {
      ...TODO_ROLES,
      'owner-morty': ['todo:t1:can_update_todo', 'todo:t1:can_delete_todo', 'todo:t3:can_update_todo'],
      'owner-summer': ['todo:t2:can_update_todo'],
    },
    {
      [RICK]: ['admin'],
      [MORTY]: ['editor', 'owner-morty'],
      [SUMMER]: ['editor', 'owner-summer'],
    },
  );
  const mine = await c.searchResources({ subject: { type: 'user', id: MORTY }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } });
  assert.deepEqual(mine.value?.results, [
    { type: 'todo', id: 't1' },
    { type: 'todo', id: 't3' },
  ]);
  const all = await c.searchResources({ subject: { type: 'user', id: RICK }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } });
  assert.deepEqual(
    all.value?.results.map((r) => r.id),
    ['t1', 't2', 't3'],
    'a global grant reaches every known todo',
  );
  assert.equal(
    (await c.evaluation({ subject: { type: 'user', id: SUMMER }, action: { name: 'can_update_todo' }, resource: { type: 'todo', id: 't1' } })).value?.decision,
    false,
  );
  assert.equal(
    (await c.evaluation({ subject: { type: 'user', id: MORTY }, action: { name: 'can_delete_todo' }, resource: { type: 'todo', id: 't1' } })).value?.decision,
    true,
  );
});
