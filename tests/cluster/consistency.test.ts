/**
 * Multi-process mode (docs/operations.md §4 signals, docs/api.md §10 the change feed, §9
 * consistency): AUTH_WORKERS workers share one port (SO_REUSEPORT), so a request on a brand-new
 * TCP connection lands on a worker the kernel picks. Read-your-writes holds on every connection; concurrent
 * writers get unique, gapless revisions, and the changelog and every worker agree with what was
 * acknowledged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  changeOf,
  start,
  startTimes,
  warnings,
  freshGet,
  opKey,
  expectedStatus,
  sendOp,
  entryKey,
  allChanges,
  assertGapless,
  errorCode,
  type Op,
} from '../helpers/cluster.ts';
import { answeredBy, rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { RbacModel, sorted } from '../../support/rbac-model.ts';
import { show } from '../helpers/show.ts';

// ---- 1. read-your-writes on every connection -----------------------------------------------------

test('1. zero stale reads: 2,000 alternating grant/revoke, each read on a new TCP connection', { timeout: 300_000 }, async (t) => {
  const server = await start(4);
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    let revision = 2;
    const OPS = 2000;
    let done = 0;
    let stale = 0;
    let behind = 0;
    const examples: string[] = [];
    const readErrors: string[] = [];
    const answering = new Set<string>();
    const started = Date.now();
    for (let i = 0; i < OPS; i++) {
      const grant = i % 2 === 0;
      const op: Op = { kind: grant ? 'grant' : 'revoke', role: 'R', perm: 'doc.read' };
      // Writes alternate between one keep-alive connection and new ones, so they come from varied workers.
      const w = await sendOp(server.port, key, op, i % 4 < 2 ? keepAlive : false);
      assert.equal(w.status, expectedStatus(op), `op ${i} ${opKey(op)}: ${show(w)}`);
      assert.equal(w.data?.revision, revision + 1, `op ${i} ${opKey(op)}: revision is the next one`);
      revision++;
      const r = await freshGet<{ has_permission: boolean }>(server.port, key, '/api/has_permission/alice/doc.read', readErrors);
      answering.add(answeredBy(r));
      if (r.status !== 200 || r.data?.has_permission !== grant) {
        stale++;
        if (examples.length < 5) examples.push(`op ${i} (${op.kind}, revision ${revision}): read answered ${show(r)} X-Authz-Revision ${r.revision}`);
      }
      if (r.revision === undefined || r.revision < revision) {
        behind++;
        if (examples.length < 5) examples.push(`op ${i}: read X-Authz-Revision ${r.revision} < write revision ${revision}`);
      }
      done++;
    }
    t.diagnostic(
      `${done} write+read pairs in ${Date.now() - started} ms; answered by ${answering.size} worker processes; ${readErrors.length} connection errors`,
    );
    assert.equal(stale, 0, `${stale} stale answers out of ${done} reads on new connections; first: ${examples.join(' | ')}`);
    assert.equal(behind, 0, `${behind} reads carried an X-Authz-Revision older than the write just acknowledged; first: ${examples.join(' | ')}`);
    assert.deepEqual(readErrors, [], 'no connection errors while every worker is healthy');
  } finally {
    keepAlive.destroy();
    await server.kill();
  }
});

// ---- 2. concurrent writers ---------------------------------------------------------------------

test('2. concurrent writers: revisions unique and gapless, changelog and every worker agree', { timeout: 180_000 }, async (t) => {
  const server = await start(4);
  const CLIENTS = 16;
  const WRITES = 40;
  const ROLES = ['R0', 'R1', 'R2', 'R3'];
  const agents = Array.from({ length: CLIENTS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const key = randomUUID();
    const acked = new Map<number, string>(); // revision → op key
    const ackedRevs: number[] = [];
    const failures: string[] = [];
    for (const role of ROLES) {
      const res = await rawRequest<{ revision: number }>({ port: server.port, key, method: 'POST', path: `/api/role/${role}`, timeoutMs: 15_000 });
      assert.equal(res.status, 201, `create ${role}: ${show(res)}`);
      const rev = res.data?.revision as number;
      ackedRevs.push(rev);
      acked.set(rev, `role.create ${role}`);
    }
    const model = RbacModel.of(ROLES.map((role) => ({ op: 'role.create', role, description: '' })));
    const revoked: Array<{ role: string; perm: string }> = [];

    const plan = (i: number, j: number): Op => {
      const role = ROLES[i % ROLES.length] as string;
      if (j % 10 === 4) return { kind: 'revoke', role, perm: `p.${i}.${j - 4}` };
      if (j % 10 === 9) return { kind: 'remove', role, user: `u.${i}.${j - 7}` };
      if (j % 5 < 2) return { kind: 'grant', role, perm: `p.${i}.${j}` };
      return { kind: 'add', role, user: `u.${i}.${j}` };
    };
    const started = Date.now();
    await Promise.all(
      agents.map(async (agent, i) => {
        for (let j = 0; j < WRITES; j++) {
          const op = plan(i, j);
          let res: RawResult<{ revision: number }>;
          try {
            res = await sendOp(server.port, key, op, agent);
          } catch (err) {
            failures.push(`client ${i} ${opKey(op)}: ${errorCode(err)}`);
            continue;
          }
          if (res.status !== expectedStatus(op) || typeof res.data?.revision !== 'number') {
            failures.push(`client ${i} ${opKey(op)}: ${show(res)}`);
            continue;
          }
          ackedRevs.push(res.data.revision);
          if (acked.has(res.data.revision)) failures.push(`revision ${res.data.revision} acknowledged twice: ${acked.get(res.data.revision)} and ${opKey(op)}`);
          acked.set(res.data.revision, opKey(op));
          model.apply(changeOf(op));
          if (op.kind === 'revoke') revoked.push({ role: op.role, perm: op.perm });
        }
      }),
    );
    const N = ROLES.length + CLIENTS * WRITES;
    t.diagnostic(`${ackedRevs.length} writes acknowledged in ${Date.now() - started} ms`);
    assert.deepEqual(failures, [], `every write of the plan succeeds; log:\n${warnings(server)}`);
    assert.equal(ackedRevs.length, N, 'every write was acknowledged');
    assert.deepEqual(
      [...ackedRevs].sort((a, b) => a - b),
      Array.from({ length: N }, (_, i) => i + 1),
      `the acknowledged revisions are exactly 1..${N}, each once`,
    );

    // The changelog lists exactly those revisions, with the acknowledged ops.
    const { entries, pages } = await allChanges(server.port, key, 100);
    assert.equal(pages, Math.ceil(N / 100), 'pages of 100');
    assertGapless(entries, 'after the concurrent writes');
    assert.equal(entries.length, N, `/api/changes lists ${N} revisions`);
    const mismatched = entries
      .filter((e) => acked.get(e.revision) !== entryKey(e))
      .map((e) => `revision ${e.revision}: listed ${entryKey(e)}, acknowledged ${acked.get(e.revision)}`);
    assert.deepEqual(mismatched.slice(0, 10), [], `/api/changes entries match the acknowledged ops (${mismatched.length} differ)`);

    // Every worker answers the same, at revision N: one request per new TCP connection.
    const problems: string[] = [];
    const errors: string[] = [];
    const answering = new Set<string>();
    const users = ROLES.map((r) => sorted(model.roles.get(r)?.members ?? []));
    const perms = ROLES.map((r) => sorted(model.roles.get(r)?.perms ?? []));
    const ROUNDS = 48;
    for (let k = 0; k < ROUNDS; k++) {
      const ri = k % ROLES.length;
      const role = ROLES[ri] as string;
      const rUsers = users[ri] ?? [];
      const rPerms = perms[ri] ?? [];
      const otherPerms = perms[(ri + 1) % ROLES.length] ?? [];
      const user = rUsers[k % rUsers.length] as string;
      const perm = rPerms[(k * 7) % rPerms.length] as string;
      const gone = revoked.filter((x) => x.role === role)[k % 8]?.perm ?? 'p.never';
      const checks: Array<[string, unknown]> = [
        [`/api/role_permissions/${role}`, rPerms.map((name) => ({ name }))],
        [`/api/members/${role}`, rUsers.map((u) => ({ user: u }))],
        [`/api/has_permission/${user}/${perm}`, { has_permission: true }],
        [`/api/has_permission/${user}/${gone}`, { has_permission: false }],
        [`/api/has_permission/${user}/${otherPerms[k % otherPerms.length] ?? 'p.none'}`, { has_permission: false }],
      ];
      for (const [path, expected] of checks) {
        const res = await freshGet(server.port, key, path, errors);
        answering.add(answeredBy(res));
        if (res.status !== 200) problems.push(`${path}: ${show(res)}`);
        else if (JSON.stringify(res.data) !== JSON.stringify(expected))
          problems.push(`${path}: got ${JSON.stringify(res.data).slice(0, 200)}, expected ${JSON.stringify(expected).slice(0, 200)}`);
        if (res.revision !== N) problems.push(`${path}: X-Authz-Revision ${res.revision}, expected ${N}`);
      }
    }
    t.diagnostic(`${ROUNDS * 5} reads on new connections, answered by ${answering.size} worker processes`);
    assert.deepEqual(problems.slice(0, 10), [], `every worker agrees with the acknowledged writes (${problems.length} disagreements)`);
    assert.deepEqual(errors, [], 'no connection errors');
  } finally {
    for (const a of agents) a.destroy();
    await server.kill();
  }
});

test.after(() => {
  process.stdout.write(`# server start-up times (ms): ${startTimes.join(', ')}\n`);
});
