/**
 * The command line's conventions (docs/operations.md §10), black box: `--help` at the top and on
 * each command; exit 0 done, 2 bad usage or settings, 1 failure; one JSON line per result on
 * stdout; `check-config` and `version` answering as `npm start -- --check-config` and
 * GET /version do; the package's bin through `npx`; a progress bar on stderr only on a terminal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureBuilt } from '../helpers/build.ts';
import { onlyResult, runCli } from '../helpers/cli.ts';
import { ROOT, startServer, tempDir } from '../helpers/server.ts';
import { entryArgs } from '../../support/launcher.ts';

const COMMANDS = ['check-config', 'version', 'export', 'import', 'backup', 'restore', 'rotate-encryption-key'];

test('--help lists every command; each command has its own; no command at all is bad usage', async () => {
  const top = await runCli(['--help']);
  assert.equal(top.code, 0, top.stderr);
  for (const c of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${c} `, 'm'), `--help lists ${c}`);
  for (const c of COMMANDS) {
    const run = await runCli([c, '--help']);
    assert.equal(run.code, 0, `${c} --help: ${run.stderr}`);
    assert.match(run.stdout, new RegExp(`^Usage: rbac-gateway ${c}`), `${c} --help starts with its usage`);
    assert.match(run.stdout, /Exit codes: 0 done, 1 failed/, `${c} --help names the exit codes`);
  }
  const none = await runCli([]);
  assert.equal(none.code, 2);
  assert.match(none.stdout, /^Usage: rbac-gateway <command>/);
});

test('bad usage exits 2 with one JSON error line on stdout and the reason on stderr', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['frobnicate'], /unknown command "frobnicate"/],
    [['backup'], /--out is required/],
    [['backup', '--out'], /--out needs a value/],
    [['backup', '--out', 'x', '--verbose'], /unknown option --verbose/],
    [['restore', 'file.bak'], /unexpected argument "file.bak"/],
    [['version', '--force=1'], /unknown option --force/],
    [['rotate-encryption-key', '--encrypt', '--decrypt'], /--encrypt and --decrypt exclude each other/],
  ];
  for (const [args, reason] of cases) {
    const run = await runCli(args);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    const { error } = onlyResult(run) as { error: { message: string; exit_code: number } };
    assert.match(error.message, reason, args.join(' '));
    assert.equal(error.exit_code, 2);
    assert.match(run.stderr, reason, `${args.join(' ')}: stderr says why`);
  }
});

test('bad settings exit 2 and name the variable, never a secret', async () => {
  const run = await runCli(['backup', '--out', '/tmp/never'], { AUTH_DATABASE_TYPE: 'oracle', AUTH_ENCRYPTION_KEY: 'never-shown-secret-1' });
  assert.equal(run.code, 2);
  assert.match(run.stderr, /AUTH_DATABASE_TYPE="oracle" is invalid/);
  assert.ok(!(run.stdout + run.stderr).includes('never-shown-secret-1'));
  const keys: Array<[Record<string, string>, RegExp]> = [
    [{}, /AUTH_ENCRYPTION_KEY is required to rotate/],
    [{ AUTH_ENCRYPTION_KEY: 'k1-secret-value' }, /AUTH_NEW_ENCRYPTION_KEY is required to rotate/],
    [{ AUTH_ENCRYPTION_KEY: 'same-secret-value', AUTH_NEW_ENCRYPTION_KEY: 'same-secret-value' }, /nothing to rotate/],
  ];
  for (const [env, reason] of keys) {
    const r = await runCli(['rotate-encryption-key'], { AUTH_SQLITE_PATH: '/nonexistent/db.sqlite3', ...env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, reason);
    for (const secret of Object.values(env)) assert.ok(!(r.stdout + r.stderr).includes(secret), 'no key is ever printed');
  }
  assert.equal((await runCli(['rotate-encryption-key', '--encrypt'])).code, 2, '--encrypt needs AUTH_NEW_ENCRYPTION_KEY');
  assert.equal((await runCli(['rotate-encryption-key', '--decrypt'])).code, 2, '--decrypt needs AUTH_ENCRYPTION_KEY');
});

test('check-config prints what npm start -- --check-config prints, secrets redacted', async () => {
  const env = { AUTH_SERVER_PORT: '5999', AUTH_ENABLE_ENCRYPTION: 'true', AUTH_ENCRYPTION_KEY: 'a-secret-key-1', AUTH_NEW_ENCRYPTION_KEY: 'a-secret-key-2' };
  const cli = await runCli(['check-config'], env);
  assert.equal(cli.code, 0, cli.stderr);
  const { config } = onlyResult(cli) as { config: Record<string, unknown> };
  assert.equal(config.AUTH_SERVER_PORT, 5999);
  assert.equal(config.AUTH_ENCRYPTION_KEY, '[redacted]');
  assert.equal(config.AUTH_NEW_ENCRYPTION_KEY, '[redacted]');
  const direct = spawnSync(process.execPath, [...entryArgs(), '--check-config'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8',
  });
  assert.equal(direct.status, 0, direct.stderr);
  assert.equal(cli.stdout, direct.stdout, 'the same line as the service prints');
});

test('version answers what GET /version answers on a server with the same settings', async (t) => {
  const tmp = tempDir('rbac-cli-version-');
  t.after(() => tmp.cleanup());
  const server = await startServer({ sqlitePath: join(tmp.dir, 'db.sqlite3') });
  t.after(() => server.stop());
  const body = (await (await fetch(`${server.baseUrl}/version`)).json()) as Record<string, unknown>;
  const run = await runCli(['version']);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(onlyResult(run), body);
});

test('failures exit 1 with the reason: no database, a backup file that exists, a file that is no backup', async () => {
  const tmp = tempDir('rbac-cli-fail-');
  try {
    const env = { AUTH_SQLITE_PATH: join(tmp.dir, 'missing.sqlite3') };
    const noDb = await runCli(['backup', '--out', join(tmp.dir, 'b.sqlite3')], env);
    assert.equal(noDb.code, 1, noDb.stderr);
    assert.match((onlyResult(noDb) as { error: { message: string } }).error.message, /there is no database at/);
    assert.ok(!existsSync(env.AUTH_SQLITE_PATH), 'a backup never creates the database');
    const noKey = await runCli(['rotate-encryption-key', '--encrypt'], { ...env, AUTH_NEW_ENCRYPTION_KEY: 'k-new-secret' });
    assert.equal(noKey.code, 1, noKey.stderr);
    const junk = join(tmp.dir, 'junk.bak');
    writeFileSync(junk, 'not a backup\n');
    const restored = await runCli(['restore', '--in', junk], { AUTH_SQLITE_PATH: join(tmp.dir, 'new.sqlite3') });
    assert.equal(restored.code, 1, restored.stderr);
    assert.match(restored.stderr, /is not a SQLite backup/);
    const missing = await runCli(['restore', '--in', join(tmp.dir, 'nope.bak')], { AUTH_SQLITE_PATH: join(tmp.dir, 'new.sqlite3') });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /there is no file/);
  } finally {
    tmp.cleanup();
  }
});

test('the package bin runs through npx from the project folder', async () => {
  ensureBuilt();
  const { stdout } = await promisify(execFile)('npx', ['--no-install', 'rbac-gateway', 'version'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    encoding: 'utf8',
  });
  assert.deepEqual(Object.keys(JSON.parse(stdout) as object), ['name', 'version', 'node', 'engine']);
});

test('a progress bar is drawn on stderr when it is a terminal, and never on stdout', async (t) => {
  const script = spawnSync('script', ['--version'], { encoding: 'utf8' });
  if (script.status !== 0) return t.skip('no `script` here to give the command a terminal');
  const tmp = tempDir('rbac-cli-tty-');
  t.after(() => tmp.cleanup());
  const server = await startServer({ sqlitePath: join(tmp.dir, 'db.sqlite3') });
  await server.client().createRole('r');
  await server.stop();
  const entry = /\.js$/.test(process.env.AUTH_TEST_ENTRY ?? '') ? 'dist/cli/main.js' : '--import tsx src/cli/main.ts';
  const out = join(tmp.dir, 'stdout.json');
  const command = `AUTH_SQLITE_PATH=${join(tmp.dir, 'db.sqlite3')} ${process.execPath} ${entry} backup --out ${join(tmp.dir, 'b.sqlite3')} > ${out}`;
  const tty = spawnSync('script', ['-qec', command, '/dev/null'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: '', TERM: 'xterm' },
  });
  assert.equal(tty.status, 0, tty.stdout + tty.stderr);
  assert.match(tty.stdout, /backup \[[█░]+\] 100% \| \d+\/\d+ pages \| \d+ pages\/s \| 0s left/, 'the bar, on the terminal');
  const plain = await runCli(['backup', '--out', join(tmp.dir, 'c.sqlite3')], { AUTH_SQLITE_PATH: join(tmp.dir, 'db.sqlite3') });
  assert.equal(plain.stderr, '', 'no bar when stderr is not a terminal');
});
