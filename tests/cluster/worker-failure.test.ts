/**
 * Multi-process mode (docs/operations.md §4 signals, docs/api.md §10 the change feed, §9
 * consistency): AUTH_WORKERS workers share one port (SO_REUSEPORT), so a request on a brand-new
 * TCP connection lands on a worker the kernel picks. A worker SIGKILLed under write load or stalled by SIGSTOP
 * is replaced; nothing acknowledged is lost, nothing half-applied, and no read is stale.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  start,
  startTimes,
  logLines,
  readyPids,
  logsAbout,
  alive,
  freshGet,
  opKey,
  expectedStatus,
  alreadyDoneStatus,
  sendOp,
  entryKey,
  allChanges,
  assertGapless,
  replay,
  errorCode,
  type Op,
} from '../helpers/cluster.ts';
import type { RawResult } from '../helpers/raw-http.ts';
import { sorted } from '../../support/rbac-model.ts';
import { show } from '../helpers/show.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';

// ---- 3. a worker SIGKILLed under write load ------------------------------------------------------

test('3. SIGKILL of one worker under write load: replaced, nothing acknowledged lost, nothing half-applied', { timeout: 180_000 }, async (t) => {
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
    const loadStart = Date.now();
    // The load goes on until the killer has seen it make progress on both sides of the kill.
    let loadEnd = Number.POSITIVE_INFINITY;
    const acknowledged = (): number => outcomes.filter((o) => o.result === 'acked').length;

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
          staleReads.push(
            `read ${i} at X-Authz-Revision ${res.revision} (>= ${minRev} expected): missing ${missing.slice(0, 5).join(',')} still granted ${extra.slice(0, 5).join(',')}`,
          );
        }
      }
    };

    let killedAt = 0;
    // The kill comes once the load is under way; the load stops once writes are acknowledged
    // again after it and the primary has seen the worker go (replacing it): a window of events,
    // whatever the machine's speed, about the 1 s before and 2 s after the kill of an idle machine.
    const killer = async (): Promise<void> => {
      try {
        await waitUntil('150 writes acknowledged before the kill', () => (acknowledged() >= 150 ? true : undefined), { intervalMs: 10 });
        killedAt = Date.now() - loadStart;
        const ackedAtKill = acknowledged();
        process.kill(victim as number, 'SIGKILL');
        await waitUntil('250 writes acknowledged after the kill, and the primary replacing the worker', () =>
          acknowledged() >= ackedAtKill + 250 && logLines(server).some((l) => l.event === 'primary.worker_replaced' && l.worker_pid === victim)
            ? true
            : undefined,
        );
      } finally {
        loadEnd = Date.now();
      }
    };
    await Promise.all([...agents.map((a, w) => writer(w, a)), reader(), reader(), killer()]);
    t.diagnostic(
      `killed worker ${victim} at +${killedAt} ms; ${outcomes.length} writes (${outcomes.filter((o) => o.result === 'acked').length} acknowledged, ` +
        `${writeConnErrors} connection errors retried); ${reads} reads, ${readsFailedOnce} needed a retry, ${readsNeverAnswered} never answered`,
    );

    // The primary replaced the worker.
    const exitLine = await waitUntil(`the primary to log that worker ${victim} exited and is replaced`, () =>
      logLines(server).find((l) => l.event === 'primary.worker_replaced' && l.worker_pid === victim),
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
      if (o.result === 'acked' && byRevision.get(o.revision as number) !== opKey(o.op))
        notListed.push(`${opKey(o.op)} acknowledged at ${o.revision}, listed ${byRevision.get(o.revision as number)}`);
      if (o.result === 'committed-earlier' && !listedKeys.has(opKey(o.op))) notListed.push(`${opKey(o.op)} (409/404 on retry) not listed`);
    }
    assert.deepEqual(notListed, [], 'acknowledged writes are in /api/changes at their revision');
    const sent = new Set(['role.create R', 'membership.add R user=alice', ...outcomes.map((o) => opKey(o.op))]);
    const phantom = entries.filter((e) => !sent.has(entryKey(e))).map(entryKey);
    assert.deepEqual(phantom, [], 'the changelog holds only writes that were sent');

    // Visible state on every worker = the changelog replayed (no half-applied write), at revision n.
    const expected = sorted(replay(entries).roles.get('R')?.perms ?? []);
    for (const p of ackedGrants) if (!ackedRevokes.has(p)) assert.ok(expected.includes(p), `acknowledged grant ${p} is in the replayed changelog`);
    const problems: string[] = [];
    const errors: string[] = [];
    for (let k = 0; k < 24; k++) {
      const res = await freshGet<Array<{ name: string }>>(server.port, key, '/api/role_permissions/R', errors);
      if (res.status !== 200) problems.push(show(res));
      else if (JSON.stringify(res.data?.map((x) => x.name)) !== JSON.stringify(expected)) {
        const got = new Set(res.data?.map((x) => x.name));
        problems.push(
          `read ${k} X-Authz-Revision ${res.revision}: missing ${expected
            .filter((p) => !got.has(p))
            .slice(0, 5)
            .join(',')}; not in changelog ${[...got]
            .filter((p) => !expected.includes(p))
            .slice(0, 5)
            .join(',')}`,
        );
      }
      if (res.revision !== n) problems.push(`read ${k}: X-Authz-Revision ${res.revision}, expected ${n}`);
      const perm = [...ackedGrants][k % Math.max(1, ackedGrants.size)] ?? 'p.none';
      const hp = await freshGet<{ has_permission: boolean }>(server.port, key, `/api/has_permission/alice/${perm}`, errors);
      if (hp.data?.has_permission !== expected.includes(perm)) problems.push(`has_permission alice ${perm}: ${show(hp)}`);
    }
    assert.deepEqual(problems.slice(0, 10), [], `after the kill every worker shows exactly the changelog's state (${problems.length} problems)`);
    const replacement = await waitUntil('the replacement worker to log "worker ready"', () => readyPids(server).find((p) => !before.includes(p)));
    t.diagnostic(`replacement worker ${replacement} ready`);
  } finally {
    for (const a of agents) a.destroy();
    await server.kill();
    if (victim !== undefined && alive(victim)) process.kill(victim, 'SIGKILL');
  }
});

// ---- 5. a stalled worker -----------------------------------------------------------------------

test('5. a SIGSTOPped worker is replaced within the ack timeout; the write completes and no read is stale', { timeout: 180_000 }, async (t) => {
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
    t.diagnostic(`stopped worker ${victim}; ${attempts.join('; ')} (the ack timeout is 2 s)`);
    assert.ok(written !== undefined, `the write completed: ${attempts.join('; ')}\n${logsAbout(server, victim)}`);

    const laggard = await waitUntil(`a log line that worker ${victim} did not acknowledge in time`, () =>
      logLines(server).find((l) => l.event === 'primary.ack_timeout' && l.worker_pid === victim),
    );
    const exitLine = await waitUntil(`the primary to log that worker ${victim} exited and is replaced`, () =>
      logLines(server).find((l) => l.event === 'primary.worker_replaced' && l.worker_pid === victim),
    );
    t.diagnostic(`${JSON.stringify(laggard)}\n${JSON.stringify(exitLine)}`);
    assert.equal(exitLine.signal, 'SIGKILL', 'the stalled worker was SIGKILLed');
    await waitUntil(`worker ${victim} to be gone`, () => (alive(victim as number) ? undefined : true));

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

test.after(() => {
  process.stdout.write(`# server start-up times (ms): ${startTimes.join(', ')}\n`);
});
