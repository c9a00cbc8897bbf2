/**
 * Multi-process mode (docs/operations.md §4 signals, docs/api.md §10 the change feed, §9 consistency): AUTH_WORKERS
 * workers share one port (SO_REUSEPORT), so a request on a brand-new TCP connection lands on a
 * worker the kernel picks. Read-your-writes must hold on every connection; revisions are unique
 * and gapless; a killed, stalled or stopping worker never loses or half-applies an acknowledged
 * write. Every loop is bounded in count and in time (the machine has 2 cores).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { RawError, rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { sleep } from '../helpers/wait.ts';
import { show } from '../helpers/show.ts';

// ---- helpers ------------------------------------------------------------------------------------

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort(byCodePoint);

/** Milliseconds each server took to start (diagnostics). */
const startTimes: number[] = [];

async function start(workers: number, sqlitePath?: string): Promise<RunningServer> {
  const t0 = Date.now();
  const server = await startServer({
    env: { AUTH_WORKERS: String(workers), AUTH_LOG_LEVEL: 'debug' },
    ...(sqlitePath === undefined ? {} : { sqlitePath }),
  });
  // "listening" comes when every worker reported ready; their own debug line may trail it a little.
  await waitUntil(`${workers} "worker ready" log lines`, 10_000, () => (readyPids(server).length >= workers ? true : undefined));
  startTimes.push(Date.now() - t0);
  return server;
}

interface LogLine {
  readonly msg?: unknown;
  readonly pid?: unknown;
  readonly role?: unknown;
  readonly restarts?: unknown;
  readonly signal?: unknown;
  readonly [field: string]: unknown;
}

function logLines(server: RunningServer): LogLine[] {
  const out: LogLine[] = [];
  for (const line of server.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line still being written
    }
  }
  return out;
}

/** Pids of workers that logged "worker ready", in order. */
function readyPids(server: RunningServer): number[] {
  const pids: number[] = [];
  for (const l of logLines(server)) {
    if (l.msg === 'worker ready' && l.role === 'worker' && typeof l.pid === 'number' && !pids.includes(l.pid)) pids.push(l.pid);
  }
  return pids;
}

/** The service's warn and error log lines, for assertion messages. */
function warnings(server: RunningServer): string {
  const lines = server.output().split('\n').filter((l) => /"level":"(warn|error)"/.test(l) || (l.length > 0 && !l.startsWith('{')));
  return lines.length === 0 ? '(no warnings in the log)' : lines.slice(0, 20).join('\n');
}

function logsAbout(server: RunningServer, pid: number): string {
  return logLines(server)
    .filter((l) => l.pid === pid || l.level === 'warn' || l.level === 'error')
    .map((l) => JSON.stringify(l))
    .join('\n');
}

/** Polls `probe` every 50 ms until it returns a value; fails after `timeoutMs`. */
async function waitUntil<T>(what: string, timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 10_000; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The process-unique prefix of a generated X-Request-Id: tells which worker answered (diagnostics only). */
function answeredBy(res: RawResult): string {
  const id = res.headers['x-request-id'];
  return typeof id === 'string' ? (id.split('-')[0] ?? id) : '?';
}

/** A GET on a brand-new TCP connection, retried (bounded) on connection errors, which are counted. */
async function freshGet<T>(port: number, key: string, path: string, errors?: string[], attempts = 4): Promise<RawResult<T>> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await rawRequest<T>({ port, key, path, timeoutMs: 10_000 });
    } catch (err) {
      if (!(err instanceof RawError)) throw err;
      errors?.push(`${path}: ${err.message}`);
      last = err;
      await sleep(30);
    }
  }
  throw last;
}

type Op =
  | { readonly kind: 'grant' | 'revoke'; readonly role: string; readonly perm: string }
  | { readonly kind: 'add' | 'remove'; readonly role: string; readonly user: string };

const OP_NAME = { grant: 'permission.grant', revoke: 'permission.revoke', add: 'membership.add', remove: 'membership.remove' } as const;

function opKey(op: Op): string {
  return 'perm' in op ? `${OP_NAME[op.kind]} ${op.role} perm=${op.perm}` : `${OP_NAME[op.kind]} ${op.role} user=${op.user}`;
}

function expectedStatus(op: Op): number {
  return op.kind === 'grant' || op.kind === 'add' ? 201 : 200;
}

/** The status a retry gets when the attempt whose answer was lost had committed. */
function alreadyDoneStatus(op: Op): number {
  return op.kind === 'grant' || op.kind === 'add' ? 409 : 404;
}

