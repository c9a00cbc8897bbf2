/**
 * The dry-run preview against a brute-force model: plain maps of edges with windows, every item
 * applied to a copy, and has_permission compared over the whole universe before and after.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isOpen, type Change, type Window } from '../../../src/authz/changes.ts';
import { refusal } from '../../../src/authz/write-rules.ts';
import { ERRORS } from '../../../src/errors/index.ts';
import {
  preview,
  previewAsync,
  PreviewOutdatedError,
  type ItemResult,
  type Preview,
  type PreviewGraph,
  type UserPermission,
} from '../../../src/authz/preview.ts';

const NOW = 1_000_000;
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byPair = (a: UserPermission, b: UserPermission): number => byCodePoint(a.user, b.user) || byCodePoint(a.permission, b.permission);

/** A tenant as plain maps: role → permission → window, role → user → window (`{}`: permanent). */
class Model {
  readonly grants = new Map<string, Map<string, Window>>();
  readonly members = new Map<string, Map<string, Window>>();

  clone(): Model {
    const copy = new Model();
    for (const [role, grants] of this.grants) copy.grants.set(role, new Map(grants));
    for (const [role, members] of this.members) copy.members.set(role, new Map(members));
    return copy;
  }

  addRole(role: string): void {
    this.grants.set(role, new Map());
    this.members.set(role, new Map());
  }

  /** Applies `change` when the write rules allow it; returns its result as the route would. */
  apply(change: Change): ItemResult {
    const grants = this.grants.get(change.role);
    const members = this.members.get(change.role);
    const facts = {
      roleExists: grants !== undefined,
      grantExists: 'permission' in change && grants?.has(change.permission) === true,
      memberExists: 'user' in change && members?.has(change.user) === true,
    };
    const why = refusal(change, facts);
    if (why !== undefined) return { status: ERRORS[why.code].status, error: why.message };
    if (change.op === 'role.create') this.addRole(change.role);
    else if (change.op === 'role.delete') [this.grants, this.members].forEach((edges) => edges.delete(change.role));
    else if (change.op === 'permission.grant') grants?.set(change.permission, windowOf(change));
    else if (change.op === 'permission.revoke') grants?.delete(change.permission);
    else if (change.op === 'membership.add') members?.set(change.user, windowOf(change));
    else if (change.op === 'membership.remove') members?.delete(change.user);
    return { status: change.op === 'role.create' || change.op === 'permission.grant' || change.op === 'membership.add' ? 201 : 200 };
  }

  /** Every (user, permission) held at `now`, by brute force. */
  holdings(now: number): Set<string> {
    const held = new Set<string>();
    for (const [role, members] of this.members)
      for (const [user, mw] of members)
        if (isOpen(mw, now)) for (const [permission, gw] of this.grants.get(role) ?? []) if (isOpen(gw, now)) held.add(`${user}\0${permission}`);
    return held;
  }
}

function windowOf(change: { readonly notBefore?: number | undefined; readonly expiresAt?: number | undefined }): Window {
  return {
    ...(change.notBefore === undefined ? {} : { notBefore: change.notBefore }),
    ...(change.expiresAt === undefined ? {} : { expiresAt: change.expiresAt }),
  };
}

/** The graph interface over the model, at a fixed instant. */
class ModelGraph implements PreviewGraph {
  constructor(
    readonly model: Model,
    readonly now: number,
    public revision = 7,
  ) {}
  hasRole(role: string): boolean {
    return this.model.grants.has(role);
  }
  grantEdge(role: string, permission: string): Window | undefined {
    return this.model.grants.get(role)?.get(permission);
  }
  memberEdge(user: string, role: string): Window | undefined {
    return this.model.members.get(role)?.get(user);
  }
  rolePermissions(role: string): readonly string[] | undefined {
    const grants = this.model.grants.get(role);
    return grants && this.#active(grants);
  }
  members(role: string): readonly string[] | undefined {
    const members = this.model.members.get(role);
    return members && this.#active(members);
  }
  userRoles(user: string): readonly string[] {
    return [...this.model.members].filter(([, members]) => isOpen(members.get(user) ?? { notBefore: Infinity }, this.now)).map(([role]) => role);
  }
  check(user: string, permission: string): boolean {
    return this.userRoles(user).some((role) => isOpen(this.grantEdge(role, permission) ?? { notBefore: Infinity }, this.now));
  }
  #active(edges: Map<string, Window>): string[] {
    return [...edges]
      .filter(([, w]) => isOpen(w, this.now))
      .map(([name]) => name)
      .sort(byCodePoint);
  }
}

