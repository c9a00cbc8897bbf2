/**
 * Deployment artefacts (deploy/rbac-gateway.service, deploy/Dockerfile, .dockerignore): the unit's
 * hardening is in place and the compiled service really runs under it (started with the unit's own
 * command and environment, it writes nothing outside its state directory); the image is
 * multi-stage, runs compiled code as a non-root user and checks readiness. Docker cannot build
 * here, so the Dockerfile is checked by reading it.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { ensureBuilt } from '../helpers/build.ts';
import { freePort, ROOT, tempDir } from '../helpers/server.ts';
import { sleep } from '../helpers/wait.ts';

const UNIT = join(ROOT, 'deploy/rbac-gateway.service');
const DOCKERFILE = join(ROOT, 'deploy/Dockerfile');
const DOCKERIGNORE = join(ROOT, '.dockerignore');

type Ini = Map<string, Map<string, string[]>>;

/** A systemd unit as section → key → values (a key may repeat); comments and continuations handled. */
function readIni(text: string): Ini {
  const out: Ini = new Map();
  let section: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header !== null) {
      section = new Map();
      out.set(header[1] ?? '', section);
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(section !== undefined && eq > 0, `unit line outside a section or without '=': ${line}`);
    const key = line.slice(0, eq).trim();
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return out;
}

