/**
 * Model-based property test (docs/api.md §2, §4, §6): random sequences of writes against the real
 * server and against the reference model (support/rbac-model.ts), then every read route
 * compared with the model, pagination included. Replay a failure with PROPERTY_SEED=<seed>
 * (printed on failure).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { startServer, type RunningServer } from '../helpers/server.ts';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { RbacModel as Model } from '../../support/rbac-model.ts';
import { checkList, compact, describeRes, expectErr, expectOk, inParallel } from '../helpers/model-reads.ts';
import { prng } from '../../support/prng.ts';

// ---- seeded PRNG ------------------------------------------------------------------------------

type Rng = () => number;

const mulberry32 = (seed: number): Rng => prng(seed);

function pick<T>(rng: Rng, items: readonly T[]): T {
  const item = items[Math.floor(rng() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

function shuffle<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    const a = items[i] as T;
    items[i] = items[j] as T;
    items[j] = a;
  }
  return items;
}

// ---- name pools (binary collation: '+' < '-' < '.' < digits < ':' < '@' < 'A' < 'Z' < '_' < 'a' < '|')

const ROLES = ['A', 'Z', '_x', 'a', 'a.b', 'ops+dev|1'] as const;
const PERMS = ['read', 'Read', 'write', '_x', 'a.b', 'z', 'doc:edit', 'A-1'] as const;
const USERS = ['user@example.com', 'User@example.com', 'a', 'A', 'Z', '_x', 'a.b', 'bob+tag@ex.io', 'x|y', 'L'.repeat(128)] as const;
const DESCRIPTIONS = [
  'Administrators',
  'Ünïcødé — ✓',
  '😀'.repeat(1024), // 1024 code points, 2048 UTF-16 units
  'x'.repeat(1024),
  'line1\nline2 "quoted" \\ </script> \u0000',
  '  spaced  ',
] as const;

/** Runs of one repeated character, shortened for the replay log. */
const squeeze = (line: string): string => line.replace(/(.)\1{11,}/gu, (run, ch: string) => `${ch}×${[...run].length}`);

// ---- tenants and operations -------------------------------------------------------------------

interface Tenant {
  label: string;
  client: RbacClient;
  key: string;
  model: Model;
  rng: Rng;
  log: string[];
  /** Writes that succeeded and writes that failed as the model predicted. */
  stats: { ok: number; refused: number };
}

function newTenant(server: RunningServer, label: string, seed: number): Tenant {
  const client = server.client();
  return { label, client, key: client.key as string, model: new Model(), rng: mulberry32(seed), log: [], stats: { ok: 0, refused: 0 } };
}

type OpKind = 'createRole' | 'deleteRole' | 'grant' | 'revoke' | 'addMember' | 'removeMember';
const OP_WEIGHTS: ReadonlyArray<readonly [OpKind, number]> = [
  ['createRole', 12],
  ['deleteRole', 3],
  ['grant', 30],
  ['revoke', 12],
  ['addMember', 32],
  ['removeMember', 11],
];
const WEIGHT_TOTAL = OP_WEIGHTS.reduce((s, [, w]) => s + w, 0);

function pickOp(rng: Rng): OpKind {
  let x = rng() * WEIGHT_TOTAL;
  for (const [op, w] of OP_WEIGHTS) {
    if (x < w) return op;
    x -= w;
  }
  return 'grant';
}