function sendOp(port: number, key: string, op: Op, agent: http.Agent | false, timeoutMs = 15_000): Promise<RawResult<{ revision: number }>> {
  const e = encodeURIComponent;
  const path = 'perm' in op ? `/api/permission/${e(op.role)}/${e(op.perm)}` : `/api/membership/${e(op.user)}/${e(op.role)}`;
  const method = op.kind === 'grant' || op.kind === 'add' ? 'POST' : 'DELETE';
  return rawRequest<{ revision: number }>({ port, key, method, path, agent, timeoutMs });
}

interface ChangeEntry {
  revision: number;
  op: string;
  role: string;
  permission?: string;
  user?: string;
  timestamp: string;
}

function entryKey(e: ChangeEntry): string {
  if (e.op === 'permission.grant' || e.op === 'permission.revoke') return `${e.op} ${e.role} perm=${e.permission ?? '(missing)'}`;
  if (e.op === 'membership.add' || e.op === 'membership.remove') return `${e.op} ${e.role} user=${e.user ?? '(missing)'}`;
  return `${e.op} ${e.role}`;
}

/** The whole changelog after `since`, following next_cursor, every page on a new connection. */
async function allChanges(port: number, key: string, limit = 100, since = 0): Promise<{ entries: ChangeEntry[]; pages: number }> {
  const entries: ChangeEntry[] = [];
  let cursor: string | undefined;
  for (let page = 1; page <= 2000; page++) {
    const qs = `since=${since}&limit=${limit}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res = await freshGet<ChangeEntry[]>(port, key, `/api/changes?${qs}`);
    assert.equal(res.status, 200, `GET /api/changes?${qs}: ${show(res)}`);
    assert.ok(Array.isArray(res.data), `GET /api/changes?${qs}: data is an array`);
    assert.ok(res.data.length <= limit, `GET /api/changes?${qs}: at most ${limit} entries, got ${res.data.length}`);
    entries.push(...res.data);
    if (res.nextCursor === undefined) return { entries, pages: page };
    cursor = res.nextCursor;
  }
  assert.fail('GET /api/changes: more than 2000 pages');
}

/** Revisions must be exactly 1..n, ascending. Returns n. */
function assertGapless(entries: readonly ChangeEntry[], what: string): number {
  const revs = entries.map((e) => e.revision);
  const expected = Array.from({ length: revs.length }, (_, i) => i + 1);
  if (revs.some((r, i) => r !== expected[i])) {
    const missing = expected.filter((r) => !revs.includes(r)).slice(0, 20);
    const dups = revs.filter((r, i) => revs.indexOf(r) !== i).slice(0, 20);
    assert.fail(`${what}: revisions in /api/changes are not exactly 1..${revs.length}: missing ${JSON.stringify(missing)}, duplicated ${JSON.stringify(dups)}, first ${JSON.stringify(revs.slice(0, 10))}`);
  }
  return revs.length;
}

/** What the changelog says each role holds: grants and members, replayed in order. */
function replay(entries: readonly ChangeEntry[]): Map<string, { perms: Set<string>; members: Set<string> }> {
  const roles = new Map<string, { perms: Set<string>; members: Set<string> }>();
  for (const e of entries) {
    const r = roles.get(e.role) ?? { perms: new Set<string>(), members: new Set<string>() };
    roles.set(e.role, r);
    if (e.op === 'role.delete') roles.delete(e.role);
    else if (e.op === 'permission.grant' && e.permission !== undefined) r.perms.add(e.permission);
    else if (e.op === 'permission.revoke' && e.permission !== undefined) r.perms.delete(e.permission);
    else if (e.op === 'membership.add' && e.user !== undefined) r.members.add(e.user);
    else if (e.op === 'membership.remove' && e.user !== undefined) r.members.delete(e.user);
  }
  return roles;
}

function errorCode(err: unknown): string {
  return err instanceof RawError ? err.code : err instanceof Error ? err.message : String(err);
}

// ---- 1. read-your-writes on every connection -----------------------------------------------------

test('1. zero stale reads: 2,000 alternating grant/revoke, each read on a new TCP connection', { timeout: 150_000 }, async (t) => {
  const server = await start(4);
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    let revision = 2;
    const OPS = 2000;
    const deadline = Date.now() + 60_000;
    let done = 0;
    let stale = 0;
    let behind = 0;
    const examples: string[] = [];
    const readErrors: string[] = [];
    const answering = new Set<string>();
    const started = Date.now();
    for (let i = 0; i < OPS && Date.now() < deadline; i++) {
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
    t.diagnostic(`${done} write+read pairs in ${Date.now() - started} ms; answered by ${answering.size} worker processes; ${readErrors.length} connection errors`);
    assert.equal(done, OPS, `only ${done} of ${OPS} operations completed within the time budget`);
    assert.equal(stale, 0, `${stale} stale answers out of ${done} reads on new connections; first: ${examples.join(' | ')}`);
    assert.equal(behind, 0, `${behind} reads carried an X-Authz-Revision older than the write just acknowledged; first: ${examples.join(' | ')}`);
    assert.deepEqual(readErrors, [], 'no connection errors while every worker is healthy');
  } finally {
    keepAlive.destroy();
    await server.kill();
  }
});

// ---- 2. concurrent writers ---------------------------------------------------------------------

test('2. concurrent writers: revisions unique and gapless, changelog and every worker agree', { timeout: 90_000 }, async (t) => {
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
    const model = new Map(ROLES.map((r) => [r, { perms: new Set<string>(), members: new Set<string>() }]));
    const revoked: Array<{ role: string; perm: string }> = [];

    const plan = (i: number, j: number): Op => {
      const role = ROLES[i % ROLES.length] as string;
      if (j % 10 === 4) return { kind: 'revoke', role, perm: `p.${i}.${j - 4}` };
      if (j % 10 === 9) return { kind: 'remove', role, user: `u.${i}.${j - 7}` };
      if (j % 5 < 2) return { kind: 'grant', role, perm: `p.${i}.${j}` };
      return { kind: 'add', role, user: `u.${i}.${j}` };
    };
    const deadline = Date.now() + 30_000;
    const started = Date.now();
    await Promise.all(
      agents.map(async (agent, i) => {
        for (let j = 0; j < WRITES && Date.now() < deadline; j++) {
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
          const m = model.get(op.role);
          if (m === undefined) continue;
          if ('perm' in op) {
            if (op.kind === 'grant') m.perms.add(op.perm);
            else {
              m.perms.delete(op.perm);
              revoked.push({ role: op.role, perm: op.perm });
            }
          } else if (op.kind === 'add') m.members.add(op.user);
          else m.members.delete(op.user);
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
    const mismatched = entries.filter((e) => acked.get(e.revision) !== entryKey(e)).map((e) => `revision ${e.revision}: listed ${entryKey(e)}, acknowledged ${acked.get(e.revision)}`);
    assert.deepEqual(mismatched.slice(0, 10), [], `/api/changes entries match the acknowledged ops (${mismatched.length} differ)`);

    // Every worker answers the same, at revision N: one request per new TCP connection.
    const problems: string[] = [];
    const errors: string[] = [];
    const answering = new Set<string>();
    const users = ROLES.map((r) => sorted(model.get(r)?.members ?? []));
    const perms = ROLES.map((r) => sorted(model.get(r)?.perms ?? []));
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
        else if (JSON.stringify(res.data) !== JSON.stringify(expected)) problems.push(`${path}: got ${JSON.stringify(res.data).slice(0, 200)}, expected ${JSON.stringify(expected).slice(0, 200)}`);
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

// ---- 3. a worker SIGKILLed under write load ------------------------------------------------------

test('3. SIGKILL of one worker under write load: replaced, nothing acknowledged lost, nothing half-applied', { timeout: 90_000 }, async (t) => {
  const server = await start(4);
  const WRITERS = 8;
  const agents = Array.from({ length: WRITERS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  let victim: number | undefined;
  try {
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    for (let i = 0; i < 16; i++) await freshGet(server.port, key, '/api/role_permissions/R'); // warm the workers' caches
    const before = readyPids(server);
    victim = before[1] as number;

    interface Outcome {
      op: Op;
      result: 'acked' | 'committed-earlier' | 'refused' | 'unknown';
      revision?: number;
      detail: string;
    }
    const outcomes: Outcome[] = [];
    const ackedGrants = new Set<string>();
    const revokesIssued = new Set<string>();
    const ackedRevokes = new Set<string>();
    let maxAckedRevision = 2;
    let writeConnErrors = 0;
    const LOAD_MS = 3000;
    const loadStart = Date.now();
    const loadEnd = loadStart + LOAD_MS;

    const writer = async (w: number, agent: http.Agent): Promise<void> => {
      for (let j = 0; j < 400 && Date.now() < loadEnd; j++) {
        let op: Op;
        if (j % 4 === 3) {
          const perm = `p.${w}.${j - 2}`;
          if (!ackedGrants.has(perm)) continue;
          op = { kind: 'revoke', role: 'R', perm };
          revokesIssued.add(perm);
        } else {
          op = { kind: 'grant', role: 'R', perm: `p.${w}.${j}` };
        }
        let outcome: Outcome = { op, result: 'unknown', detail: '' };
        for (let attempt = 0; attempt < 5; attempt++) {
          try {
            const res = await sendOp(server.port, key, op, agent);
            if (res.status === expectedStatus(op) && typeof res.data?.revision === 'number') {
              outcome = { op, result: 'acked', revision: res.data.revision, detail: `attempt ${attempt}` };
            } else if (attempt > 0 && res.status === alreadyDoneStatus(op)) {
              outcome = { op, result: 'committed-earlier', detail: `attempt ${attempt}: ${res.status}` };
            } else {
              outcome = { op, result: 'refused', detail: show(res) };
            }
            break;
          } catch (err) {
            writeConnErrors++;
            outcome.detail += `${errorCode(err)} `;
            await sleep(50);
          }
        }
        outcomes.push(outcome);
        if (outcome.result === 'acked' || outcome.result === 'committed-earlier') {
          if (op.kind === 'grant') ackedGrants.add(op.perm);
          else if (op.kind === 'revoke') ackedRevokes.add(op.perm);
          if (outcome.revision !== undefined) maxAckedRevision = Math.max(maxAckedRevision, outcome.revision);
        }
      }
    };

    // Readers on new connections: each answer must include every grant acknowledged before the
    // read was sent (unless a revoke of it was sent since) and none whose revoke was acknowledged.
    let reads = 0;
    let readsFailedOnce = 0;
    let readsNeverAnswered = 0;
    const staleReads: string[] = [];
    const reader = async (): Promise<void> => {
      for (let i = 0; i < 2000 && Date.now() < loadEnd + 300; i++) {
        const mustHave = [...ackedGrants].filter((p) => !revokesIssued.has(p));
        const mustNotHave = [...ackedRevokes];
        const minRev = maxAckedRevision;
        const errs: string[] = [];
        let res: RawResult<Array<{ name: string }>>;
        reads++;
        try {
          res = await freshGet<Array<{ name: string }>>(server.port, key, '/api/role_permissions/R', errs, 5);
        } catch {
          readsNeverAnswered++;
          continue;
        } finally {
          if (errs.length > 0) readsFailedOnce++;
        }
        if (res.status !== 200 || res.data === undefined) {
          staleReads.push(`read ${i}: ${show(res)}`);
          continue;
        }
        const seen = new Set(res.data.map((x) => x.name));
        // A revoke sent while this read was in flight may or may not show: only older ones must.
        const missing = mustHave.filter((p) => !seen.has(p) && !revokesIssued.has(p));
        const extra = mustNotHave.filter((p) => seen.has(p));
        if (missing.length > 0 || extra.length > 0 || (res.revision ?? 0) < minRev) {
          staleReads.push(`read ${i} at X-Authz-Revision ${res.revision} (>= ${minRev} expected): missing ${missing.slice(0, 5).join(',')} still granted ${extra.slice(0, 5).join(',')}`);
        }
      }
    };

    let killedAt = 0;
    const killer = async (): Promise<void> => {
      await sleep(1000);
      killedAt = Date.now() - loadStart;
      process.kill(victim as number, 'SIGKILL');
    };
    await Promise.all([...agents.map((a, w) => writer(w, a)), reader(), reader(), killer()]);
    t.diagnostic(
      `killed worker ${victim} at +${killedAt} ms; ${outcomes.length} writes (${outcomes.filter((o) => o.result === 'acked').length} acknowledged, ` +
        `${writeConnErrors} connection errors retried); ${reads} reads, ${readsFailedOnce} needed a retry, ${readsNeverAnswered} never answered`,
    );

    // The primary replaced the worker.
    const exitLine = await waitUntil(`the primary to log that worker ${victim} exited and is replaced`, 10_000, () =>
      logLines(server).find((l) => l.msg === 'worker exited; replacing it' && l.pid === victim),
    );
    assert.ok(typeof exitLine.restarts === 'number' && exitLine.restarts >= 1, `restart count logged: ${JSON.stringify(exitLine)}`);
    t.diagnostic(JSON.stringify(exitLine));
    assert.ok(!alive(victim), `killed worker ${victim} is gone`);

    // Every write ended with a clear answer, and other workers kept answering reads.
    const refused = outcomes.filter((o) => o.result === 'refused').map((o) => `${opKey(o.op)}: ${o.detail}`);
    assert.deepEqual(refused, [], 'no write was refused');
    assert.ok(outcomes.filter((o) => o.result === 'acked').length >= 50, 'the write load made progress');
    assert.equal(readsNeverAnswered, 0, 'every read was answered after at most 5 connection attempts');
    assert.ok(readsFailedOnce <= Math.max(5, reads * 0.2), `reads during the kill mostly succeed: ${readsFailedOnce} of ${reads} hit a connection error`);
    assert.deepEqual(staleReads.slice(0, 10), [], `reads during the load reflect every write acknowledged before them (${staleReads.length} stale)`);

    // Changelog: gapless; every acknowledged write listed at its revision; nothing we did not send.
    const { entries } = await allChanges(server.port, key, 100);
    const n = assertGapless(entries, 'after the SIGKILL');
    const byRevision = new Map(entries.map((e) => [e.revision, entryKey(e)]));
    const listedKeys = new Set(entries.map(entryKey));
    const notListed: string[] = [];
    for (const o of outcomes) {
      if (o.result === 'acked' && byRevision.get(o.revision as number) !== opKey(o.op)) notListed.push(`${opKey(o.op)} acknowledged at ${o.revision}, listed ${byRevision.get(o.revision as number)}`);
      if (o.result === 'committed-earlier' && !listedKeys.has(opKey(o.op))) notListed.push(`${opKey(o.op)} (409/404 on retry) not listed`);
    }
    assert.deepEqual(notListed, [], 'acknowledged writes are in /api/changes at their revision');
    const sent = new Set(['role.create R', 'membership.add R user=alice', ...outcomes.map((o) => opKey(o.op))]);
    const phantom = entries.filter((e) => !sent.has(entryKey(e))).map(entryKey);
    assert.deepEqual(phantom, [], 'the changelog holds only writes that were sent');

    // Visible state on every worker = the changelog replayed (no half-applied write), at revision n.
    const expected = sorted(replay(entries).get('R')?.perms ?? []);
    for (const p of ackedGrants) if (!ackedRevokes.has(p)) assert.ok(expected.includes(p), `acknowledged grant ${p} is in the replayed changelog`);
    const problems: string[] = [];
    const errors: string[] = [];
    for (let k = 0; k < 24; k++) {
      const res = await freshGet<Array<{ name: string }>>(server.port, key, '/api/role_permissions/R', errors);
      if (res.status !== 200) problems.push(show(res));
      else if (JSON.stringify(res.data?.map((x) => x.name)) !== JSON.stringify(expected)) {
        const got = new Set(res.data?.map((x) => x.name));
        problems.push(`read ${k} X-Authz-Revision ${res.revision}: missing ${expected.filter((p) => !got.has(p)).slice(0, 5).join(',')}; not in changelog ${[...got].filter((p) => !expected.includes(p)).slice(0, 5).join(',')}`);
      }
      if (res.revision !== n) problems.push(`read ${k}: X-Authz-Revision ${res.revision}, expected ${n}`);
      const perm = [...ackedGrants][k % Math.max(1, ackedGrants.size)] ?? 'p.none';
      const hp = await freshGet<{ has_permission: boolean }>(server.port, key, `/api/has_permission/alice/${perm}`, errors);
      if (hp.data?.has_permission !== expected.includes(perm)) problems.push(`has_permission alice ${perm}: ${show(hp)}`);
    }
    assert.deepEqual(problems.slice(0, 10), [], `after the kill every worker shows exactly the changelog's state (${problems.length} problems)`);
    const replacement = await waitUntil('the replacement worker to log "worker ready"', 15_000, () =>
      readyPids(server).find((p) => !before.includes(p)),
    );
    t.diagnostic(`replacement worker ${replacement} ready`);
  } finally {
    for (const a of agents) a.destroy();
    await server.kill();
    if (victim !== undefined && alive(victim)) process.kill(victim, 'SIGKILL');
  }
});

