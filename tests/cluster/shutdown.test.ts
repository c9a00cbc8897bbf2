/**
 * Multi-process mode (docs/operations.md §4 signals, docs/api.md §10 the change feed, §9
 * consistency): AUTH_WORKERS workers share one port (SO_REUSEPORT), so a request on a brand-new
 * TCP connection lands on a worker the kernel picks. SIGTERM under load: exit 0, every request sent before the
 * signal answered normally, every acknowledged write there after a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { start, startTimes, freshGet, opKey, entryKey, allChanges, assertGapless, replay, errorCode, type Op } from '../helpers/cluster.ts';
import { RawError, rawRequest, type RawResult } from '../helpers/raw-http.ts';
import { sorted } from '../../support/rbac-model.ts';
import { tempDir } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';
import { sleep, waitUntil } from '../helpers/wait.ts';

// ---- 4. SIGTERM under load -----------------------------------------------------------------------

test('4. SIGTERM under load: exit 0, requests sent before the signal answered, acknowledged writes kept', { timeout: 240_000 }, async (t) => {
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
    // The load under way first: answers to some of it (the test asks for 50 requests sent before the signal).
    await waitUntil('60 requests of the load answered', () => (reqs.filter((r) => r.status !== undefined).length >= 60 ? true : undefined), { intervalMs: 10 });
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
    // The supervisor kills workers still running after the 10 s grace and then exits 1: a service
    // that has not exited a minute after the signal hangs.
    const code = await Promise.race([stopping, sleep(60_000).then(() => 'still running a minute after SIGTERM' as const)]);
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
    const expected = sorted(replay(entries).roles.get('R')?.perms ?? []);
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

test.after(() => {
  process.stdout.write(`# server start-up times (ms): ${startTimes.join(', ')}\n`);
});