/** One random write, checked against the model (status, data, revision). */
async function step(t: Tenant, index: number): Promise<void> {
  const { rng, model: m, client: c, key } = t;
  const op = pickOp(rng);
  // Mostly aim at what exists, so that states grow and the refusals stay a minority.
  const existing = [...m.roles.keys()];
  const role = op !== 'createRole' && existing.length > 0 && rng() < 0.8 ? pick(rng, existing) : pick(rng, ROLES);
  const what = `${t.label} op #${index}`;
  const rev0 = m.revision;
  const state = m.roles.get(role);
  let res: ApiResult<unknown>;
  switch (op) {
    case 'createRole': {
      const variant = Math.floor(rng() * 4);
      const description = variant >= 2 ? pick(rng, DESCRIPTIONS) : '';
      const body = variant === 0 ? undefined : variant === 1 ? {} : { description };
      t.log.push(`POST /api/role/${role} body=${body === undefined ? '(none)' : JSON.stringify(body).slice(0, 60)}`);
      res = await c.createRole(role, body);
      if (state !== undefined) {
        expectErr(res, 409, `${what} POST /api/role/${role} (exists)`, key);
      } else {
        m.apply({ op: 'role.create', role, description });
        const data = expectOk(res, 201, `${what} POST /api/role/${role}`);
        assert.deepEqual(compact(data), compact({ role, description, revision: m.revision }), `${what} POST /api/role/${role} data`);
      }
      break;
    }
    case 'deleteRole': {
      t.log.push(`DELETE /api/role/${role}`);
      res = await c.deleteRole(role);
      if (state === undefined) {
        expectErr(res, 404, `${what} DELETE /api/role/${role} (missing)`, key, role);
      } else {
        m.apply({ op: 'role.delete', role });
        const data = expectOk(res, 200, `${what} DELETE /api/role/${role}`);
        assert.deepEqual(
          data,
          { role, permissions_removed: state.perms.size, memberships_removed: state.members.size, revision: m.revision },
          `${what} DELETE /api/role/${role} data`,
        );
      }
      break;
    }
    case 'grant':
    case 'revoke': {
      const held = [...(state?.perms ?? [])];
      const perm = op === 'revoke' && held.length > 0 && rng() < 0.7 ? pick(rng, held) : pick(rng, PERMS);
      const path = `/api/permission/${role}/${perm}`;
      if (op === 'grant') {
        t.log.push(`POST ${path}`);
        res = await c.grant(role, perm);
        if (state === undefined) expectErr(res, 404, `${what} POST ${path} (no role)`, key, role);
        else if (state.perms.has(perm)) expectErr(res, 409, `${what} POST ${path} (granted)`, key);
        else {
          m.apply({ op: 'permission.grant', role, permission: perm });
          assert.deepEqual(expectOk(res, 201, `${what} POST ${path}`), { role, permission: perm, revision: m.revision }, `${what} POST ${path} data`);
        }
      } else {
        t.log.push(`DELETE ${path}`);
        res = await c.revoke(role, perm);
        if (state === undefined) expectErr(res, 404, `${what} DELETE ${path} (no role)`, key, role);
        else if (!state.perms.has(perm)) expectErr(res, 404, `${what} DELETE ${path} (not granted)`, key);
        else {
          m.apply({ op: 'permission.revoke', role, permission: perm });
          assert.deepEqual(expectOk(res, 200, `${what} DELETE ${path}`), { role, permission: perm, revision: m.revision }, `${what} DELETE ${path} data`);
        }
      }
      break;
    }
    case 'addMember':
    case 'removeMember': {
      const current = [...(state?.members ?? [])];
      const user = op === 'removeMember' && current.length > 0 && rng() < 0.7 ? pick(rng, current) : pick(rng, USERS);
      const path = `/api/membership/${user}/${role}`;
      if (op === 'addMember') {
        t.log.push(`POST ${path}`);
        res = await c.addMember(user, role);
        if (state === undefined) expectErr(res, 404, `${what} POST ${path} (no role)`, key, role);
        else if (state.members.has(user)) expectErr(res, 409, `${what} POST ${path} (member)`, key);
        else {
          m.apply({ op: 'membership.add', user, role });
          assert.deepEqual(expectOk(res, 201, `${what} POST ${path}`), { user, role, revision: m.revision }, `${what} POST ${path} data`);
        }
      } else {
        t.log.push(`DELETE ${path}`);
        res = await c.removeMember(user, role);
        if (state === undefined) expectErr(res, 404, `${what} DELETE ${path} (no role)`, key, role);
        else if (!state.members.has(user)) expectErr(res, 404, `${what} DELETE ${path} (not a member)`, key);
        else {
          m.apply({ op: 'membership.remove', user, role });
          assert.deepEqual(expectOk(res, 200, `${what} DELETE ${path}`), { user, role, revision: m.revision }, `${what} DELETE ${path} data`);
        }
      }
      break;
    }
  }
  assert.ok(m.revision === rev0 || m.revision === rev0 + 1);
  if (m.revision === rev0) t.stats.refused++;
  else t.stats.ok++;
  assert.equal(res.revision, m.revision, `${what}: X-Authz-Revision after ${t.log[t.log.length - 1] ?? ''}`);
}