/** What the preview must answer, by applying the batch to a copy of the model and comparing everything. */
function expected(model: Model, changes: readonly Change[], now: number, limit = 10_000): Preview {
  const after = model.clone();
  const results: ItemResult[] = [];
  for (const change of changes) results.push(results.some((r) => r.status >= 400) ? { status: 424 } : after.apply(change));
  const valid = results.every((r) => r.status < 400);
  if (!valid) return { valid, results, gained: [], lost: [], gained_count: 0, lost_count: 0, truncated: false };
  const [was, is] = [model.holdings(now), after.holdings(now)];
  const pairs = (keys: string[]): UserPermission[] =>
    keys
      .map((key) => key.split('\0') as [string, string])
      .map(([user, permission]) => ({ user, permission }))
      .sort(byPair);
  const gained = pairs([...is].filter((key) => !was.has(key)));
  const lost = pairs([...was].filter((key) => !is.has(key)));
  const truncated = gained.length > limit || lost.length > limit;
  return { valid, results, gained: gained.slice(0, limit), lost: lost.slice(0, limit), gained_count: gained.length, lost_count: lost.length, truncated };
}

// ---- random tenants and batches ---------------------------------------------------------------

// Names whose code-point order is not their natural one: upper before `_` before lower, `u10` before `u2`.
const ROLES = ['Admin', 'admin', 'ops', '_x'];
const PERMS = ['Read', 'read', 'write', 'p:1', 'p_2'];
const USERS = ['Bob', 'alice', 'u1', 'u10', 'u2', '_z'];

/** A window around NOW: none, pending, active with or without an end, or already over. */
const windowArb: fc.Arbitrary<Window> = fc
  .record({
    notBefore: fc.option(fc.constantFrom(NOW - 10, NOW, NOW + 1, NOW + 10), { nil: undefined }),
    expiresAt: fc.option(fc.constantFrom(NOW - 5, NOW, NOW + 1, NOW + 20), { nil: undefined }),
  })
  .filter((w) => w.notBefore === undefined || w.expiresAt === undefined || w.expiresAt > w.notBefore)
  .map(windowOf);
const edgeWindowArb = fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: windowArb });

const modelArb: fc.Arbitrary<Model> = fc
  .record({
    roles: fc.array(fc.constantFrom(...ROLES), { maxLength: 6 }),
    grants: fc.array(fc.tuple(fc.constantFrom(...ROLES), fc.constantFrom(...PERMS), edgeWindowArb), { maxLength: 16 }),
    members: fc.array(fc.tuple(fc.constantFrom(...USERS), fc.constantFrom(...ROLES), edgeWindowArb), { maxLength: 20 }),
  })
  .map(({ roles, grants, members }) => {
    const model = new Model();
    for (const role of roles) model.addRole(role);
    for (const [role, permission, w] of grants) model.grants.get(role)?.set(permission, w);
    for (const [user, role, w] of members) model.members.get(role)?.set(user, w);
    return model;
  });

const OPS = ['role.create', 'role.delete', 'permission.grant', 'permission.revoke', 'membership.add', 'membership.remove'] as const;

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.constantFrom(...ROLES).map((role): Change => ({ op: 'role.create', role, description: '' })),
  fc.constantFrom(...ROLES).map((role): Change => ({ op: 'role.delete', role })),
  fc
    .tuple(fc.constantFrom(...ROLES), fc.constantFrom(...PERMS), edgeWindowArb)
    .map(([role, permission, w]): Change => ({ op: 'permission.grant', role, permission, ...w })),
  fc.tuple(fc.constantFrom(...ROLES), fc.constantFrom(...PERMS)).map(([role, permission]): Change => ({ op: 'permission.revoke', role, permission })),
  fc.tuple(fc.constantFrom(...USERS), fc.constantFrom(...ROLES), edgeWindowArb).map(([user, role, w]): Change => ({ op: 'membership.add', user, role, ...w })),
  fc.tuple(fc.constantFrom(...USERS), fc.constantFrom(...ROLES)).map(([user, role]): Change => ({ op: 'membership.remove', user, role })),
);

