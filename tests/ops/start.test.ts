/**
 * `npm start` (docs/operations.md §1): runs the compiled service (never tsx), execs it so that signals
 * reach it and its exit code is npm's, answers /ping (how soon is the benchmark kit's business), and
 * `npm start -- --check-config` validates and exits without opening anything.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuilt } from '../helpers/build.ts';
import { engineEnv, freePort, ROOT, tempDir } from '../helpers/server.ts';
import { descendants } from '../helpers/processes.ts';
import { sleep } from '../helpers/wait.ts';

before(ensureBuilt);

const NPM_ENV = { npm_config_update_notifier: 'false', npm_config_loglevel: 'silent' };

/** Pids whose parent is `pid`, read from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // Field 4 of /proc/<pid>/stat is the parent; the command name before it may hold spaces.
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a) => a !== '');
}

function exitOf(proc: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) resolve(proc.exitCode);
    else proc.once('exit', (code) => resolve(code));
  });
}

test('npm start serves compiled JavaScript, and SIGTERM ends it with 0', async (t) => {
  const tmp = tempDir('rbac-start-');
  t.after(tmp.cleanup);
  const port = await freePort();
  const spawnedAt = Date.now();
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: tmp.dir,
      ...NPM_ENV,
      ...engineEnv(),
      AUTH_SERVER_PORT: String(port),
      AUTH_SQLITE_PATH: join(tmp.dir, 'rbac.sqlite3'),
      AUTH_WORKERS: '2',
      AUTH_METRICS_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  npm.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  t.after(() => {
    // After a failed assertion the service still runs: killing npm alone would orphan it, and the
    // output pipes it inherited would keep this test's process waiting for them forever.
    for (const pid of descendants(npm.pid as number)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    npm.kill('SIGKILL');
  });

  let answeredAfter: number | undefined;
  while (answeredAfter === undefined && Date.now() - spawnedAt < 60_000 && npm.exitCode === null) {
    const ok = await fetch(`http://127.0.0.1:${port}/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) answeredAfter = Date.now() - spawnedAt;
    else await sleep(20);
  }
  assert.ok(answeredAfter !== undefined, `no /ping answer:\n${output}`);
  t.diagnostic(`/ping answered ${answeredAfter} ms after spawning npm start`);

  const [primary, ...others] = childrenOf(npm.pid as number);
  assert.ok(primary !== undefined && others.length === 0, 'npm start execs the service: one child, the primary');
  const processes = [primary, ...childrenOf(primary)];
  assert.ok(processes.length >= 3, 'the primary and its two workers');
  for (const pid of processes) {
    const args = commandLine(pid);
    assert.ok(
      args.some((a) => a.endsWith('dist/main.js')),
      `pid ${pid} runs ${args.join(' ')}`,
    );
    assert.ok(!args.some((a) => /tsx/.test(a)), `pid ${pid} runs tsx: ${args.join(' ')}`);
  }

  process.kill(primary, 'SIGTERM');
  assert.equal(await exitOf(npm), 0, output);
});

test('npm start -- --check-config prints the effective settings, secrets redacted, and opens nothing', () => {
  const tmp = tempDir('rbac-check-');
  try {
    const sqlitePath = join(tmp.dir, 'never', 'rbac.sqlite3');
    const run = (env: Record<string, string>) =>
      spawnSync('npm', ['start', '--', '--check-config'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: tmp.dir, ...NPM_ENV, AUTH_SQLITE_PATH: sqlitePath, ...env },
        encoding: 'utf8',
      });
    const ok = run({ AUTH_REDIS_URL: 'redis://user:hunter2-secret@127.0.0.1:6379/0', AUTH_WORKERS: '3' });
    assert.equal(ok.status, 0, ok.stderr);
    const lines = ok.stdout.trim().split('\n');
    assert.equal(lines.length, 1, ok.stdout);
    const { config } = JSON.parse(lines[0] as string) as { config: Record<string, unknown> };
    assert.equal(config.AUTH_WORKERS, 3);
    assert.equal(config.AUTH_HTTP_ENGINE, process.env.AUTH_HTTP_ENGINE ?? 'auto');
    assert.equal(config.AUTH_REDIS_URL, 'redis://user:[redacted]@127.0.0.1:6379/0');
    assert.ok(!ok.stdout.includes('hunter2'), 'the password is not printed');
    assert.ok(!existsSync(join(tmp.dir, 'never')), 'no database folder was created');

    const bad = run({ AUTH_SERVER_PORT: 'abc' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /AUTH_SERVER_PORT/);
  } finally {
    tmp.cleanup();
  }
});
