// A write to a client that is not cached goes to the database without hydrating the client first
// (it used to load the whole graph only to have a revision at hand for a possible error): the
// write answers its new revision, a refused body answers the stored revision, and no hydration
// happens until a read needs the graph. Runs on the store of the run (AUTH_TEST_DATABASE).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { rawRequest } from '../helpers/raw-http.ts';
import { sharedDatabase } from '../helpers/postgres.ts';
import { freePort, startServer, tempDir, type ServerOptions } from '../helpers/server.ts';

/** The count of hydrations the server's /metrics reports (every worker's). */
async function hydrations(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  assert.match(text, /^# TYPE rbac_hydration_duration_seconds histogram$/m);
  let sum = 0;
  for (const m of text.matchAll(/^rbac_hydration_duration_seconds_count(?:\{[^}]*\})? (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

test('a write to a client that is not cached hydrates nothing; the first read does', async (t) => {
  let options: ServerOptions;
  if (process.env.AUTH_TEST_DATABASE === 'postgresql') {
    const db = await sharedDatabase(t);
    if (db === undefined) return;
    options = { env: { ...db.env, AUTH_WORKERS: '1' } };
  } else {
    const dir = tempDir('rbac-write-');
    t.after(() => dir.cleanup());
    options = { sqlitePath: join(dir.dir, 'rbac.sqlite3'), env: { AUTH_WORKERS: '1' } };
  }
  const key = randomUUID();
  const first = await startServer(options);
  t.after(() => first.kill());
  for (const role of ['a', 'b']) assert.equal((await rawRequest({ port: first.port, key, method: 'POST', path: `/api/role/${role}` })).status, 201);
  await first.stop();

  // A new process: the client is known to the database and cached nowhere.
  const metricsPort = await freePort();
  const server = await startServer({ ...options, env: { ...options.env, AUTH_METRICS_PORT: String(metricsPort) } });
  t.after(() => server.kill());
  const before = await hydrations(metricsPort);

  const written = await rawRequest({ port: server.port, key, method: 'POST', path: '/api/membership/alice/a' });
  assert.equal(written.status, 201, written.text);
  assert.equal(written.revision, 3);
  const refused = await rawRequest({ port: server.port, key, method: 'POST', path: '/api/role/c', body: { description: 42 } });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.revision, 3, 'a refused write still tells the revision, read from the database');
  assert.equal(await hydrations(metricsPort), before, 'no write hydrated the client');

  const roles = await rawRequest<Array<{ role: string }>>({ port: server.port, key, path: '/api/user_roles/alice' });
  assert.equal(roles.status, 200, roles.text);
  assert.deepEqual(
    roles.data?.map((r) => r.role),
    ['a'],
  );
  assert.equal(await hydrations(metricsPort), before + 1, 'the first read hydrated it, once');
});
