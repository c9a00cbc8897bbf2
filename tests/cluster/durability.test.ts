/**
 * Durability (docs/operations.md §4 signals, docs/api.md §6 delete atomicity, §13 "nothing acknowledged is ever lost"):
 * acknowledged writes survive SIGKILL right after their acknowledgement; writes in flight at the
 * kill are all-or-nothing; SIGTERM/SIGINT exit 0 with the data on disk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import type { Change } from '../../src/authz/changes.ts';
import type { ApiResult, RbacClient } from '../../src/client/index.ts';
import { RbacModel, sorted } from '../../support/rbac-model.ts';
import { assertGone } from '../helpers/processes.ts';
import { show } from '../helpers/show.ts';

// ---- the tenants written to, each with the reference model of what it acknowledged ---------------

interface Tenant {
  key: string;
  model: RbacModel;
}

function newTenant(server: RunningServer): Tenant {
  return { key: server.client().key as string, model: new RbacModel() };
}

/** Why a request got no response (fetch's error and its cause). */
function reason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}`;
}

/** The server's own warnings and errors, to explain a failure. */
function serverLog(server: RunningServer): string {
  const lines = server
    .output()
    .split('\n')
    .filter((l) => /"level":(40|50)[,}]/.test(l) || (l.trim() !== '' && !l.startsWith('{')));
  return lines.length === 0 ? '(no warnings or errors in the server log)' : `server log:\n${lines.slice(-15).join('\n')}`;
}

/** Rethrows `err` with the server log appended. */
function explain(err: unknown, server: RunningServer): Error {
  const message = err instanceof Error ? err.message : String(err);
  return new Error(`${message}\n${serverLog(server)}`, { cause: err });
}

/** A write that must succeed; returns the revision it reports. */
function acked(res: ApiResult<{ revision: number }>, status: number, what: string): number {
  assert.equal(res.status, status, `${what}: ${show(res)}`);
  const rev = res.data?.revision;
  assert.equal(typeof rev, 'number', `${what}: data.revision`);
  return rev as number;
}

type Write =
  | { op: 'create'; role: string; description: string }
  | { op: 'delete'; role: string }
  | { op: 'grant' | 'revoke'; role: string; perm: string }
  | { op: 'add' | 'remove'; role: string; user: string };

function send(c: RbacClient, w: Write): Promise<ApiResult<{ revision: number }>> {
  switch (w.op) {
    case 'create':
      return c.createRole(w.role, { description: w.description });
    case 'delete':
      return c.deleteRole(w.role);
    case 'grant':
      return c.grant(w.role, w.perm);
    case 'revoke':
      return c.revoke(w.role, w.perm);
    case 'add':
      return c.addMember(w.user, w.role);
    case 'remove':
      return c.removeMember(w.user, w.role);
  }
}

function expectedStatus(w: Write): number {
  return w.op === 'create' || w.op === 'grant' || w.op === 'add' ? 201 : 200;
}

/** The write as the change it commits. */
function changeOf(w: Write): Change {
  switch (w.op) {
    case 'create':
      return { op: 'role.create', role: w.role, description: w.description };
    case 'delete':
      return { op: 'role.delete', role: w.role };
    case 'grant':
    case 'revoke':
      return { op: w.op === 'grant' ? 'permission.grant' : 'permission.revoke', role: w.role, permission: w.perm };
    case 'add':
    case 'remove':
      return { op: w.op === 'add' ? 'membership.add' : 'membership.remove', role: w.role, user: w.user };
  }
}

/** Records an acknowledged write in the tenant's model (its revision + 1). */
function applyToModel(t: Tenant, w: Write): void {
  t.model.apply(changeOf(w));
}

function label(w: Write): string {
  return `${w.op} ${w.role}${'perm' in w ? ` ${w.perm}` : ''}${'user' in w ? ` ${w.user}` : ''}`;
}

/** Sends writes one after the other; each must succeed with revision + 1. */
async function sequential(c: RbacClient, t: Tenant, writes: readonly Write[]): Promise<void> {
  for (const w of writes) {
    const rev = acked(await send(c, w), expectedStatus(w), label(w));
    assert.equal(rev, t.model.revision + 1, `${label(w)}: revision`);
    applyToModel(t, w);
  }
}

/** Sends independent writes all at once; each must succeed and together they take the next revisions. */
async function burst(c: RbacClient, t: Tenant, writes: readonly Write[]): Promise<void> {
  const settled = await Promise.allSettled(writes.map((w) => send(c, w)));
  const lost = settled.flatMap((s, i) => (s.status === 'rejected' ? [`${label(writes[i] as Write)}: ${reason(s.reason)}`] : []));
  assert.equal(
    lost.length,
    0,
    `${lost.length} of ${writes.length} concurrent writes got no response from a running server:\n  ${lost.slice(0, 5).join('\n  ')}`,
  );
  const results = settled.map((s) => (s as PromiseFulfilledResult<ApiResult<{ revision: number }>>).value);
  const revs = results.map((res, i) => acked(res, expectedStatus(writes[i] as Write), label(writes[i] as Write)));
  assert.deepEqual(
    [...revs].sort((a, b) => a - b),
    Array.from({ length: writes.length }, (_, i) => t.model.revision + 1 + i),
    'a burst of writes takes consecutive revisions, one each',
  );
  for (const w of writes) applyToModel(t, w);
}

/** The server's view of a tenant equals the model, revision included. */
async function verifyTenant(server: RunningServer, t: Tenant, what: string): Promise<void> {
  const c = server.client(t.key);
  const m = t.model;
  const roles = await c.listRoles();
  assert.equal(roles.status, 200, `${what}: GET /api/roles ${show(roles)}`);
  assert.deepEqual(roles.data, m.roleList(), `${what}: roles`);
  assert.equal(roles.revision, m.revision, `${what}: X-Authz-Revision`);
  await Promise.all(
    [...m.roles.keys()].map(async (role) => {
      const [rp, mem] = await Promise.all([c.rolePermissions(role), c.members(role)]);
      assert.deepEqual(rp.data, m.rolePermissions(role), `${what}: GET /api/role_permissions/${role} ${show(rp)}`);
      assert.deepEqual(mem.data, m.members(role), `${what}: GET /api/members/${role} ${show(mem)}`);
    }),
  );
  await Promise.all(
    m.userNames().map(async (user) => {
      const res = await c.userRoles(user);
      assert.deepEqual(res.data, m.userRoles(user), `${what}: GET /api/user_roles/${user} ${show(res)}`);
    }),
  );
  await Promise.all(
    m.permissionNames().map(async (perm) => {
      const res = await c.whichRolesCan(perm);
      assert.deepEqual(res.data, m.whichRolesCan(perm), `${what}: GET /api/which_roles_can/${perm} ${show(res)}`);
    }),
  );
}

/** SIGKILL at once (no await between the acknowledgement and the signal), then wait for the exit. */
async function killNow(server: RunningServer): Promise<void> {
  server.proc.kill('SIGKILL');
  await server.exited;
}

// ---- the writes -------------------------------------------------------------------------------

function sequentialPlan(prefix: string): Write[] {
  const w: Write[] = [];
  for (let i = 0; i < 10; i++) {
    const role = `${prefix}.role-${String(i).padStart(2, '0')}`;
    w.push({ op: 'create', role, description: i % 3 === 0 ? '' : `Role ${i} — ✓ "${prefix}"` });
    for (let p = 0; p < 4; p++) w.push({ op: 'grant', role, perm: `perm:${(i + p) % 7}` });
    for (let u = 0; u < 4; u++) w.push({ op: 'add', role, user: `user${(i * 3 + u) % 11}@example.com` });
    if (i % 2 === 1) w.push({ op: 'revoke', role, perm: `perm:${i % 7}` });
    if (i % 3 === 1) w.push({ op: 'remove', role, user: `user${(i * 3) % 11}@example.com` });
  }
  w.push({ op: 'delete', role: `${prefix}.role-04` });
  w.push({ op: 'delete', role: `${prefix}.role-09` });
  return w;
}

async function burstPlan(c: RbacClient, t: Tenant, prefix: string): Promise<void> {
  const roles = Array.from({ length: 24 }, (_, i) => `${prefix}.B${String(i).padStart(2, '0')}`);
  await burst(
    c,
    t,
    roles.map((role, i) => ({ op: 'create', role, description: `burst ${i}` })),
  );
  const edges: Write[] = [];
  for (const [i, role] of roles.entries()) {
    for (let p = 0; p < 3; p++) edges.push({ op: 'grant', role, perm: `bp${(i + p) % 9}` });
    for (let u = 0; u < 3; u++) edges.push({ op: 'add', role, user: `bu${(i + u) % 13}` });
  }
  await burst(c, t, edges);
  const changes: Write[] = [];
  for (const [i, role] of roles.entries()) {
    if (i % 5 === 0) changes.push({ op: 'delete', role });
    else if (i % 5 === 1) changes.push({ op: 'revoke', role, perm: `bp${i % 9}` });
    else if (i % 5 === 2) changes.push({ op: 'remove', role, user: `bu${i % 13}` });
  }
  await burst(c, t, changes);
}

// ---- tests ------------------------------------------------------------------------------------
// Start-ups are the expensive part (a few seconds each on a busy 2-core machine), so each test
// chains its crash cycles on one file, alternating AUTH_WORKERS=1 and 2.

test('acknowledged writes (sequential and concurrent) survive SIGKILL right after the acknowledgement', async () => {
  const tmp = tempDir('rbac-durability-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
  try {
    const seq = newTenant(server);
    const conc = newTenant(server);
    const mixed = newTenant(server);
    await Promise.all([sequential(server.client(seq.key), seq, sequentialPlan('s1')), burstPlan(server.client(conc.key), conc, 'c1')]);
    // The last acknowledged write, then SIGKILL in the same tick.
    const last = await server.client(mixed.key).createRole('last-one', { description: 'acknowledged just before the kill' });
    server.proc.kill('SIGKILL');
    const lastRevision = acked(last, 201, 'create last-one');
    applyToModel(mixed, { op: 'create', role: 'last-one', description: 'acknowledged just before the kill' });
    mixed.model.revision = lastRevision;
    await killNow(server);
    await assertGone(server);

    // Second cycle on the recovered file, with two workers: more writes on the same tenants, a
    // concurrent burst across tenants as the very last thing, SIGKILL as soon as it is answered.
    server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '2' } });
    await verifyTenant(server, seq, 'after the 1st SIGKILL, sequential tenant');
    await verifyTenant(server, conc, 'after the 1st SIGKILL, concurrent tenant');
    await verifyTenant(server, mixed, 'after the 1st SIGKILL, last-write tenant');
    await Promise.all([sequential(server.client(seq.key), seq, sequentialPlan('s2')), burstPlan(server.client(conc.key), conc, 'c2')]);
    const finalWrites: Array<[Tenant, Write]> = [];
    for (let i = 0; i < 20; i++) {
      finalWrites.push([mixed, { op: 'grant', role: 'last-one', perm: `final${i}` }]);
      finalWrites.push([seq, { op: 'add', role: 's2.role-00', user: `final-user-${i}` }]);
    }
    const results = await Promise.all(finalWrites.map(([t, w]) => send(server.client(t.key), w)));
    server.proc.kill('SIGKILL');
    for (const [i, res] of results.entries()) {
      const [t, w] = finalWrites[i] as [Tenant, Write];
      acked(res, 201, label(w));
      applyToModel(t, w);
    }
    await killNow(server);
    await assertGone(server);

    server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
    await verifyTenant(server, seq, 'after the 2nd SIGKILL (AUTH_WORKERS=2), sequential tenant');
    await verifyTenant(server, conc, 'after the 2nd SIGKILL (AUTH_WORKERS=2), concurrent tenant');
    await verifyTenant(server, mixed, 'after the 2nd SIGKILL (AUTH_WORKERS=2), last-write tenant');
    assert.equal(await server.stop(), 0, 'exit code after SIGTERM');
  } catch (err) {
    throw explain(err, server);
  } finally {
    await server.kill();
    tmp.cleanup();
  }
});

interface Round {
  what: string;
  tenant: Tenant;
  /** Revision before the writes in flight. */
  base: number;
  oldRoles: string[];
  newRoles: string[];
  perms: string[];
  users: string[];
  /** Roles whose delete or create was answered before the kill. */
  acked: Set<string>;
  sent: number;
}

/**
 * On a running server: a tenant with roles full of grants and members, then the deletes of all of
 * them and as many creates in flight at once, SIGKILL as soon as the first answer arrives.
 */
async function fireAndKill(server: RunningServer, what: string): Promise<Round> {
  const tenant = newTenant(server);
  const c = server.client(tenant.key);
  const OLD = 8;
  const perms = Array.from({ length: 20 }, (_, i) => `p${String(i).padStart(2, '0')}`);
  const users = Array.from({ length: 20 }, (_, i) => `u${String(i).padStart(2, '0')}@example.com`);
  const oldRoles = Array.from({ length: OLD }, (_, i) => `old-${i}`);
  await burst(
    c,
    tenant,
    oldRoles.map((role) => ({ op: 'create', role, description: `old ${role}` })),
  );
  const edges: Write[] = [];
  for (const role of oldRoles) {
    for (const perm of perms) edges.push({ op: 'grant', role, perm });
    for (const user of users) edges.push({ op: 'add', role, user });
  }
  await burst(c, tenant, edges);
  const base = tenant.model.revision;

  const newRoles = Array.from({ length: OLD }, (_, i) => `new-${i}`);
  const inflight: Write[] = [];
  for (let i = 0; i < OLD; i++) {
    inflight.push({ op: 'delete', role: oldRoles[i] as string });
    inflight.push({ op: 'create', role: newRoles[i] as string, description: `new ${i} ✓` });
  }
  const promises = inflight.map((w) => send(c, w));
  await Promise.race(promises);
  server.proc.kill('SIGKILL');
  const settled = await Promise.allSettled(promises);
  await killNow(server);
  const ackedRoles = new Set<string>();
  for (const [i, s] of settled.entries()) {
    const w = inflight[i] as Write;
    if (s.status === 'fulfilled') {
      assert.equal(s.value.status, expectedStatus(w), `${what}: ${label(w)} answered before the kill: ${show(s.value)}`);
      ackedRoles.add(w.role);
    }
  }
  await assertGone(server);
  return { what, tenant, base, oldRoles, newRoles, perms, users, acked: ackedRoles, sent: inflight.length };
}

/** After the restart: each write of the round wholly there or wholly absent, every answered one there. */
async function verifyRound(server: RunningServer, r: Round, diagnostic: (msg: string) => void): Promise<void> {
  const { what, perms, users } = r;
  const c = server.client(r.tenant.key);
  let applied = 0;
  const presentOld: string[] = [];
  for (const role of r.oldRoles) {
    const [rp, mem] = await Promise.all([c.rolePermissions(role), c.members(role)]);
    if (rp.status === 200) {
      // Not deleted: complete.
      assert.ok(!r.acked.has(role), `${what}: delete of ${role} was acknowledged (200) but the role is back after restart`);
      assert.deepEqual(
        rp.data,
        perms.map((name) => ({ name })),
        `${what}: ${role} kept all its grants`,
      );
      assert.equal(mem.status, 200, `${what}: GET /api/members/${role}: ${show(mem)}`);
      assert.deepEqual(
        mem.data,
        users.map((user) => ({ user })),
        `${what}: ${role} kept all its members`,
      );
      presentOld.push(role);
    } else {
      assert.equal(rp.status, 404, `${what}: GET /api/role_permissions/${role}: ${show(rp)}`);
      assert.equal(mem.status, 404, `${what}: GET /api/members/${role} of a deleted role: ${show(mem)}`);
      applied++;
    }
  }
  const presentNew: string[] = [];
  for (const role of r.newRoles) {
    const rp = await c.rolePermissions(role);
    if (rp.status === 200) {
      assert.deepEqual(rp.data, [], `${what}: new role ${role} has no grants`);
      presentNew.push(role);
      applied++;
    } else {
      assert.equal(rp.status, 404, `${what}: GET /api/role_permissions/${role}: ${show(rp)}`);
      assert.ok(!r.acked.has(role), `${what}: create of ${role} was acknowledged (201) but the role is missing after restart`);
    }
  }
  const roles = await c.listRoles();
  assert.equal(roles.status, 200, show(roles));
  const description = (role: string): string => (role.startsWith('old-') ? `old ${role}` : `new ${role.slice(4)} ✓`);
  assert.deepEqual(
    roles.data,
    sorted([...presentOld, ...presentNew]).map((role) => ({ role, description: description(role) })),
    `${what}: GET /api/roles after restart`,
  );
  // Every committed write is one revision: the revision counts exactly what is there.
  assert.equal(roles.revision, r.base + applied, `${what}: X-Authz-Revision = ${r.base} + ${applied} applied writes`);
  // No leftovers of deleted roles in any direction.
  const oldSorted = sorted(presentOld).map((role) => ({ role }));
  for (const perm of [perms[0] as string, perms[19] as string]) {
    const res = await c.whichRolesCan(perm);
    assert.deepEqual(res.data, oldSorted, `${what}: GET /api/which_roles_can/${perm}`);
    const holders = await c.whichUsersCan(perm);
    assert.deepEqual(holders.data, presentOld.length > 0 ? users.map((user) => ({ user })) : [], `${what}: GET /api/which_users_can/${perm}`);
  }
  for (const user of [users[0] as string, users[13] as string]) {
    const res = await c.userRoles(user);
    assert.deepEqual(res.data, oldSorted, `${what}: GET /api/user_roles/${user}`);
    const held = await c.userPermissions(user);
    assert.deepEqual(held.data, presentOld.length > 0 ? perms.map((name) => ({ name })) : [], `${what}: GET /api/user_permissions/${user}`);
    const check = await c.hasPermission(user, perms[0] as string);
    assert.deepEqual(check.data, { has_permission: presentOld.length > 0 }, `${what}: GET /api/has_permission/${user}/${perms[0]}`);
  }
  diagnostic(`${what}: ${r.acked.size}/${r.sent} answered before the kill, ${applied} applied, ${presentOld.length} old roles kept`);
  // From now on the tenant's model is what was recovered.
  const recovered = r.tenant.model;
  recovered.roles.clear();
  for (const role of presentOld) recovered.roles.set(role, { description: description(role), perms: new Set(perms), members: new Set(users) });
  for (const role of presentNew) recovered.roles.set(role, { description: description(role), perms: new Set(), members: new Set() });
  recovered.revision = r.base + applied;
}

test('writes in flight at SIGKILL are all-or-nothing; every acknowledged one is there', async (t) => {
  const tmp = tempDir('rbac-durability-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  const earlier: Tenant[] = [];
  let server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
  try {
    for (const [round, workers] of [1, 2].entries()) {
      const r = await fireAndKill(server, `round ${round} (AUTH_WORKERS=${workers})`);
      server = await startServer({ sqlitePath, env: { AUTH_WORKERS: String(3 - workers) } });
      await verifyRound(server, r, (msg) => t.diagnostic(msg));
      // Earlier rounds' tenants are untouched by this crash.
      for (const e of earlier) await verifyTenant(server, e, `${r.what}: earlier tenant`);
      earlier.push(r.tenant);
    }
    assert.equal(await server.stop(), 0, 'exit code after SIGTERM');
  } catch (err) {
    throw explain(err, server);
  } finally {
    await server.kill();
    tmp.cleanup();
  }
});

test('SIGTERM (two workers) and SIGINT (one): exit code 0, every answered write on disk', async (t) => {
  const tmp = tempDir('rbac-durability-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '2' } });
  try {
    const tenant = newTenant(server);
    const c = server.client(tenant.key);
    await sequential(c, tenant, sequentialPlan('t1'));
    const base = tenant.model.revision;
    const roles = Array.from({ length: 40 }, (_, i) => `term-${String(i).padStart(2, '0')}`);
    const promises = roles.map((role) => c.createRole(role, { description: role }));
    await Promise.race(promises);
    const started = Date.now();
    server.proc.kill('SIGTERM');
    const settled = await Promise.allSettled(promises);
    const code = await server.exited;
    assert.equal(code, 0, `exit code after SIGTERM; output tail:\n${server.output().slice(-2000)}`);
    // Within the grace: a worker still running after it is killed by the primary, which says so
    // and exits 1. How long the stop took is reported.
    assert.doesNotMatch(server.output(), /workers did not stop in time/, 'the workers stopped within the grace');
    t.diagnostic(`SIGTERM with writes in flight: exit after ${Date.now() - started} ms`);
    const answered = new Set<string>();
    for (const [i, s] of settled.entries()) {
      if (s.status !== 'fulfilled') continue;
      // Requests in flight finish; one that arrived after the signal may be refused with 503.
      assert.ok(s.value.status === 201 || s.value.status === 503, `POST /api/role/${roles[i]} during shutdown: ${show(s.value)}`);
      if (s.value.status === 201) answered.add(roles[i] as string);
    }
    await assertGone(server);

    server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
    const c2 = server.client(tenant.key);
    const list = await c2.listRoles();
    assert.equal(list.status, 200, show(list));
    const names = new Set((list.data ?? []).map((r) => r.role));
    for (const role of answered) assert.ok(names.has(role), `${role} was acknowledged before SIGTERM but is missing after restart`);
    const appliedBurst = roles.filter((r) => names.has(r));
    assert.equal(list.revision, base + appliedBurst.length, 'X-Authz-Revision counts exactly the applied writes');
    for (const role of appliedBurst) tenant.model.roles.set(role, { description: role, perms: new Set(), members: new Set() });
    tenant.model.revision = base + appliedBurst.length;
    await verifyTenant(server, tenant, 'after SIGTERM');

    // SIGINT: exit 0 and the last acknowledged write kept.
    const last = await server.client(tenant.key).createRole('after-sigint', { description: 'x' });
    const lastRevision = acked(last, 201, 'create after-sigint');
    applyToModel(tenant, { op: 'create', role: 'after-sigint', description: 'x' });
    tenant.model.revision = lastRevision;
    const sigintAt = Date.now();
    server.proc.kill('SIGINT');
    assert.equal(await server.exited, 0, `exit code after SIGINT; output tail:\n${server.output().slice(-2000)}`);
    t.diagnostic(`SIGINT of an idle server: exit after ${Date.now() - sigintAt} ms`);
    await assertGone(server);

    server = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
    await verifyTenant(server, tenant, 'after SIGINT');
    assert.equal(await server.stop(), 0, 'exit code after SIGTERM of an idle server');
  } catch (err) {
    throw explain(err, server);
  } finally {
    await server.kill();
    tmp.cleanup();
  }
});
