/**
 * The command line's `export` and `import` (CONTRACT §13.2, docs/operations.md §10) against a real
 * server: a client moved by file into a fresh key answers every read alike; `--out -` keeps stdout
 * for the data; `--dry-run` stores nothing; `--mode replace`; bad usage exits 2, a refusal or a
 * cut transfer 1 (leaving no partial file); the key is never printed; a progress bar only on a
 * terminal.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { RbacClient } from '../../src/client/index.ts';
import { onlyResult, runCli, type CliRun } from '../helpers/cli.ts';
import { ROOT, startServer, tempDir, type RunningServer } from '../helpers/server.ts';

const LATER = '2031-06-01T09:00:00.000000Z';
const LATEST = '2032-01-01T00:00:00.000000Z';
const ROLES = ['Administrators', 'editors', 'stale'];
const USERS = ['alice', 'bob', 'carol@example.com', 'dave'];
const PERMISSIONS = ['read', 'write', 'Read'];

let server: RunningServer;
let tmp: { dir: string; cleanup: () => void };
before(async () => {
  tmp = tempDir('rbac-cli-transfer-');
  server = await startServer();
});
after(async () => {
  await server.stop();
  tmp.cleanup();
});

/** A fresh client and the environment that names its key as RBAC_KEY. */
function client(): { c: RbacClient; key: string; env: Record<string, string> } {
  const key = randomUUID();
  return { c: server.client(key), key, env: { RBAC_KEY: key } };
}

const remote = (): string[] => ['--url', server.baseUrl, '--key-env', 'RBAC_KEY'];

/** Roles with descriptions, grants and memberships, windows pending and closing. */
async function seed(c: RbacClient): Promise<void> {
  const must = async (p: Promise<{ status: number; error?: string | undefined }>): Promise<void> => {
    const res = await p;
    assert.ok(res.status < 300, `seeding: HTTP ${res.status} ${res.error ?? ''}`);
  };
  await must(c.createRole('Administrators', { description: 'admins' }));
  await must(c.createRole('editors', { description: 'ünïcode ✓' }));
  await must(c.grant('Administrators', 'read'));
  await must(c.grant('Administrators', 'Read', { expiresAt: LATEST }));
  await must(c.grant('editors', 'write'));
  await must(c.addMember('alice', 'Administrators'));
  await must(c.addMember('bob', 'editors', { notBefore: LATER, expiresAt: LATEST }));
  await must(c.addMember('carol@example.com', 'editors', { expiresAt: LATEST }));
  await must(c.addMember('dave', 'Administrators', { notBefore: LATER }));
}

/** Every read route's data for the names in play. */
async function reads(c: RbacClient): Promise<unknown[]> {
  const get = async (path: string): Promise<unknown> => (await c.request('GET', path)).data;
  const out: unknown[] = [await get('/api/roles'), await get('/api/windows')];
  for (const role of ROLES) {
    out.push(await get(`/api/role_permissions/${role}`), await get(`/api/members/${role}`));
    for (const p of PERMISSIONS) out.push(await get(`/api/permission/${role}/${p}`));
  }
  for (const user of USERS) {
    out.push(await get(`/api/user_roles/${user}`), await get(`/api/user_permissions/${user}`));
    for (const role of ROLES) out.push(await get(`/api/membership/${user}/${role}`));
    for (const p of PERMISSIONS) out.push(await get(`/api/has_permission/${user}/${p}`), await get(`/api/explain/${user}/${p}`));
  }
  for (const p of PERMISSIONS) out.push(await get(`/api/which_users_can/${p}`), await get(`/api/which_roles_can/${p}`));
  return out;
}

/** The export's lines without the header (whose time differs from one export to the next). */
async function exportBody(c: RbacClient): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of c.exportClient()) lines.push(line);
  return lines.slice(1);
}

function noKeyIn(run: CliRun, key: string): void {
  assert.ok(!(run.stdout + run.stderr).includes(key), 'the key is never printed');
}

const noPartials = (dir: string): void =>
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.partial')),
    [],
    'no partial file left',
  );