// ---- reads against the model ------------------------------------------------------------------

/** Every read route compared with the model. */
async function verify(t: Tenant, paginate: boolean): Promise<void> {
  const { client: c, model: m, key } = t;
  const L = t.label;
  const tasks: Array<() => Promise<void>> = [];

  tasks.push(async () => {
    await checkList(`${L} GET /api/roles`, (o) => c.listRoles(o), m.roleList(), paginate);
    const res = await c.listRoles();
    assert.equal(res.revision, m.revision, `${L} GET /api/roles: X-Authz-Revision`);
  });
  for (const role of ROLES) {
    const state = m.roles.get(role);
    if (state === undefined) {
      tasks.push(async () => {
        expectErr(await c.rolePermissions(role), 404, `${L} GET /api/role_permissions/${role} (no role)`, key, role);
        expectErr(await c.members(role), 404, `${L} GET /api/members/${role} (no role)`, key, role);
        expectErr(await c.roleHasPermission(role, 'read'), 404, `${L} GET /api/permission/${role}/read (no role)`, key, role);
        expectErr(await c.isMember('a', role), 404, `${L} GET /api/membership/a/${role} (no role)`, key, role);
      });
      continue;
    }
    tasks.push(() => checkList(`${L} GET /api/role_permissions/${role}`, (o) => c.rolePermissions(role, o), m.rolePermissions(role), paginate));
    tasks.push(() => checkList(`${L} GET /api/members/${role}`, (o) => c.members(role, o), m.members(role), paginate));
    for (const perm of PERMS) {
      tasks.push(async () => {
        const data = expectOk(await c.roleHasPermission(role, perm), 200, `${L} GET /api/permission/${role}/${perm}`);
        assert.deepEqual(data, { has_permission: state.perms.has(perm) }, `${L} GET /api/permission/${role}/${perm}`);
      });
    }
    for (const user of USERS) {
      tasks.push(async () => {
        const data = expectOk(await c.isMember(user, role), 200, `${L} GET /api/membership/${user}/${role}`);
        assert.deepEqual(data, { is_member: state.members.has(user) }, `${L} GET /api/membership/${user}/${role}`);
      });
    }
  }
  for (const user of USERS) {
    tasks.push(() => checkList(`${L} GET /api/user_roles/${user}`, (o) => c.userRoles(user, o), m.userRoles(user), paginate));
    tasks.push(() => checkList(`${L} GET /api/user_permissions/${user}`, (o) => c.userPermissions(user, o), m.userPermissions(user), paginate));
    for (const perm of PERMS) {
      tasks.push(async () => {
        const data = expectOk(await c.hasPermission(user, perm), 200, `${L} GET /api/has_permission/${user}/${perm}`);
        assert.deepEqual(data, { has_permission: m.hasPermission(user, perm) }, `${L} GET /api/has_permission/${user}/${perm}`);
      });
    }
  }
  for (const perm of PERMS) {
    tasks.push(() => checkList(`${L} GET /api/which_roles_can/${perm}`, (o) => c.whichRolesCan(perm, o), m.whichRolesCan(perm), paginate));
    tasks.push(() => checkList(`${L} GET /api/which_users_can/${perm}`, (o) => c.whichUsersCan(perm, o), m.whichUsersCan(perm), paginate));
  }
  // POST /api/check: every pair in a random order, plus a few repeats, plus small batches.
  tasks.push(async () => {
    const pairs: Array<{ user: string; permission: string }> = [];
    for (const user of USERS) for (const permission of PERMS) pairs.push({ user, permission });
    const checks = shuffle(t.rng, [...pairs, ...pairs.slice(0, 5)]);
    const batches = [checks, checks.slice(0, 1), checks.slice(3, 7)];
    // One batch where everything is false (unknown user) and, if any pair holds, one true one.
    batches.push([{ user: 'nobody', permission: 'read' }]);
    const holding = pairs.find((p) => m.hasPermission(p.user, p.permission));
    if (holding !== undefined) batches.push([holding, holding]);
    for (const batch of batches) {
      const data = expectOk(await c.check(batch), 200, `${L} POST /api/check (${batch.length} items)`);
      const results = batch.map((x) => ({ user: x.user, permission: x.permission, has_permission: m.hasPermission(x.user, x.permission) }));
      assert.deepEqual(
        data,
        { results, all: results.every((r) => r.has_permission), any: results.some((r) => r.has_permission) },
        `${L} POST /api/check (${batch.length} items)`,
      );
    }
  });
  await inParallel(tasks);
}