/** An item to make valid against the state the batch has reached: its kind, and picks among the names that fit. */
const seedArb = fc.record({ kind: fc.constantFrom(...OPS), pick: fc.nat(), second: fc.nat(), window: edgeWindowArb });
type Seed = typeof seedArb extends fc.Arbitrary<infer T> ? T : never;

/** A batch every item of which applies: each seed becomes an item that fits where it stands (or is dropped). */
function realize(model: Model, seeds: readonly Seed[]): Change[] {
  const state = model.clone();
  const batch: Change[] = [];
  const pickOf = <T>(list: readonly T[], n: number): T | undefined => list[n % Math.max(1, list.length)];
  for (const { kind, pick, second, window } of seeds) {
    const existing = [...state.grants.keys()];
    const role =
      kind === 'role.create'
        ? pickOf(
            ROLES.filter((r) => !state.grants.has(r)),
            pick,
          )
        : pickOf(existing, pick);
    if (role === undefined) continue;
    const grants = state.grants.get(role);
    const members = state.members.get(role);
    let change: Change | undefined;
    if (kind === 'role.create' || kind === 'role.delete') change = { op: kind, role, ...(kind === 'role.create' ? { description: '' } : {}) } as Change;
    const permission =
      kind === 'permission.grant'
        ? pickOf(
            PERMS.filter((p) => !grants?.has(p)),
            second,
          )
        : pickOf([...(grants?.keys() ?? [])], second);
    if (kind === 'permission.grant' && permission !== undefined) change = { op: kind, role, permission, ...window };
    if (kind === 'permission.revoke' && permission !== undefined) change = { op: kind, role, permission };
    const user =
      kind === 'membership.add'
        ? pickOf(
            USERS.filter((u) => !members?.has(u)),
            second,
          )
        : pickOf([...(members?.keys() ?? [])], second);
    if (kind === 'membership.add' && user !== undefined) change = { op: kind, user, role, ...window };
    if (kind === 'membership.remove' && user !== undefined) change = { op: kind, user, role };
    if (change === undefined) continue;
    assert.ok(state.apply(change).status < 400);
    batch.push(change);
  }
  return batch;
}

const limitArb = fc.constantFrom(1, 2, 3, 10_000);

test('random batches: results, validity and the difference are the model’s', () => {
  fc.assert(
    fc.property(modelArb, fc.array(changeArb, { minLength: 1, maxLength: 8 }), limitArb, (model, changes, limit) => {
      assert.deepEqual(preview(new ModelGraph(model, NOW), changes, NOW, { listLimit: limit }), expected(model, changes, NOW, limit));
    }),
    { numRuns: 1000 },
  );
});

test('random valid batches (every item applies): the difference is the model’s', () => {
  fc.assert(
    fc.property(modelArb, fc.array(seedArb, { minLength: 1, maxLength: 20 }), limitArb, (model, seeds, limit) => {
      const batch = realize(model, seeds);
      fc.pre(batch.length > 0);
      assert.deepEqual(preview(new ModelGraph(model, NOW), batch, NOW, { listLimit: limit }), expected(model, batch, NOW, limit));
    }),
    { numRuns: 1500 },
  );
});

test('the asynchronous preview, yielding at every step, answers the same', async () => {
  await fc.assert(
    fc.asyncProperty(modelArb, fc.array(seedArb, { minLength: 1, maxLength: 20 }), async (model, seeds) => {
      const batch = realize(model, seeds);
      fc.pre(batch.length > 0);
      assert.deepEqual(await previewAsync(new ModelGraph(model, NOW), batch, NOW, { sliceMillis: 0 }), expected(model, batch, NOW));
    }),
    { numRuns: 200 },
  );
});

// ---- named cases ----------------------------------------------------------------------------

