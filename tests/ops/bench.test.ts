/**
 * The benchmark kit, black-box: the runner on a tiny scenario of our own (BENCH_SCENARIOS) against
 * the real gateway must pass with checked answers and a CPU figure; the same scenario against a
 * stand-in that answers wrongly must fail, with autocannon and with wrk (whose runs are framed by
 * checked samples); every row says whether it was client-bound; bench:compare must exit 1 above
 * its threshold, 0 under it and 2 on a client-bound run; every shipped scenario must parse, quick
 * and full.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseScenario, readScenario, resolve, scenarioNames } from '../../bench/lib/scenario.ts';
import { generate } from '../../bench/lib/dataset.ts';
import { ROOT } from '../../support/launcher.ts';
import Database from 'better-sqlite3';
import { startServer, tempDir } from '../helpers/server.ts';
import { prepared } from '../../src/store/sqlite/prepared.ts';

const TINY = {
  title: 'tiny',
  models: 'a test of the kit',
  routes: { has_permission: 3, user_permissions: 1 },
  data: { users: 200, roles: 10, permissions: 100 },
  durationS: 1,
  warmupS: 0,
  rounds: 1,
  connections: 4,
  verifyEvery: 2,
};

function bench(args: string[], env: Record<string, string>): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('every shipped scenario parses and resolves, quick and full', () => {
  const names = scenarioNames();
  assert.ok(names.length >= 10, `only ${names.length} scenarios`);
  for (const name of names) {
    const file = readScenario(name);
    for (const quick of [false, true]) {
      const runs = resolve(name, file, quick);
      assert.ok(runs.length >= 1, name);
      for (const r of runs) assert.ok(Object.values(r.settings.routes).some((w) => (w ?? 0) > 0) || r.settings.kind !== 'load', `${name}/${r.label}: no route`);
    }
  }
});

test('a scenario with an unknown field or a bad value is refused, naming it', () => {
  assert.throws(() => parseScenario('x', JSON.stringify({ ...TINY, conections: 4 })), /conections/);
  assert.throws(() => parseScenario('x', JSON.stringify({ ...TINY, routes: { has_permision: 1 } })), /has_permision/);
  assert.throws(() => parseScenario('x', JSON.stringify({ ...TINY, gateway: { store: 'mysql' } })), /\/gateway\/store/);
});

test('the data set and the shared model agree', () => {
  const ds = generate({ users: 300, roles: 20, permissions: 200, rolesPerUser: 3, grantsPerRole: [2, 9], clients: 1, hotHolders: 5, pareto: 1.2, seed: 3 });
  for (let u = 0; u < ds.users.length; u += 7) {
    for (let p = 0; p < ds.permissions.length; p += 11) {
      const user = ds.users[u] ?? '';
      const perm = ds.permissions[p] ?? '';
      const direct = (ds.rolesOf[u] ?? []).some((r) => (ds.permsOf[r] ?? []).includes(p));
      assert.equal(ds.model.hasPermission(user, perm), direct, `${user} ${perm}`);
    }
  }
  assert.equal(ds.model.revision, ds.changes.length);
});

test('a run against the real gateway checks answers and reports CPU per operation', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    writeFileSync(join(dir.dir, 'tiny.json'), JSON.stringify(TINY));
    const r = bench(['tiny', '--out', `test-${process.pid}`], { BENCH_SCENARIOS: dir.dir });
    assert.equal(r.code, 0, r.out);
    const file = join(ROOT, 'bench', 'results', `test-${process.pid}.json`);
    const report = JSON.parse(readFileSync(file, 'utf8')) as {
      ok: boolean;
      runs: Array<{
        correctness: { checked: number; wrong: number };
        figures: { cpuPerOpUs: number; clientBound: unknown };
        rounds: Array<{ generator: string; clientCores: number; clientBound: unknown }>;
      }>;
    };
    const run = report.runs[0];
    assert.ok(report.ok && run !== undefined);
    assert.ok(run.correctness.checked > 0 && run.correctness.wrong === 0, JSON.stringify(run.correctness));
    assert.ok(run.figures.cpuPerOpUs > 0, `cpu per op ${run.figures.cpuPerOpUs}`);
    // Flat out: every row says whether the server was saturated; the load came from the client processes.
    assert.equal(typeof run.figures.clientBound, 'boolean');
    for (const r of run.rounds) assert.ok(r.generator === 'autocannon' && r.clientCores > 0 && typeof r.clientBound === 'boolean', JSON.stringify(r));
    spawnSync('rm', ['-f', file, file.replace(/json$/, 'md')]);
  } finally {
    dir.cleanup();
  }
});

test('a gateway that answers wrongly fails the run', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    // The bare server, started in the gateway's place, answers true and false in turn whatever is asked.
    writeFileSync(join(dir.dir, 'tiny.json'), JSON.stringify({ ...TINY, routes: { has_permission: 1 } }));
    const r = bench(['tiny', '--out', `test-wrong-${process.pid}`], { BENCH_SCENARIOS: dir.dir, BENCH_GATEWAY_ENTRY: 'bench/lib/bare-server.ts' });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /FAILED:[\s\S]*wrong answers/);
    for (const ext of ['json', 'md']) spawnSync('rm', ['-f', join(ROOT, 'bench', 'results', `test-wrong-${process.pid}.${ext}`)]);
  } finally {
    dir.cleanup();
  }
});

test('with --client wrk wrk sends the rounds, and answers are still checked: a gateway that answers wrongly fails', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    writeFileSync(join(dir.dir, 'tiny.json'), JSON.stringify({ ...TINY, routes: { has_permission: 1 } }));
    const ok = bench(['tiny', '--client', 'wrk', '--out', `test-wrk-${process.pid}`], { BENCH_SCENARIOS: dir.dir });
    assert.equal(ok.code, 0, ok.out);
    const file = join(ROOT, 'bench', 'results', `test-wrk-${process.pid}.json`);
    const report = JSON.parse(readFileSync(file, 'utf8')) as { runs: Array<{ correctness: { checked: number }; rounds: Array<{ generator: string }> }> };
    const run = report.runs[0];
    assert.ok(run !== undefined && run.correctness.checked > 0, ok.out);
    assert.deepEqual(
      run.rounds.map((r) => r.generator),
      ['wrk'],
    );
    const wrong = bench(['tiny', '--client', 'wrk', '--out', `test-wrk-wrong-${process.pid}`], {
      BENCH_SCENARIOS: dir.dir,
      BENCH_GATEWAY_ENTRY: 'bench/lib/bare-server.ts',
    });
    assert.equal(wrong.code, 1, wrong.out);
    assert.match(wrong.out, /FAILED:[\s\S]*wrong answers/);
    for (const base of [`test-wrk-${process.pid}`, `test-wrk-wrong-${process.pid}`])
      for (const ext of ['json', 'md']) spawnSync('rm', ['-f', join(ROOT, 'bench', 'results', `${base}.${ext}`)]);
  } finally {
    dir.cleanup();
  }
});

test('BENCH_TARGET: a running instance is seeded under a fresh key, measured, and left as it was', async (t) => {
  const dir = tempDir('rbac-bench-test-');
  // A SQLite file of its own whatever AUTH_TEST_DATABASE says: the test reads it afterwards.
  const server = await startServer({ sqlitePath: join(dir.dir, 'target.sqlite3') });
  t.after(async () => {
    await server.stop();
    dir.cleanup();
  });
  writeFileSync(
    join(dir.dir, 'tiny.json'),
    JSON.stringify({ ...TINY, target: true, data: { users: 30, roles: 4, permissions: 20, rolesPerUser: 2, grantsPerRole: [2, 5] } }),
  );
  const r = bench(['tiny', '--out', `test-target-${process.pid}`], { BENCH_SCENARIOS: dir.dir, BENCH_TARGET: server.baseUrl });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /seeded \d+ writes over HTTP under a fresh key/);
  for (const ext of ['json', 'md']) spawnSync('rm', ['-f', join(ROOT, 'bench', 'results', `test-target-${process.pid}.${ext}`)]);
  const db = new Database(server.sqlitePath, { readonly: true });
  try {
    for (const table of ['roles', 'grants', 'memberships']) {
      assert.equal((prepared(db, `SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n, 0, `${table} left behind`);
    }
  } finally {
    db.close();
  }
});

test('bench:compare exits 1 when CPU per operation grew above the threshold, 0 under it', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    const report = (cpu: number, clientBound = false): string =>
      JSON.stringify({
        schema: 1,
        startedAt: 'x',
        seconds: 1,
        quick: true,
        machine: { cpus: 2, model: 'm', node: 'v', backgroundCores: 0 },
        scenarios: ['s'],
        failures: [],
        ok: true,
        runs: [
          {
            scenario: 's',
            label: 'l',
            figures: { rps: 1000, p50: 1, p99: 2, p999: 3, cpuPerOpUs: cpu, serverCores: 1, otherCores: 0, rssMb: 50, clientBound },
            extra: {},
            correctness: { checked: 1, wrong: 0, examples: [] },
          },
        ],
      });
    const [a, b, c] = ['a', 'b', 'c'].map((n) => join(dir.dir, `${n}.json`)) as [string, string, string];
    writeFileSync(a, report(10));
    writeFileSync(b, report(11.5));
    writeFileSync(c, report(10.5));
    const compare = (x: string, y: string, ...more: string[]): { code: number | null; out: string } => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/compare.ts', x, y, ...more], { cwd: ROOT, encoding: 'utf8' });
      return { code: r.status, out: r.stdout + r.stderr };
    };
    const up = compare(a, b);
    assert.equal(up.code, 1, up.out);
    assert.match(up.out, /REGRESSION[\s\S]*s\/l: CPU per operation 10\.00 → 11\.50/);
    assert.equal(compare(a, c).code, 0);
    assert.equal(compare(a, c, '--threshold', '4').code, 1);
    // A client-bound run measured the load generator: no comparison unless asked for.
    const bound = join(dir.dir, 'bound.json');
    writeFileSync(bound, report(10.5, true));
    const refused = compare(a, bound);
    assert.equal(refused.code, 2, refused.out);
    assert.match(refused.out, /refusing to compare client-bound runs[\s\S]*B s\/l/);
    const anyway = compare(a, bound, '--allow-client-bound');
    assert.equal(anyway.code, 0, anyway.out);
    assert.match(anyway.out, /WARNING: comparing client-bound runs/);
  } finally {
    dir.cleanup();
  }
});
