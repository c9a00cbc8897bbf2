/**
 * The audit trail across a crash and with retention (docs/api.md §11, docs/operations.md §7), on a
 * SQLite file: no acknowledged row is lost to SIGKILL of every process, and
 * AUTH_AUDIT_RETENTION_DAYS deletes older rows in batches soon after start, keeping recent ones.
 * Skipped when the suite runs on PostgreSQL (its pass runs them on SQLite).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ApiResult } from '../../src/client/index.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';
import { auditAll, keyCredential, rid, rowOf } from '../helpers/audit.ts';
import { assertGone, killAll } from '../helpers/processes.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { show } from '../helpers/show.ts';
import { sleep } from '../helpers/wait.ts';

const ON_POSTGRES = process.env.AUTH_TEST_DATABASE === 'postgresql';
const SQLITE_ONLY = ON_POSTGRES ? 'a SQLite file case: it runs in the SQLite pass' : false;

test('SIGKILL of every process (2 workers) while writes are in flight loses no acknowledged row', { skip: SQLITE_ONLY }, async (t) => {
  const tmp = tempDir('rbac-audit-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '2' } });
  try {
    const key = randomUUID();
    const c = srv.client(key);
    const acked = new Map<string, { role: string; revision: number }>();
    const unexpected: string[] = [];
    let sent = 0;
    let killed = false;
    let victims: number[] = [];
    const deadline = Date.now() + 2000;
    const lane = async (n: number): Promise<void> => {
      for (let i = 0; !killed; i++) {
        const role = `crash-${n}-${i}`;
        const requestId = rid(role);
        sent++;
        let res: ApiResult<{ revision: number }>;
        try {
          res = await c.createRole(role, undefined, { requestId });
        } catch (err) {
          // No answer: the service is gone, or (a failure of its own) dropped a request while running.
          if (!killed) unexpected.push(`${role}: no answer before the kill (${err instanceof Error ? err.message : String(err)})`);
          return;
        }
        if (res.status === 201 && typeof res.data?.revision === 'number') acked.set(requestId, { role, revision: res.data.revision });
        else unexpected.push(`${role}: ${show(res)}`);
        // SIGKILL right after an acknowledgement (no await in between), the other lanes in flight.
        if (!killed && Date.now() >= deadline) {
          killed = true;
          victims = killAll(srv);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, n) => lane(n)));
    if (!killed) {
      killed = true;
      victims = killAll(srv);
    }
    await srv.exited;
    await assertGone(srv, victims);
    assert.deepEqual(unexpected, [], 'every write before the kill succeeds');
    assert.ok(acked.size >= 8, `only ${acked.size} writes acknowledged in 2 s`);
    assert.ok(victims.length >= 2, `the two workers were killed too (found ${victims.length} child processes)`);

    srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
    const back = srv.client(key);
    const rows = await auditAll(back, 500);
    const changes = await back.all((o) => {
      const q = new URLSearchParams({ since: '0', limit: String(o.limit ?? 500) });
      if (o.cursor !== undefined) q.set('cursor', o.cursor);
      return back.request<Array<{ revision: number; op: string; role: string }>>('GET', `/api/changes?${q.toString()}`);
    }, 500);
    t.diagnostic(
      `${sent} writes sent, ${acked.size} acknowledged, ${changes.length} committed, ${rows.length} audit rows; SIGKILL to the primary and ${victims.length} child processes`,
    );

    for (const [requestId, a] of acked) {
      const row = rowOf(rows, requestId);
      assert.deepEqual(
        { action: row.action, resource: row.resource, status: row.status, revision: row.revision, credential: row.credential },
        { action: 'role.create', resource: `/api/role/${a.role}`, status: 201, revision: a.revision, credential: keyCredential(key) },
        `the row of acknowledged ${a.role}`,
      );
    }
    const written = rows.filter((r) => r.revision !== undefined);
    assert.equal(new Set(rows.map((r) => r.request_id)).size, rows.length, 'one row per request');
    const auditRevisions = written.map((r) => r.revision as number).sort((x, y) => x - y);
    const changeRevisions = changes.map((ch) => ch.revision);
    assert.deepEqual(auditRevisions, changeRevisions, 'the audit rows of successful writes and the changelog have the same revisions');
    assert.deepEqual(
      changeRevisions,
      Array.from({ length: changes.length }, (_, i) => i + 1),
      'revisions 1..N',
    );
    const byRevision = new Map(changes.map((ch) => [ch.revision, ch]));
    for (const row of written) {
      const ch = byRevision.get(row.revision as number);
      assert.equal(row.action, ch?.op, `row ${JSON.stringify(row)} and change ${JSON.stringify(ch)}`);
      assert.equal(row.resource, `/api/role/${ch?.role ?? ''}`, `row ${JSON.stringify(row)} and change ${JSON.stringify(ch)}`);
    }
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');
  } finally {
    await srv.kill();
    tmp.cleanup();
  }
});

test('AUTH_AUDIT_RETENTION_DAYS=1 deletes older rows (in batches) soon after start and keeps recent ones', { skip: SQLITE_ONLY }, async (t) => {
  const tmp = tempDir('rbac-audit-');
  const sqlitePath = join(tmp.dir, 'rbac.sqlite3');
  let srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1' } });
  try {
    const key = randomUUID();
    const recentWrite = rid('recent-write');
    const made = await srv.client(key).createRole('kept', undefined, { requestId: recentWrite });
    assert.equal(made.status, 201, show(made));
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');

    const hash = createHash('sha256').update(key).digest('hex');
    const ago = (ms: number): string => `${new Date(Date.now() - ms).toISOString().slice(0, 23)}000`;
    const DAY = 86_400_000;
    const old = [rid('old-3d'), rid('old-5d')];
    const recentRow = rid('recent-12h');
    const db = new Database(sqlitePath);
    try {
      const insert = prepared(
        db,
        `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
         VALUES (?, ?, 'role.create', '/api/role/x', 409, NULL, ?, ?, '127.0.0.1')`,
      );
      db.transaction(() => {
        insert.run(hash, ago(3 * DAY), keyCredential(key), old[0]);
        insert.run(hash, ago(5 * DAY), keyCredential(key), old[1]);
        insert.run(hash, ago(DAY / 2), keyCredential(key), recentRow);
        // Another client's backlog, more than one batch of deletes.
        const other = createHash('sha256').update(randomUUID()).digest('hex');
        for (let i = 0; i < 2500; i++) insert.run(other, ago(3 * DAY + i * 1000), 'key:000000000000', `backlog-${i}`);
      })();
    } finally {
      db.close();
    }

    const starting = Date.now();
    srv = await startServer({ sqlitePath, env: { AUTH_WORKERS: '1', AUTH_AUDIT_RETENTION_DAYS: '1' } });
    const listening = Date.now();
    const c = srv.client(key);
    const deadline = Date.now() + 12_000;
    let rows = await auditAll(c);
    while (rows.some((r) => r.request_id !== undefined && old.includes(r.request_id))) {
      assert.ok(Date.now() < deadline, `rows older than 1 day still there 12 s after start: ${JSON.stringify(rows)}`);
      await sleep(250);
      rows = await auditAll(c);
    }
    t.diagnostic(`start-up ${listening - starting} ms; old rows gone ${Date.now() - listening} ms after listening`);
    assert.deepEqual(rows.map((r) => r.request_id).sort(), [recentRow, recentWrite].sort(), 'the recent rows stay');
    // The other client's backlog goes too (the first run keeps going until nothing is left).
    const backlogDeadline = Date.now() + 5000;
    for (;;) {
      const left = countOlderThan(sqlitePath, ago(DAY));
      if (left === 0) break;
      assert.ok(Date.now() < backlogDeadline, `${left} rows older than 1 day left in the table`);
      await sleep(250);
    }
    assert.equal(await srv.stop(), 0, 'exit code after SIGTERM');
    const db2 = new Database(sqlitePath, { readonly: true });
    try {
      assert.equal((prepared(db2, 'SELECT count(*) AS n FROM audit').get() as { n: number }).n, 2, 'only the two recent rows are left');
    } finally {
      db2.close();
    }
  } finally {
    await srv.kill();
    tmp.cleanup();
  }
});

/** Rows of the audit table older than `at`, read straight from the file. */
function countOlderThan(sqlitePath: string, at: string): number {
  const db = new Database(sqlitePath, { readonly: true });
  try {
    return (prepared(db, 'SELECT count(*) AS n FROM audit WHERE at < ?').get(at) as { n: number }).n;
  } finally {
    db.close();
  }
}