test('export --out F, then import --in F into a fresh key: every read route answers alike', async () => {
  const source = client();
  await seed(source.c);
  const file = join(tmp.dir, 'client.ndjson');
  const exported = await runCli(['export', ...remote(), '--out', file], source.env);
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(exported.stderr, '');
  noKeyIn(exported, source.key);
  const { exported: summary } = onlyResult(exported) as { exported: Record<string, unknown> };
  assert.deepEqual(
    { ...summary, seconds: 0 },
    {
      revision: 9,
      roles: 2,
      permissions: 3,
      memberships: 4,
      lines: 10,
      bytes: readFileSync(file).byteLength,
      seconds: 0,
      out: file,
    },
  );
  const text = readFileSync(file, 'utf8');
  assert.ok(text.endsWith('\n'));
  assert.deepEqual(text.trimEnd().split('\n').slice(1), await exportBody(source.c), 'the file is the service export');
  noPartials(tmp.dir);

  const target = client();
  const imported = await runCli(['import', ...remote(), '--in', file], target.env);
  assert.equal(imported.code, 0, imported.stderr);
  noKeyIn(imported, target.key);
  const { imported: done } = onlyResult(imported) as { imported: Record<string, unknown> };
  assert.deepEqual(
    { ...done, seconds: 0 },
    {
      revision: 1,
      roles: 2,
      permissions: 3,
      memberships: 4,
      added: 9,
      removed: 0,
      lines: 10,
      bytes: Buffer.byteLength(text),
      seconds: 0,
      in: file,
    },
  );
  assert.deepEqual(await reads(target.c), await reads(source.c));
  assert.deepEqual(await exportBody(target.c), await exportBody(source.c));
});

test('--out - (and no --out) puts the data alone on stdout and the result line on stderr; stdin imports', async () => {
  const source = client();
  await seed(source.c);
  for (const out of [['--out', '-'], []]) {
    const run = await runCli(['export', ...remote(), ...out], source.env);
    assert.equal(run.code, 0, run.stderr);
    noKeyIn(run, source.key);
    const lines = run.stdout.trimEnd().split('\n');
    assert.equal((JSON.parse(lines[0] as string) as { format: string }).format, 'rbac-gateway.export');
    assert.deepEqual(lines.slice(1), await exportBody(source.c));
    const result = JSON.parse(run.stderr) as { exported: { memberships: number; out: string } };
    assert.equal(result.exported.memberships, 4);
    assert.equal(result.exported.out, '-');
    // Piped (chunked, size unknown) and from a regular file (its size sent): stdin either way.
    const file = join(tmp.dir, `stdout-${out.length}.ndjson`);
    writeFileSync(file, run.stdout);
    for (const input of [{ text: run.stdout }, { file }]) {
      const target = client();
      const imported = await runCli(['import', ...remote(), ...(out.length === 0 ? [] : ['--in', '-'])], target.env, input);
      assert.equal(imported.code, 0, imported.stderr);
      assert.equal((onlyResult(imported) as { imported: { in: string } }).imported.in, '-');
      assert.deepEqual(await reads(target.c), await reads(source.c));
    }
  }
});

test('--dry-run stores nothing and answers what would change', async () => {
  const source = client();
  await seed(source.c);
  const file = join(tmp.dir, 'dry.ndjson');
  assert.equal((await runCli(['export', ...remote(), '--out', file], source.env)).code, 0);
  const target = client();
  const before = await reads(target.c);
  const run = await runCli(['import', ...remote(), '--in', file, '--dry-run'], target.env);
  assert.equal(run.code, 0, run.stderr);
  const { imported } = onlyResult(run) as { imported: Record<string, unknown> };
  assert.equal(imported.dry_run, true);
  assert.equal(imported.added, 9);
  assert.ok((imported.gained_count as number) > 0, 'alice would gain read');
  assert.deepEqual(await reads(target.c), before, 'nothing stored');
  assert.deepEqual(await exportBody(target.c), []);
});