/** Words of a systemd command line or `Environment=` value (double quotes group, no escapes). */
function words(value: string): string[] {
  return [...value.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

const unit = readIni(readFileSync(UNIT, 'utf8'));
const service = unit.get('Service') ?? new Map<string, string[]>();

/** The last value of a `[Service]` key (later assignments win in systemd). */
function last(key: string): string | undefined {
  return service.get(key)?.at(-1);
}

/** The unit's `Environment=` assignments, `%S` (the state root) replaced by `stateRoot`. */
function unitEnvironment(stateRoot: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const value of service.get('Environment') ?? []) {
    for (const word of words(value)) {
      const eq = word.indexOf('=');
      if (eq > 0)
        env[word.slice(0, eq)] = word
          .slice(eq + 1)
          .replaceAll('%S', stateRoot)
          .replaceAll('%%', '%');
    }
  }
  return env;
}

test('systemd unit: hardening options, no MemoryDenyWriteExecute', () => {
  const expected: Record<string, string> = {
    ProtectSystem: 'strict',
    ProtectHome: 'yes',
    PrivateTmp: 'yes',
    NoNewPrivileges: 'yes',
    ProtectKernelTunables: 'yes',
    ProtectKernelModules: 'yes',
    LockPersonality: 'yes',
    KillSignal: 'SIGTERM',
    RestartPreventExitStatus: '2',
    WorkingDirectory: '/opt/rbac-gateway',
  };
  for (const [key, value] of Object.entries(expected)) assert.equal(last(key), value, key);
  assert.deepEqual(new Set(words(last('RestrictAddressFamilies') ?? '')), new Set(['AF_INET', 'AF_INET6', 'AF_UNIX']));
  assert.ok(last('DynamicUser') === 'yes' || (last('User') ?? 'root') !== 'root', 'runs as DynamicUser or a User other than root');
  assert.equal(last('EnvironmentFile'), '-/etc/rbac-gateway.env', 'optional env file');
  // V8's JIT needs memory that is writable and executable: the service would not start.
  assert.notEqual(last('MemoryDenyWriteExecute'), 'yes');
  const stop = Number(/^(\d+)s?$/.exec(last('TimeoutStopSec') ?? '')?.[1]);
  assert.ok(stop > 10, `TimeoutStopSec (${last('TimeoutStopSec')}) must exceed the 10 s drain`);
});

test('systemd unit: runs the compiled service, keeps its data in the state directory', () => {
  const exec = words(last('ExecStart') ?? '');
  assert.match(exec[0] ?? '', /^\/\S*\/node$/, 'ExecStart starts node by absolute path');
  assert.ok(exec.includes('dist/main.js'), `ExecStart runs dist/main.js: ${exec.join(' ')}`);
  assert.ok(!exec.some((w) => /tsx|\.ts$/.test(w)), `no TypeScript loader at run time: ${exec.join(' ')}`);
  const state = last('StateDirectory');
  assert.ok(state !== undefined && /^[\w.-]+$/.test(state), 'StateDirectory is one folder name');
  const sqlite = unitEnvironment('/var/lib').AUTH_SQLITE_PATH;
  assert.ok(sqlite !== undefined, 'the unit sets AUTH_SQLITE_PATH');
  assert.ok(posix.normalize(sqlite).startsWith(`/var/lib/${state}/`), `${sqlite} lies under /var/lib/${state}/`);
});

interface Dockerfile {
  /** Instructions of each stage, `[keyword, arguments]`, continuations joined. */
  stages: Array<Array<[string, string]>>;
}

function readDockerfile(text: string): Dockerfile {
  const stages: Dockerfile['stages'] = [];
  const lines = text.replace(/\\[ \t]*\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\w+)\s+(.*)$/.exec(line);
    assert.ok(m !== null, `Dockerfile line: ${line}`);
    const keyword = (m[1] ?? '').toUpperCase();
    if (keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push([keyword, (m[2] ?? '').trim()]);
  }
  return { stages };
}

/** `.dockerignore` patterns as regular expressions matching a path or a folder above it. */
function ignorePatterns(text: string): RegExp[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('!'))
    .map((p) => {
      const body = p
        .replace(/^\/+|\/+$/g, '')
        .split(/(\*\*\/|\*|\?)/)
        .map((part) => (part === '**/' ? '(?:.*/)?' : part === '*' ? '[^/]*' : part === '?' ? '[^/]' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
        .join('');
      return new RegExp(`^${body}(?:/.*)?$`);
    });
}

test('Dockerfile: multi-stage, non-root, readiness check, compiled entry point', () => {
  const { stages } = readDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  assert.ok(stages.length >= 2, `multi-stage (${stages.length} FROM)`);
  const build = stages[0] ?? [];
  const final = stages.at(-1) ?? [];
  const get = (stage: Array<[string, string]>, k: string): string[] => stage.filter(([kw]) => kw === k).map(([, a]) => a);
  const image = (s: Array<[string, string]>): string => (get(s, 'FROM')[0] ?? '').split(/\s+/)[0] ?? '';
  assert.equal(image(final), image(build), 'runtime on the same base as the build (same glibc, same Node ABI)');
  assert.match(image(final), /^node:(2[2-9]|[3-9]\d)[.-]/, 'a Node.js image of 22 or later');
  assert.ok(
    get(build, 'RUN').some((r) => /npm ci\b/.test(r)),
    'build stage installs with npm ci',
  );
  assert.ok(
    get(build, 'RUN').some((r) => /npm prune --omit=dev/.test(r)),
    'build stage drops dev dependencies',
  );

  const user = get(final, 'USER').at(-1);
  assert.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `final stage runs as a non-root USER (${user})`);
  assert.ok(
    get(final, 'HEALTHCHECK').some((h) => h.includes('/ready')),
    'HEALTHCHECK asks /ready',
  );
  const cmd = get(final, 'CMD').at(-1) ?? '';
  const argv = JSON.parse(cmd) as unknown;
  assert.ok(Array.isArray(argv), `exec-form CMD, so SIGTERM reaches node: ${cmd}`);
  assert.deepEqual(argv, ['node', 'dist/main.js']);
  assert.deepEqual(get(final, 'ENTRYPOINT'), [], 'no ENTRYPOINT wrapping node');
  assert.ok(!final.some(([, a]) => /\btsx\b|src\/main\.ts/.test(a)), 'no TypeScript at run time');

  const env = get(final, 'ENV').join(' ');
  assert.match(env, /NODE_ENV=production/);
  assert.match(env, /AUTH_SERVER_HOST=0\.0\.0\.0/);
  const sqlite = /AUTH_SQLITE_PATH=(\S+)/.exec(env)?.[1] ?? '/app/data/rbac.sqlite3';
  const volumes = get(final, 'VOLUME').flatMap((v) => (v.startsWith('[') ? (JSON.parse(v) as string[]) : v.split(/\s+/)));
  assert.ok(
    volumes.some((v) => sqlite.startsWith(`${v.replace(/\/$/, '')}/`)),
    `the SQLite file ${sqlite} lies on a VOLUME (${volumes.join(', ')})`,
  );
  assert.ok(get(final, 'EXPOSE').join(' ').split(/\s+/).includes('5000'), 'EXPOSE 5000');
});

test('.dockerignore: keeps local state out, and nothing the build copies', () => {
  const patterns = ignorePatterns(readFileSync(DOCKERIGNORE, 'utf8'));
  const ignored = (path: string): boolean => patterns.some((re) => re.test(path));
  for (const path of ['node_modules', 'node_modules/x/index.js', 'data', 'data/rbac.sqlite3', 'dist', '.git', 'x.sqlite3-wal', 'bench/results']) {
    assert.ok(ignored(path), `${path} is ignored`);
  }
  const { stages } = readDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  for (const [keyword, args] of stages.flat()) {
    if (keyword !== 'COPY' || /--from=/.test(args)) continue;
    const sources = args
      .split(/\s+/)
      .filter((w) => !w.startsWith('--'))
      .slice(0, -1);
    for (const source of sources) {
      assert.ok(!ignored(source.replace(/^\.\/|\/$/g, '')), `COPY ${source}: excluded by .dockerignore`);
      assert.ok(existsSync(join(ROOT, source)), `COPY ${source}: no such file in the repository`);
    }
  }
});

/**
 * Files under the repository that are new or changed, by `git status` (ignored files included,
 * node_modules and dist/ aside) with each file's size and mtime, so that a file already modified
 * still shows a further change.
 */
function repoSnapshot(): Map<string, string> {
  const out = execFileSync('git', ['status', '--porcelain=v1', '-z', '--ignored', '--untracked-files=all', '--', '.', ':!node_modules', ':!dist'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const snap = new Map<string, string>();
  for (const record of out.split('\0')) {
    if (record.length < 4) continue;
    const path = record.slice(3);
    let stamp = 'gone';
    try {
      const st = statSync(join(ROOT, path));
      stamp = `${st.size}@${st.mtimeMs}`;
    } catch {
      // deleted: the status says so
    }
    snap.set(path, `${record.slice(0, 2)} ${stamp}`);
  }
  return snap;
}

/**
 * Files people and tools edit while tests run (sources, tests, benchmark results): the service
 * never writes any of them, so a change there during the run is not its doing. Data, logs,
 * config/*.json and anything else still count.
 */
function editedByOthers(path: string): boolean {
  return (
    /\.(ts|mts|cts|mjs|js|md)$/.test(path) ||
    /^(src|tests|bench|deploy)\//.test(path) ||
    /^(package(-lock)?\.json|tsconfig[\w.]*\.json|\.gitignore|\.dockerignore)$/.test(path)
  );
}

/** Every file under `dir`, relative to it. */
function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

before(ensureBuilt);

test("the unit's command and environment: serves, writes only in the state directory, stops with 0", async (t) => {
  const root = tempDir('rbac-deploy-');
  t.after(root.cleanup);
  // Stand-ins for /var/lib (%S), the service's HOME and its private /tmp: after the run, only the
  // state directory may hold anything.
  const stateRoot = join(root.dir, 'var-lib');
  const stateDir = join(stateRoot, last('StateDirectory') ?? 'rbac-gateway');
  const home = join(root.dir, 'home');
  const tmp = join(root.dir, 'tmp');
  for (const d of [stateDir, home, tmp]) mkdirSync(d, { recursive: true });

  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    TMPDIR: tmp,
    ...unitEnvironment(stateRoot),
    AUTH_SERVER_HOST: '127.0.0.1',
    AUTH_SERVER_PORT: String(port),
    AUTH_METRICS_PORT: '0',
    AUTH_WORKERS: '1',
    AUTH_LOG_LEVEL: 'warn',
  };
  assert.ok(env.AUTH_SQLITE_PATH?.startsWith(`${stateDir}/`), `AUTH_SQLITE_PATH ${env.AUTH_SQLITE_PATH} under ${stateDir}`);
  const [, ...args] = words(last('ExecStart') ?? '');
  const repoBefore = repoSnapshot();

  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });

  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    assert.ok(proc.exitCode === null, `exited before serving (code ${proc.exitCode}):\n${output}`);
    assert.ok(Date.now() < deadline, `no answer on /ping within 10 s:\n${output}`);
    const ok = await fetch(`${base}/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await sleep(50);
  }
  const ready = await fetch(`${base}/ready`);
  assert.equal(ready.status, 200, `ready: ${await ready.text()}`);

  const headers = { Authorization: `Bearer ${randomUUID()}` };
  const created = await fetch(`${base}/api/role/x`, { method: 'POST', headers });
  assert.equal(created.status, 201, await created.text());
  const roles = await fetch(`${base}/api/roles`, { headers });
  assert.equal(roles.status, 200);
  assert.deepEqual(((await roles.json()) as { data: unknown }).data, [{ role: 'x', description: '' }]);

  proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 12_000)))]);
  clearTimeout(timer);
  assert.equal(code, 0, `exit code after SIGTERM:\n${output}`);

  assert.deepEqual(listFiles(home), [], 'nothing written in HOME');
  assert.deepEqual(listFiles(tmp), [], 'nothing written in TMPDIR');
  const state = listFiles(stateDir);
  assert.ok(state.includes('rbac.sqlite3'), `the SQLite file is in the state directory: ${state.join(', ')}`);
  for (const f of state) assert.match(f, /^rbac\.sqlite3(-wal|-shm|-journal)?$/, 'only the SQLite file and its siblings');
  assert.deepEqual(readdirSync(root.dir).sort(), ['home', 'tmp', 'var-lib'], 'nothing beside the state root');
  assert.deepEqual(readdirSync(stateRoot), [posix.basename(stateDir)], 'nothing else under the state root');

  const repoAfter = repoSnapshot();
  const changed = [...new Set([...repoBefore.keys(), ...repoAfter.keys()])].filter((p) => repoBefore.get(p) !== repoAfter.get(p) && !editedByOthers(p));
  assert.deepEqual(changed, [], 'files under the repository created or changed by the service');
});