// ---- 4. SIGTERM under load -----------------------------------------------------------------------

test('4. SIGTERM under load: exit 0, requests sent before the signal answered, acknowledged writes kept', { timeout: 120_000 }, async (t) => {
  const tmp = tempDir('rbac-cluster-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let server = await start(4, sqlitePath);
  const agents: http.Agent[] = [];
  try {
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);

    interface Req {
      what: string;
      expected: number;
      sentAt: number | undefined;
      status?: number;
      error?: string;
      revision?: number;
      op?: Op;
    }
    const reqs: Req[] = [];
    let stopIssuing = false;
    let signalAt = Number.POSITIVE_INFINITY;
    const port = server.port;

    const issue = async (r: Req, run: (onSent: (at: number) => void) => Promise<RawResult<{ revision?: number }>>): Promise<boolean> => {
      reqs.push(r);
      try {
        const res = await run((at) => (r.sentAt = at));
        r.status = res.status;
        if (typeof res.data?.revision === 'number') r.revision = res.data.revision;
        return true;
      } catch (err) {
        r.error = errorCode(err);
        if (err instanceof RawError && err.sentAt !== undefined) r.sentAt = err.sentAt;
        return false;
      }
    };
    const writer = async (w: number): Promise<void> => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      for (let j = 0; j < 1000 && !stopIssuing; j++) {
        const op: Op = { kind: 'grant', role: 'R', perm: `p.${w}.${j}` };
        const fresh = j % 3 === 0;
        const ok = await issue({ what: `${opKey(op)}${fresh ? ' (new connection)' : ''}`, expected: 201, sentAt: undefined, op }, (onSent) =>
          rawRequest({ port, key, method: 'POST', path: `/api/permission/R/${op.perm}`, agent: fresh ? false : agent, timeoutMs: 12_000, onSent }),
        );
        if (!ok) await sleep(20);
      }
    };
    const reader = async (fresh: boolean): Promise<void> => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      for (let j = 0; j < 3000 && !stopIssuing; j++) {
        const path = j % 2 === 0 ? '/api/has_permission/alice/p.0.0' : '/api/role_permissions/R';
        const ok = await issue({ what: `GET ${path}${fresh ? ' (new connection)' : ''}`, expected: 200, sentAt: undefined }, (onSent) =>
          rawRequest({ port, key, path, agent: fresh ? false : agent, timeoutMs: 12_000, onSent }),
        );
        if (!ok) await sleep(20);
      }
    };
    const load = Promise.all([writer(0), writer(1), writer(2), writer(3), writer(4), writer(5), reader(true), reader(true), reader(false), reader(false)]);
    await sleep(1200);
    // A burst on new connections, fully handed to the kernel just before the signal: some are
    // still queued for accept or unread when the workers hear of the shutdown.
    const BURST = 60;
    const burstSent: Array<Promise<void>> = [];
    const burstDone: Array<Promise<boolean>> = [];
    for (let i = 0; i < BURST; i++) {
      let markSent: () => void = () => undefined;
      burstSent.push(new Promise<void>((r) => (markSent = r)));
      const write = i % 2 === 0;
      const perm = `p.burst.${i}`;
      const op: Op = { kind: 'grant', role: 'R', perm };
      burstDone.push(
        issue(
          write
            ? { what: `${opKey(op)} (burst, new connection)`, expected: 201, sentAt: undefined, op }
            : { what: 'GET /api/role_permissions/R (burst, new connection)', expected: 200, sentAt: undefined },
          (onSent) =>
            rawRequest({
              port,
              key,
              method: write ? 'POST' : 'GET',
              path: write ? `/api/permission/R/${perm}` : '/api/role_permissions/R',
              timeoutMs: 12_000,
              onSent: (at) => {
                onSent(at);
                markSent();
              },
            }),
        ).finally(markSent),
      );
    }
    await Promise.race([Promise.all(burstSent), sleep(3000)]);
    signalAt = performance.now();
    let exitedAt = Number.NaN;
    const stopping = server.stop().then((exitCode) => {
      exitedAt = performance.now();
      return exitCode;
    });
    const code = await Promise.race([stopping, sleep(15_000).then(() => 'still running after 15 s' as const)]);
    stopIssuing = true;
    await Promise.all([load, ...burstDone]);
    agents.forEach((a) => a.destroy());

    const sentBefore = reqs.filter((r) => r.sentAt !== undefined && r.sentAt < signalAt);
    const after = reqs.filter((r) => !(r.sentAt !== undefined && r.sentAt < signalAt));
    const broken = sentBefore.filter((r) => r.status !== r.expected);
    t.diagnostic(
      `exited ${(exitedAt - signalAt).toFixed(0)} ms after SIGTERM; ${reqs.length} requests: ${sentBefore.length} sent before SIGTERM (${broken.length} not answered normally); ` +
        `${after.length} after it (${after.filter((r) => r.status !== undefined).length} answered, errors: ${[...new Set(after.map((r) => r.error).filter((e) => e !== undefined))].join(',')})`,
    );
    assert.equal(code, 0, `exit code after SIGTERM under load; end of the log:\n${server.output().split('\n').slice(-25).join('\n')}`);
    assert.ok(sentBefore.length >= 50, 'there was load before the signal');
    assert.deepEqual(
      broken.slice(0, 10).map((r) => `${r.what}: ${r.status ?? r.error} (sent ${(signalAt - (r.sentAt as number)).toFixed(1)} ms before the signal)`),
      [],
      `every request sent before SIGTERM completes with its normal status (${broken.length} did not)`,
    );

    const ackedWrites = reqs.filter((r) => r.op !== undefined && r.status === 201);
    server = await start(1, sqlitePath);
    const { entries } = await allChanges(server.port, key, 100);
    const n = assertGapless(entries, 'after SIGTERM and restart');
    const byRevision = new Map(entries.map((e) => [e.revision, entryKey(e)]));
    const lost = ackedWrites.filter((r) => byRevision.get(r.revision as number) !== opKey(r.op as Op)).map((r) => `${r.what} at ${r.revision}`);
    assert.deepEqual(lost.slice(0, 10), [], `acknowledged writes are in /api/changes after the restart (${lost.length} missing)`);
    const expected = sorted(replay(entries).get('R')?.perms ?? []);
    for (let k = 0; k < 8; k++) {
      const res = await freshGet<Array<{ name: string }>>(server.port, key, '/api/role_permissions/R');
      assert.equal(res.status, 200, show(res));
      const got = res.data?.map((x) => x.name) ?? [];
      const missing = ackedWrites.map((r) => (r.op as Op & { perm: string }).perm).filter((p) => !got.includes(p));
      assert.deepEqual(missing, [], `acknowledged grants present after restart (read ${k})`);
      assert.deepEqual(got, expected, `role_permissions after restart = the changelog replayed (read ${k})`);
      assert.equal(res.revision, n, 'X-Authz-Revision after restart');
    }
  } finally {
    agents.forEach((a) => a.destroy());
    await server.kill();
    tmp.cleanup();
  }
});