test('--mode merge keeps what the file lacks; --mode replace makes the data exactly the file; --if-match', async () => {
  const source = client();
  await seed(source.c);
  const file = join(tmp.dir, 'replace.ndjson');
  assert.equal((await runCli(['export', ...remote(), '--out', file], source.env)).code, 0);
  const target = client();
  assert.ok((await target.c.createRole('stale')).status < 300);
  assert.ok((await target.c.addMember('alice', 'stale')).status < 300);
  const merged = await runCli(['import', ...remote(), '--in', file, '--mode', 'merge'], target.env);
  assert.equal(merged.code, 0, merged.stderr);
  assert.equal((onlyResult(merged) as { imported: { roles: number } }).imported.roles, 3, 'merge keeps stale');
  const stale = await runCli(['import', ...remote(), '--in', file, '--mode', 'replace', '--if-match', '2'], target.env);
  assert.equal(stale.code, 1, 'the client is at revision 3, not 2');
  assert.deepEqual((onlyResult(stale) as { error: { status: number } }).error.status, 412);
  const replaced = await runCli(['import', ...remote(), '--in', file, '--mode', 'replace', '--if-match', '3'], target.env);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.deepEqual((onlyResult(replaced) as { imported: { removed: number; revision: number } }).imported.removed, 2);
  assert.deepEqual(await reads(target.c), await reads(source.c));
});

test('bad usage exits 2 and names what is wrong; the key is never printed', async () => {
  const key = randomUUID();
  const url = server.baseUrl;
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [['export', '--key-env', 'RBAC_KEY'], { RBAC_KEY: key }, /--url is required/],
    [['import', '--url', url], { RBAC_KEY: key }, /--key-env is required/],
    [['export', '--url', url, '--key-env', 'RBAC_KEY'], {}, /environment variable RBAC_KEY \(named by --key-env\) is not set/],
    [['import', '--url', url, '--key-env', 'RBAC_KEY'], { RBAC_KEY: '' }, /environment variable RBAC_KEY \(named by --key-env\) is empty/],
    [['export', '--url', url, '--key-env', 'RBAC_KEY', '--key', key], { RBAC_KEY: key }, /unknown option --key/],
    [['export', '--url', url, '--key-env', key], { RBAC_KEY: key }, /--key-env takes the name of an environment variable/],
    [['import', '--url', url, '--key-env', 'RBAC_KEY', '--mode', 'upsert'], { RBAC_KEY: key }, /--mode is merge or replace/],
    [['import', '--url', url, '--key-env', 'RBAC_KEY', '--if-match', 'W/"3"'], { RBAC_KEY: key }, /--if-match is a revision/],
    [['export', '--url', 'ftp://x', '--key-env', 'RBAC_KEY'], { RBAC_KEY: key }, /http:\/\/ or https:\/\//],
    [['export', '--url', `http://u:${key}@127.0.0.1:1`, '--key-env', 'RBAC_KEY'], { RBAC_KEY: key }, /may not hold credentials/],
  ];
  for (const [args, env, reason] of cases) {
    const run = await runCli(args, env);
    const label = args.join(' ').replace(key, 'KEY');
    assert.equal(run.code, 2, `${label}: ${run.stderr}`);
    assert.match(run.stderr, reason, label);
    const lines = [...run.stdout.split('\n'), ...run.stderr.split('\n')].filter((l) => l.startsWith('{'));
    assert.equal((JSON.parse(lines[0] as string) as { error: { exit_code: number } }).error.exit_code, 2, label);
    noKeyIn(run, key);
  }
  const stdoutMode = await runCli(['export', '--url', url, '--key-env', 'RBAC_KEY'], {});
  assert.equal(stdoutMode.stdout, '', 'with the data on stdout, even an error line goes to stderr');
});

test('a refused file, a bad key, a missing file exit 1 with the reason; nothing is stored', async () => {
  const target = client();
  const bad = `${JSON.stringify({ format: 'rbac-gateway.export', version: 1 })}\n${JSON.stringify({ type: 'role', role: 'r' })}\n{"type":"bogus"}\n`;
  const run = await runCli(['import', ...remote()], target.env, { text: bad });
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /HTTP 400: line 3: /);
  const { error } = onlyResult(run) as { error: { status: number; message: string; exit_code: number } };
  assert.deepEqual([error.status, error.exit_code], [400, 1]);
  assert.match(error.message, /line 3/);
  assert.deepEqual(await exportBody(target.c), [], 'nothing stored');
  noKeyIn(run, target.key);

  const badKey = 'not-a-client-key-123';
  const denied = await runCli(['export', ...remote(), '--out', join(tmp.dir, 'denied.ndjson')], { RBAC_KEY: badKey });
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /export failed: HTTP 401/);
  noKeyIn(denied, badKey);
  assert.ok(!existsSync(join(tmp.dir, 'denied.ndjson')));
  noPartials(tmp.dir);

  const missing = await runCli(['import', ...remote(), '--in', join(tmp.dir, 'nope.ndjson')], target.env);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /there is no file/);
});