/** A tenant that never wrote anything sees nothing. */
async function verifyEmpty(c: RbacClient, label: string): Promise<void> {
  const roles = await c.listRoles();
  assert.deepEqual(expectOk(roles, 200, `${label} GET /api/roles`), [], `${label}: roles of a fresh tenant`);
  assert.equal(roles.revision, 0, `${label}: revision of a fresh tenant`);
  const tasks: Array<() => Promise<void>> = [];
  for (const role of ROLES) {
    tasks.push(async () => {
      expectErr(await c.members(role), 404, `${label} GET /api/members/${role}`, c.key, role);
      expectErr(await c.rolePermissions(role), 404, `${label} GET /api/role_permissions/${role}`, c.key, role);
    });
  }
  for (const user of USERS) {
    tasks.push(async () => {
      assert.deepEqual(expectOk(await c.userRoles(user), 200, `${label} user_roles`), [], `${label} GET /api/user_roles/${user}`);
      assert.deepEqual(expectOk(await c.userPermissions(user), 200, `${label} user_permissions`), [], `${label} GET /api/user_permissions/${user}`);
      assert.deepEqual(expectOk(await c.hasPermission(user, 'read'), 200, `${label} has_permission`), { has_permission: false });
    });
  }
  for (const perm of PERMS) {
    tasks.push(async () => {
      assert.deepEqual(expectOk(await c.whichRolesCan(perm), 200, `${label} which_roles_can`), [], `${label} GET /api/which_roles_can/${perm}`);
      assert.deepEqual(expectOk(await c.whichUsersCan(perm), 200, `${label} which_users_can`), [], `${label} GET /api/which_users_can/${perm}`);
    });
  }
  await inParallel(tasks);
}

/** Cursors are bound to the client, the route and its path parameters; tampering is 400. */
async function verifyCursorBinding(a: Tenant, b: Tenant): Promise<void> {
  const m = a.model;
  const rolesWith2 = [...m.roles].filter(([, s]) => s.members.size >= 2).map(([r]) => r);
  const r1 = rolesWith2[0];
  if (r1 !== undefined) {
    const page = await a.client.members(r1, { limit: 1 });
    expectOk(page, 200, `${a.label} GET /api/members/${r1}?limit=1`);
    const cursor = page.nextCursor;
    assert.ok(cursor !== undefined, `${a.label} GET /api/members/${r1}?limit=1: next_cursor`);
    // Same route and parameters, other client.
    if (b.model.roles.has(r1)) expectErr(await b.client.members(r1, { cursor }), 400, `${b.label} GET /api/members/${r1} with ${a.label}'s cursor`, b.key);
    else {
      const res = await b.client.members(r1, { cursor });
      assert.ok(res.status === 400 || res.status === 404, `${b.label} GET /api/members/${r1} with ${a.label}'s cursor: ${describeRes(res)}`);
    }
    // Same client, other route.
    expectErr(await a.client.whichUsersCan('read', { cursor }), 400, `${a.label} GET /api/which_users_can/read with a members cursor`, a.key);
    expectErr(await a.client.listRoles({ cursor }), 400, `${a.label} GET /api/roles with a members cursor`, a.key);
    // Same route, other path parameter.
    const r2 = [...m.roles.keys()].find((r) => r !== r1);
    if (r2 !== undefined)
      expectErr(await a.client.members(r2, { cursor }), 400, `${a.label} GET /api/members/${r2} with the cursor of /api/members/${r1}`, a.key);
    // Tampered (first character changed) and garbage.
    const first = cursor[0] === 'A' ? 'B' : 'A';
    expectErr(await a.client.members(r1, { cursor: first + cursor.slice(1) }), 400, `${a.label} GET /api/members/${r1} with a tampered cursor`, a.key);
    expectErr(await a.client.members(r1, { cursor: 'not-a-cursor' }), 400, `${a.label} GET /api/members/${r1} with a garbage cursor`, a.key);
  }
  // Limits: 1..10000.
  for (const limit of [0, -1, 10001]) {
    expectErr(await a.client.listRoles({ limit }), 400, `${a.label} GET /api/roles?limit=${limit}`, a.key);
  }
  expectErr(await a.client.request('GET', '/api/roles?limit=abc'), 400, `${a.label} GET /api/roles?limit=abc`, a.key);
  assert.deepEqual(compact(expectOk(await a.client.listRoles({ limit: 10000 }), 200, `${a.label} GET /api/roles?limit=10000`)), compact(m.roleList()));
}