// ---- 5. a stalled worker -----------------------------------------------------------------------

test('5. a SIGSTOPped worker is replaced within the ack timeout; the write completes and no read is stale', { timeout: 90_000 }, async (t) => {
  const server = await start(4);
  let victim: number | undefined;
  try {
    const key = randomUUID();
    const c = server.client(key);
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    // Warm every worker's cache of the tenant (so a stale graph would show).
    for (let i = 0; i < 24; i++) {
      const res = await freshGet<{ has_permission: boolean }>(server.port, key, '/api/has_permission/alice/doc.write');
      assert.equal(res.data?.has_permission, false, show(res));
    }
    const before = readyPids(server);
    victim = before[2] as number;
    process.kill(victim, 'SIGSTOP');

    const op: Op = { kind: 'grant', role: 'R', perm: 'doc.write' };
    const attempts: string[] = [];
    let written: RawResult<{ revision: number }> | undefined;
    let took = 0;
    // The kernel picks the worker of each new connection (1 in 4 is the stopped one), so up to 8
    // attempts: the chance that all of them land on the stopped worker is 1 in 65,536.
    for (let attempt = 0; attempt < 8 && written === undefined; attempt++) {
      const t0 = Date.now();
      try {
        // A request that landed on the stopped worker hangs: give up after 5 s, retry on a new connection.
        const res = await sendOp(server.port, key, op, false, 5000);
        took = Date.now() - t0;
        attempts.push(`attempt ${attempt}: HTTP ${res.status} after ${took} ms`);
        if (res.status === 201 || (attempt > 0 && res.status === 409)) written = res;
        else assert.fail(`grant while a worker is stopped: ${show(res)}`);
      } catch (err) {
        attempts.push(`attempt ${attempt}: ${errorCode(err)} after ${Date.now() - t0} ms`);
      }
    }
    t.diagnostic(`stopped worker ${victim}; ${attempts.join('; ')}`);
    assert.ok(written !== undefined, `the write completed: ${attempts.join('; ')}\n${logsAbout(server, victim)}`);
    assert.ok(took <= 5000, `the answered attempt took ${took} ms (the ack timeout is 2 s)`);

    const laggard = await waitUntil(`a log line that worker ${victim} did not acknowledge in time`, 5000, () =>
      logLines(server).find((l) => l.msg === 'worker did not acknowledge a change in time; replacing it' && l.pid === victim),
    );
    const exitLine = await waitUntil(`the primary to log that worker ${victim} exited and is replaced`, 5000, () =>
      logLines(server).find((l) => l.msg === 'worker exited; replacing it' && l.pid === victim),
    );
    t.diagnostic(`${JSON.stringify(laggard)}\n${JSON.stringify(exitLine)}`);
    assert.equal(exitLine.signal, 'SIGKILL', 'the stalled worker was SIGKILLed');
    await waitUntil(`worker ${victim} to be gone`, 5000, () => (alive(victim as number) ? undefined : true));

    const writeRevision = written.status === 201 ? (written.data?.revision as number) : (written.revision as number);
    const stale: string[] = [];
    const errors: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await freshGet<{ has_permission: boolean }>(server.port, key, '/api/has_permission/alice/doc.write', errors);
      if (res.data?.has_permission !== true || (res.revision ?? 0) < writeRevision) stale.push(`read ${i}: ${show(res)} X-Authz-Revision ${res.revision}`);
    }
    assert.deepEqual(stale.slice(0, 10), [], `no stale read after the write (${stale.length} stale of 40)`);
    t.diagnostic(`${errors.length} connection errors while reading`);
  } finally {
    if (victim !== undefined && alive(victim)) {
      process.kill(victim, 'SIGCONT');
      process.kill(victim, 'SIGKILL');
    }
    await server.kill();
  }
});