/** A model from `role: [permissions] / [users]` lists (permanent edges), and its graph at NOW. */
function tenant(roles: Record<string, readonly [readonly string[], readonly string[]]>): Model {
  const model = new Model();
  for (const [role, [permissions, users]] of Object.entries(roles)) {
    model.addRole(role);
    for (const p of permissions) model.grants.get(role)?.set(p, {});
    for (const u of users) model.members.get(role)?.set(u, {});
  }
  return model;
}

function previewOf(model: Model, changes: readonly Change[], limit?: number): Preview {
  const answer = preview(new ModelGraph(model, NOW), changes, NOW, limit === undefined ? {} : { listLimit: limit });
  assert.deepEqual(answer, expected(model, changes, NOW, limit));
  return answer;
}

test('delete then re-create a role: its old members lose what only it gave, the new grants go to the new members', () => {
  const model = tenant({
    admin: [
      ['read', 'write'],
      ['alice', 'bob'],
    ],
    reader: [['read'], ['bob']],
  });
  const answer = previewOf(model, [
    { op: 'role.delete', role: 'admin' },
    { op: 'role.create', role: 'admin', description: 'again' },
    { op: 'permission.grant', role: 'admin', permission: 'write' },
    { op: 'membership.add', user: 'carol', role: 'admin' },
  ]);
  assert.deepEqual(answer.results, [{ status: 200 }, { status: 201 }, { status: 201 }, { status: 201 }]);
  assert.deepEqual(answer.lost, [
    { user: 'alice', permission: 'read' },
    { user: 'alice', permission: 'write' },
    { user: 'bob', permission: 'write' },
  ]);
  assert.deepEqual(answer.gained, [{ user: 'carol', permission: 'write' }]);
  // The re-created role grants its old permission again, but not to its old members.
  assert.equal(
    previewOf(model, [
      { op: 'role.delete', role: 'admin' },
      { op: 'role.create', role: 'admin', description: '' },
      { op: 'permission.grant', role: 'admin', permission: 'read' },
      { op: 'permission.grant', role: 'admin', permission: 'write' },
    ]).lost_count,
    3,
  );
});

test('windowed adds: gained only when the window is open now', () => {
  const model = tenant({ admin: [['read'], []] });
  const add = (user: string, w: Window): Change => ({ op: 'membership.add', user, role: 'admin', ...w });
  const answer = previewOf(model, [
    add('pending', { notBefore: NOW + 1 }),
    add('starts-now', { notBefore: NOW, expiresAt: NOW + 60 }),
    add('started', { notBefore: NOW - 60 }),
    add('ends-now', { expiresAt: NOW }),
    add('ends-later', { expiresAt: NOW + 1 }),
  ]);
  assert.equal(answer.valid, true);
  assert.deepEqual(
    answer.gained.map((g) => g.user),
    ['ends-later', 'started', 'starts-now'],
  );
  const grant = previewOf(model, [
    { op: 'membership.add', user: 'alice', role: 'admin' },
    { op: 'permission.grant', role: 'admin', permission: 'soon', notBefore: NOW + 5 },
  ]);
  assert.deepEqual(grant.gained, [{ user: 'alice', permission: 'read' }]);
});

test('a pending edge exists: adding it again is 409, removing it is 200 and loses nothing', () => {
  const model = tenant({ admin: [['read'], ['alice']] });
  model.grants.get('admin')?.set('write', { notBefore: NOW + 100 });
  model.members.get('admin')?.set('bob', { notBefore: NOW + 100 });
  assert.deepEqual(previewOf(model, [{ op: 'permission.grant', role: 'admin', permission: 'write' }]).results, [
    { status: 409, error: "Permission 'write' is already granted to role 'admin'" },
  ]);
  assert.deepEqual(previewOf(model, [{ op: 'membership.add', user: 'bob', role: 'admin', expiresAt: NOW + 5 }]).results, [
    { status: 409, error: "User 'bob' is already a member of role 'admin'" },
  ]);
  const removed = previewOf(model, [
    { op: 'permission.revoke', role: 'admin', permission: 'write' },
    { op: 'membership.remove', user: 'bob', role: 'admin' },
  ]);
  assert.deepEqual([removed.valid, removed.results, removed.lost_count, removed.gained_count], [true, [{ status: 200 }, { status: 200 }], 0, 0]);
});

