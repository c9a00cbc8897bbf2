/**
 * The HTTP engine setting (docs/operations.md §1 AUTH_HTTP_ENGINE): `auto` takes uWebSockets.js only when
 * its native build loads, never its JavaScript fallback; `uws` that cannot load is a start-up
 * error; the engine in use is logged once and shown by /version. A native build that cannot load
 * is made real, not mocked: NODE_OPTIONS=--no-addons makes every native addon fail to load, as a
 * missing binary for this Node.js ABI or a too old C library does; UWS_USE_FALLBACK=1 makes the
 * bundled 20.30 build load its JavaScript imitation (the 20.5x releases have none), as it does
 * by itself on a Node.js it has no binary for. Without addons, better-sqlite3 cannot load either,
 * so a server that must run that way stores in PostgreSQL.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { freshPostgresDatabase, requirePostgres } from '../helpers/postgres.ts';
import { freePort, ROOT, runToExit, startServer, tempDir } from '../helpers/server.ts';

/** Only the bundled 20.30 build carries a JavaScript imitation of itself. */
const noJsFallback = existsSync(`${ROOT}/node_modules/uWebSockets.js/src/fallback`) ? undefined : 'this uWebSockets.js release has no JavaScript fallback';

/**
 * Whether the installed uWebSockets.js has a native file for this platform and Node.js ABI: where
 * it has one and still does not load (CI runs the 20.5x release on a glibc below its 2.38), the
 * dynamic linker's complaint is the reason, and the start-up line must pass it on.
 */
function packageHasBuildForThisNode(): boolean {
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  return existsSync(`${ROOT}/node_modules/uWebSockets.js/${file}`) || existsSync(`${ROOT}/node_modules/uWebSockets.js/binaries/${file}`);
}

/** The reason names this Node.js and its ABI, so an operator knows what the native build lacks. */
function namesThisNode(reason: string): void {
  assert.ok(reason.includes(`Node.js ${process.version} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}`), reason);
}

interface Version {
  name: string;
  version: string;
  node: string;
  engine: string;
}

async function version(baseUrl: string): Promise<Version> {
  const res = await fetch(`${baseUrl}/version`);
  assert.equal(res.status, 200);
  return (await res.json()) as Version;
}

/** The start-up line that says which engine runs and why. */
function engineLine(output: string): { engine: string; reason: string } {
  const lines = output.split('\n').filter((l) => l.includes('"event":"primary.http_engine"'));
  assert.equal(lines.length, 1, `one 'http engine' line expected:\n${output}`);
  return JSON.parse(lines[0] as string) as { engine: string; reason: string };
}

test('auto: the start-up line and /version name the same engine; every worker runs it', async (t) => {
  const server = await startServer({ env: { AUTH_HTTP_ENGINE: 'auto', AUTH_WORKERS: '2' } });
  t.after(() => server.stop());
  const line = engineLine(server.output());
  assert.match(line.reason, /^AUTH_HTTP_ENGINE=auto and /);
  if (line.engine === 'node') namesThisNode(line.reason);
  if (line.engine === 'node' && packageHasBuildForThisNode()) assert.match(line.reason, /it needs GLIBC 2\.\d+ or later, and this is Node\.js/);
  for (let i = 0; i < 6; i++) {
    const v = await version(server.baseUrl);
    assert.equal(v.engine, line.engine);
    assert.equal(v.node, process.version);
    assert.equal(v.name, 'rbac-gateway');
    assert.match(v.version, /^\d+\.\d+\.\d+/);
  }
});

test('auto never runs the JavaScript fallback of uWebSockets.js: node:http serves instead', { skip: noJsFallback }, async (t) => {
  const server = await startServer({ env: { AUTH_HTTP_ENGINE: 'auto', UWS_USE_FALLBACK: '1' } });
  t.after(() => server.stop());
  const line = engineLine(server.output());
  assert.equal(line.engine, 'node');
  assert.match(line.reason, /native/);
  namesThisNode(line.reason);
  assert.equal((await version(server.baseUrl)).engine, 'node');
  const client = server.client();
  assert.equal((await client.createRole('admin')).status, 201);
  assert.deepEqual((await client.listRoles()).data, [{ role: 'admin', description: '' }]);
  // The package's own warnings are caught (and summed up in the reason), not printed.
  const foreign = server
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('{"level":'));
  assert.deepEqual(foreign, [], "every output line is one of the service's JSON log lines");
});

test('auto where no native build loads: node:http serves, and the reason says what is missing', async (t) => {
  if (!(await requirePostgres(t))) return;
  const database = await freshPostgresDatabase(t);
  const server = await startServer({
    env: { AUTH_HTTP_ENGINE: 'auto', NODE_OPTIONS: '--no-addons', AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: database.url },
  });
  t.after(() => server.stop());
  const line = engineLine(server.output());
  assert.equal(line.engine, 'node');
  assert.match(line.reason, /^AUTH_HTTP_ENGINE=auto and uWebSockets\.js has no native build/);
  namesThisNode(line.reason);
  assert.equal((await version(server.baseUrl)).engine, 'node');
  assert.equal((await server.client().createRole('admin')).status, 201);
});

test('uws that cannot load natively stops start-up with exit code 2 and one line saying why', async () => {
  const tmp = tempDir('rbac-engine-');
  try {
    const { code, output } = await runToExit({
      AUTH_HTTP_ENGINE: 'uws',
      NODE_OPTIONS: '--no-addons',
      AUTH_SERVER_PORT: String(await freePort()),
      AUTH_SQLITE_PATH: `${tmp.dir}/db/rbac.sqlite3`,
      AUTH_WORKERS: '1',
    });
    assert.equal(code, 2, output);
    const lines = output
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('rbac-gateway:'));
    assert.equal(lines.length, 1, output);
    assert.match(lines[0] as string, /AUTH_HTTP_ENGINE=uws, but uWebSockets\.js has no native build/);
    namesThisNode(lines[0] as string);
  } finally {
    tmp.cleanup();
  }
});