// ---- 6. /api/changes validation and paging ---------------------------------------------------------

test('6. /api/changes (2 workers): since must be a non-negative integer; limit=1 pages through every revision', { timeout: 60_000 }, async () => {
  const server = await start(2);
  try {
    const key = randomUUID();
    const c = server.client(key);
    const ops = ['role.create R', 'permission.grant R perm=a', 'permission.grant R perm=b', 'membership.add R user=alice', 'permission.revoke R perm=a'];
    assert.equal((await c.createRole('R')).status, 201);
    assert.equal((await c.grant('R', 'a')).status, 201);
    assert.equal((await c.grant('R', 'b')).status, 201);
    assert.equal((await c.addMember('alice', 'R')).status, 201);
    assert.equal((await c.revoke('R', 'a')).status, 200);

    for (const since of ['abc', '-1', '1.5']) {
      const res = await freshGet(server.port, key, `/api/changes?since=${since}`);
      assert.equal(res.status, 400, `since=${since}: ${show(res)}`);
      const body = res.body as { success?: unknown; code?: unknown; error?: unknown };
      assert.equal(body.success, false, `since=${since}: error envelope`);
      assert.equal(body.code, 400);
      assert.match(String(body.error), /since/, `since=${since}: the error names the parameter`);
      assert.equal(res.revision, 5, `since=${since}: X-Authz-Revision on an error`);
    }

    const whole = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes');
    assert.equal(whole.status, 200, show(whole));
    assert.deepEqual(whole.data?.map(entryKey), ops, 'without since: every change, ascending');
    assert.deepEqual(whole.data?.map((e) => e.revision), [1, 2, 3, 4, 5]);
    assert.equal(whole.nextCursor, undefined);
    const rec = whole.data?.[1] as unknown as Record<string, unknown>;
    assert.equal('user' in rec, false, 'absent fields are omitted');
    assert.match(String(rec.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/);

    // limit=1: one entry a page, each page on a new connection (so on either worker).
    const paged = await allChanges(server.port, key, 1);
    assert.deepEqual(paged.entries.map(entryKey), ops, 'limit=1 pages through every change in order');
    assert.equal(paged.pages, 5, 'five pages of one; the last has no next_cursor');
    assert.deepEqual(paged.entries, whole.data, 'paged entries equal the unpaged list');

    const fromThree = await allChanges(server.port, key, 1, 3);
    assert.deepEqual(fromThree.entries.map((e) => e.revision), [4, 5], 'since=3 with limit=1');
    const none = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=5&limit=1');
    assert.equal(none.status, 200, show(none));
    assert.deepEqual(none.data, []);
    assert.equal(none.nextCursor, undefined);
    const far = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=1000');
    assert.deepEqual(far.data, [], 'since beyond the last revision: empty');

    // A cursor belongs to its since and its client.
    const first = await freshGet<ChangeEntry[]>(server.port, key, '/api/changes?since=0&limit=1');
    const cur = encodeURIComponent(first.nextCursor ?? '');
    const foreign = await freshGet(server.port, randomUUID(), `/api/changes?since=0&limit=1&cursor=${cur}`);
    assert.equal(foreign.status, 400, `another client's cursor: ${show(foreign)}`);
    const sig = (first.nextCursor ?? '').split('.')[1] ?? '';
    const forged = encodeURIComponent(`${Buffer.from('0').toString('base64url')}.${sig}`);
    const tampered = await freshGet(server.port, key, `/api/changes?since=0&limit=1&cursor=${forged}`);
    assert.equal(tampered.status, 400, `a tampered cursor: ${show(tampered)}`);
    const moved = await freshGet(server.port, key, `/api/changes?since=2&limit=1&cursor=${cur}`);
    assert.equal(moved.status, 400, `a cursor issued for since=0 used with since=2: ${show(moved)}`);
  } finally {
    await server.kill();
  }
});

test.after(() => {
  process.stdout.write(`# server start-up times (ms): ${startTimes.join(', ')}\n`);
});