test('the first failure fails the batch: 424 after it, no difference', () => {
  const model = tenant({ admin: [['read'], ['alice']] });
  const answer = previewOf(model, [
    { op: 'membership.add', user: 'bob', role: 'admin' },
    { op: 'permission.grant', role: 'ghost', permission: 'read' },
    { op: 'role.create', role: 'admin', description: '' },
    { op: 'membership.remove', user: 'alice', role: 'admin' },
  ]);
  assert.deepEqual(answer, {
    valid: false,
    results: [{ status: 201 }, { status: 404, error: "Role 'ghost' does not exist" }, { status: 424 }, { status: 424 }],
    gained: [],
    lost: [],
    gained_count: 0,
    lost_count: 0,
    truncated: false,
  });
  assert.deepEqual(
    previewOf(model, [
      { op: 'role.delete', role: 'admin' },
      { op: 'membership.remove', user: 'alice', role: 'admin' },
    ]).results,
    [{ status: 200 }, { status: 404, error: "Role 'admin' does not exist" }],
  );
});

/** A role of `users` members (u00000 …) and `perms` permissions. */
function bigRole(users: number, perms: number): Model {
  const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
  return tenant({ big: [names('p', perms), names('u', users)], small: [['p00001', 'extra'], ['u00007']] });
}

test('truncation: at most 10,000 pairs listed, the first in order, the counts exact', () => {
  const model = bigRole(200, 60);
  const answer = previewOf(model, [{ op: 'role.delete', role: 'big' }]);
  assert.equal(answer.lost_count, 200 * 60 - 1, 'u00007 keeps p00001 through small');
  assert.equal(answer.lost.length, 10_000);
  assert.equal(answer.truncated, true);
  // 166 users of 60, less the pair u00007 keeps, then 41 of the next user's.
  assert.deepEqual(answer.lost.at(-1), { user: 'u00166', permission: 'p00040' });
  const both = previewOf(
    model,
    [
      { op: 'membership.add', user: 'new', role: 'big' },
      { op: 'role.delete', role: 'small' },
    ],
    1,
  );
  assert.deepEqual(
    [both.gained, both.gained_count, both.lost, both.lost_count, both.truncated],
    [[{ user: 'new', permission: 'p00000' }], 60, [{ user: 'u00007', permission: 'extra' }], 1, true],
  );
});

test('the asynchronous preview of a huge difference yields the loop, and fails when the graph moves meanwhile', async () => {
  const model = bigRole(20_000, 10);
  const graph = new ModelGraph(model, NOW);
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 0);
  const answer = await previewAsync(graph, [{ op: 'role.delete', role: 'big' }], NOW, { sliceMillis: 1 });
  clearInterval(ticker);
  assert.ok(ticks > 0, 'timers ran during the preview');
  assert.deepEqual(answer, preview(graph, [{ op: 'role.delete', role: 'big' }], NOW));
  assert.equal(answer.lost_count, 20_000 * 10 - 1);
  const moved = previewAsync(graph, [{ op: 'role.delete', role: 'big' }], NOW, { sliceMillis: 0 });
  graph.revision++;
  await assert.rejects(moved, PreviewOutdatedError);
});

test('an item the route could not parse answers 400 in its place and fails the batch', () => {
  const graph = new ModelGraph(tenant({ admin: [['read'], []] }), NOW);
  const answer = preview(
    graph,
    [{ op: 'membership.add', user: 'alice', role: 'admin' }, { invalid: 'writes[1].expires_at must be after now' }, { op: 'role.delete', role: 'admin' }],
    NOW,
  );
  assert.deepEqual(answer.results, [{ status: 201 }, { status: 400, error: 'writes[1].expires_at must be after now' }, { status: 424 }]);
  assert.deepEqual([answer.valid, answer.gained_count], [false, 0]);
});

test('ops a client cannot send are refused loudly', () => {
  const model = tenant({ admin: [['read'], ['alice']] });
  assert.throws(() => preview(new ModelGraph(model, NOW), [{ op: 'permission.window', role: 'admin', permission: 'read' }], NOW), /six ops/);
});