// ---- the test ---------------------------------------------------------------------------------

const OPS = Number(process.env.PROPERTY_OPS ?? 150);
const FORCED = process.env.PROPERTY_SEED;
const SEEDS: number[] =
  FORCED !== undefined && FORCED !== '' ? [Number.parseInt(FORCED, 10) >>> 0] : [randomInt(2 ** 31), randomInt(2 ** 31), randomInt(2 ** 31)];

let server: RunningServer;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

async function runSeed(seed: number, diagnostic: (msg: string) => void): Promise<void> {
  // Two tenants with their own sequences, interleaved, on the same name pools.
  const a = newTenant(server, 'tenant A', seed);
  const b = newTenant(server, 'tenant B', (seed ^ 0x5bd1e995) >>> 0);
  try {
    // Read everything once before the first write: an empty tenant is a state like any other, and
    // later writes must show through whatever that read left behind.
    await Promise.all([verify(a, false), verify(b, false)]);
    for (let i = 0; i < OPS; i++) {
      await step(a, i);
      await step(b, i);
      // Every so often a comparison of every read route, paged once in the middle.
      if ((i + 1) % 40 === 0 && i + 1 < OPS) {
        const paginate = (i + 1) % 80 === 0;
        await Promise.all([verify(a, paginate), verify(b, paginate)]);
      }
    }
    await Promise.all([verify(a, true), verify(b, true)]);
    await verifyCursorBinding(a, b);
    // The same key in upper case is the same client (§3).
    const upper = server.client(a.key.toUpperCase());
    assert.deepEqual(
      compact(expectOk(await upper.listRoles(), 200, 'upper-case key GET /api/roles')),
      compact(a.model.roleList()),
      'upper-case key sees the same client',
    );
    // A fresh tenant sees none of it.
    await verifyEmpty(server.client(), 'fresh tenant');
    for (const x of [a, b]) {
      const grants = [...x.model.roles.values()].reduce((n, r) => n + r.perms.size, 0);
      const members = [...x.model.roles.values()].reduce((n, r) => n + r.members.size, 0);
      diagnostic(
        `${x.label}: ${x.stats.ok} writes applied, ${x.stats.refused} refused as predicted; end state ${x.model.roles.size} roles, ${grants} grants, ${members} memberships, revision ${x.model.revision}`,
      );
    }
  } catch (err) {
    const tail = (t: Tenant): string => {
      const start = Math.max(0, t.log.length - 25);
      return t.log
        .slice(start)
        .map((line, i) => `  ${start + i}: ${squeeze(line)}`)
        .join('\n');
    };
    const warnings = server
      .output()
      .split('\n')
      .filter((l) => /"level":(40|50)[,}]/.test(l))
      .slice(-10);
    const message = [
      `property failure, replay with PROPERTY_SEED=${seed}`,
      err instanceof Error ? err.message : String(err),
      `last writes of ${a.label}:\n${tail(a)}`,
      `last writes of ${b.label}:\n${tail(b)}`,
      ...(warnings.length > 0 ? [`server warnings:\n${warnings.join('\n')}`] : []),
    ].join('\n');
    console.error(message);
    throw new Error(message, { cause: err });
  }
}

for (const seed of SEEDS) {
  test(`random write sequences match the model (seed ${seed}, ${OPS} ops × 2 tenants)`, async (t) => {
    t.diagnostic(`PROPERTY_SEED=${seed}`);
    const started = Date.now();
    await runSeed(seed, (msg) => t.diagnostic(msg));
    t.diagnostic(`${Date.now() - started} ms`);
  });
}