/** A stand-in for the service that answers GET /api/export with `write`, then ends (or cuts) the connection. */
async function fakeExporter(write: (res: ServerResponse) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const fake: Server = createServer((_req, res) => write(res));
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const { port } = fake.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => fake.close(() => resolve())) };
}

test('a transfer cut before its end, or an answer that is no export, exits 1 and leaves the old file as it was', async () => {
  const header = `${JSON.stringify({ format: 'rbac-gateway.export', version: 1, revision: 4, exported_at: LATER })}\n`;
  const cut = await fakeExporter((res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(`${header}{"type":"role","role":"a","description":""}\n{"type":"member`);
    setTimeout(() => res.socket?.destroy(), 50);
  });
  const html = await fakeExporter((res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html>a login page</html>\n');
  });
  try {
    const file = join(tmp.dir, 'kept.ndjson');
    writeFileSync(file, 'the previous export\n');
    const key = randomUUID();
    for (const [url, reason] of [
      [cut.url, /the export was cut before its end/],
      [html.url, /not an export/],
    ] as const) {
      const run = await runCli(['export', '--url', url, '--key-env', 'RBAC_KEY', '--out', file], { RBAC_KEY: key });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, reason);
      assert.equal(readFileSync(file, 'utf8'), 'the previous export\n', 'the old file stays whole');
      noPartials(tmp.dir);
    }
  } finally {
    await Promise.all([cut.close(), html.close()]);
  }
});

test('a progress bar on stderr when it is a terminal (counts, rate; time left for an import); none when piped', async (t) => {
  if (spawnSync('script', ['--version'], { encoding: 'utf8' }).status !== 0) return t.skip('no `script` here to give the command a terminal');
  const source = client();
  await seed(source.c);
  const entry = /\.js$/.test(process.env.AUTH_TEST_ENTRY ?? '') ? 'dist/cli/main.js' : '--import tsx src/cli/main.ts';
  const file = join(tmp.dir, 'tty.ndjson');
  const results = join(tmp.dir, 'tty-stdout.json');
  const onTerminal = (command: string, env: Record<string, string>): string => {
    // The key goes in the environment, never in the command line.
    const tty = spawnSync('script', ['-qec', `${process.execPath} ${entry} ${command} > ${results}`, '/dev/null'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: '', TERM: 'xterm', ...env },
    });
    assert.equal(tty.status, 0, tty.stdout + tty.stderr);
    assert.ok(!tty.stdout.includes(env.RBAC_KEY as string), 'the key is never printed');
    return tty.stdout;
  };
  const url = `--url ${server.baseUrl} --key-env RBAC_KEY`;
  const exported = onTerminal(`export ${url} --out ${file}`, source.env);
  assert.match(exported, /export \| [\d.]+ (B|KiB) \| 10 lines \| [\d.]+ (B|KiB|MiB)\/s \| \d+s/, 'export: size unknown, counts and rate');
  assert.ok(!readFileSync(results, 'utf8').includes('\u001b'), 'stdout holds the result line only');
  const target = client();
  const imported = onTerminal(`import ${url} --in ${file}`, target.env);
  assert.match(imported, /import \[[█░]+\] 100% \| [\d.]+ (B|KiB) of [\d.]+ (B|KiB) \| 10 lines \| [\d.]+ (B|KiB|MiB)\/s \| \d+s left/);
  for (const [args, env] of [
    [['export', ...remote(), '--out', file], source.env],
    [['import', ...remote(), '--in', file], client().env],
  ] as const) {
    const piped = await runCli(args, env);
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stderr, '', 'no bar when stderr is not a terminal');
  }
});
