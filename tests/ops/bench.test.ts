/**
 * The benchmark kit, black-box: the runner on a tiny scenario of our own (BENCH_SCENARIOS) against
 * the real gateway must pass with checked answers and a CPU figure; the same scenario against a
 * stand-in that answers wrongly must fail, with autocannon and with wrk (whose runs are framed by
 * checked samples); every row says whether it was client-bound; bench:compare must exit 1 above
 * its threshold, 0 under it and 2 on a client-bound run, and set two variants of one file against
 * each other with --pair; every shipped scenario must parse, quick and full. Windowed data sets
 * keep the edges and probes of the same shape without windows, pending edges answering false; the
 * dry-run batches' expected gain is the model's own difference; a tiny run of windowed checks,
 * batch checks and dry runs against the real gateway passes with its answers checked. The transfer
 * scenario, tiny, imports and exports a client beside a checked load and reports its figures and goals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseScenario, readScenario, resolve, scenarioNames } from '../../bench/lib/scenario.ts';
import { generate, probes, type Dataset } from '../../bench/lib/dataset.ts';
import { dryRunBatches, dryRunJudge, gainedPairs } from '../../bench/lib/dry-run.ts';
import type { Goal } from '../../bench/lib/measure.ts';
import { dataLines, LineDigest, transferShape, writeTransferFile, type Digest } from '../../bench/lib/transfer-file.ts';
import type { Change } from '../../src/authz/changes.ts';
import { RbacModel } from '../../support/rbac-model.ts';
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
    // Windowed: the grants and memberships with a window go over HTTP with their bounds.
    JSON.stringify({
      ...TINY,
      target: true,
      data: { users: 30, roles: 4, permissions: 20, rolesPerUser: 2, grantsPerRole: [2, 5], windowed: 0.3, pending: 0.5 },
    }),
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

const SMALL = {
  users: 300,
  roles: 20,
  permissions: 200,
  rolesPerUser: 3,
  grantsPerRole: [2, 9] as [number, number],
  clients: 1,
  hotHolders: 0,
  pareto: 1.2,
  seed: 3,
};

test('a windowed data set: the same edges and probes as without windows, pending edges answering false, laid out once for every process', () => {
  const plain = generate(SMALL);
  const timed = generate({ ...SMALL, windowed: 0.3, pending: 0.5 });
  assert.ok(timed.windows.active > 0 && timed.windows.pending > 0, JSON.stringify(timed.windows));
  const edge = (c: Change): string => JSON.stringify({ op: c.op, role: c.role, other: 'user' in c ? c.user : 'permission' in c ? c.permission : '' });
  assert.deepEqual(timed.changes.map(edge), plain.changes.map(edge));
  const [a, b] = [probes(plain, 2_000, 0.2, 9), probes(timed, 2_000, 0.2, 9)];
  assert.deepEqual(
    b.map((p) => `${p.user} ${p.permission}`),
    a.map((p) => `${p.user} ${p.permission}`),
  );
  const closed = b.filter((p, i) => a[i]?.expected === true && !p.expected);
  assert.ok(closed.length > 0, 'no probe answers false through a pending edge');
  // The load generator's processes rebuild the data set from the shape it carries: the same windows.
  assert.equal(typeof timed.shape.windowsFromUs, 'number');
  assert.deepEqual(generate(timed.shape).changes, timed.changes);
  // Decided when asked: a day later every window has closed (active ones end at most 24 hours on, pending ones too).
  const from = timed.shape.windowsFromUs ?? 0;
  const active = timed.changes.find((c) => c.op === 'membership.add' && c.notBefore !== undefined && c.notBefore < from);
  assert.ok(active !== undefined && active.op === 'membership.add');
  assert.ok(timed.model.userRoleNames(active.user).includes(active.role));
  const saved = timed.model.clock;
  timed.model.clock = () => from + 24 * 3_600_000_000 + 1;
  try {
    assert.ok(!timed.model.userRoleNames(active.user).includes(active.role));
  } finally {
    timed.model.clock = saved;
  }
});

/** The (user, permission) pairs that hold after `items` and not before, by asking two models everything. */
function bruteGain(ds: Dataset, items: readonly Change[]): string[] {
  const after = RbacModel.of([...ds.changes, ...items]);
  const users = [...new Set([...ds.users, ...items.flatMap((c) => ('user' in c ? [c.user] : []))])];
  const out: string[] = [];
  for (const u of users) for (const p of ds.permissions) if (after.hasPermission(u, p) && !ds.model.hasPermission(u, p)) out.push(`${u} ${p}`);
  return out.sort();
}

test("a dry-run batch adds only edges the data set lacks, and its expected gain is the model's difference", () => {
  for (const ds of [generate(SMALL), generate({ ...SMALL, windowed: 0.3, pending: 0.5 })]) {
    const batches = dryRunBatches(ds, 3, 120, 11);
    for (const b of batches) {
      assert.equal(b.items.length, 120);
      assert.equal(new Set(b.items.map((i) => JSON.stringify(i))).size, 120);
      const items = b.items as Change[];
      const gained = gainedPairs(ds.model, b.items);
      assert.deepEqual(
        gained.map((g) => `${g.user} ${g.permission}`),
        bruteGain(ds, items),
      );
      assert.ok(gained.length > 0);
      // The judge takes the right preview and names what is wrong with another.
      const judge = dryRunJudge(
        b,
        () => gained,
        (r) => r === ds.changes.length,
      );
      const right = {
        revision: ds.changes.length,
        valid: true,
        results: b.items.map(() => ({ status: 201 })),
        gained,
        lost: [],
        gained_count: gained.length,
        lost_count: 0,
        truncated: false,
      };
      assert.equal(judge(200, JSON.stringify({ data: right })), undefined);
      assert.match(judge(200, JSON.stringify({ data: { ...right, gained_count: gained.length + 1 } })) ?? '', /gained_count/);
      assert.match(judge(200, JSON.stringify({ data: { ...right, gained: gained.slice(1) } })) ?? '', /gained \[/);
      assert.match(judge(200, JSON.stringify({ data: { ...right, valid: false } })) ?? '', /valid false/);
    }
  }
});

test('the new routes against the real gateway: windowed checks, batch checks and a dry run, every sampled answer right', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    const scenario = {
      ...TINY,
      data: { ...TINY.data, windowed: 0.3, pending: 0.5 },
      checkBatch: 20,
      routes: { has_permission: 4, check: 1, dry_run: 1 },
    };
    writeFileSync(join(dir.dir, 'tiny.json'), JSON.stringify(scenario));
    const r = bench(['tiny', '--out', `test-windows-${process.pid}`], { BENCH_SCENARIOS: dir.dir });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /windows on \d+ grants and memberships: \d+ active now, \d+ pending/);
    const file = join(ROOT, 'bench', 'results', `test-windows-${process.pid}.json`);
    const report = JSON.parse(readFileSync(file, 'utf8')) as {
      runs: Array<{ correctness: { checked: number; wrong: number }; extra: Record<string, number> }>;
    };
    const run = report.runs[0];
    assert.ok(run !== undefined && run.correctness.checked > 0 && run.correctness.wrong === 0, JSON.stringify(run?.correctness));
    assert.ok((run.extra.windowsPending ?? 0) > 0 && (run.extra.dryRunGainedPairs ?? 0) > 0, JSON.stringify(run.extra));
    spawnSync('rm', ['-f', file, file.replace(/json$/, 'md')]);
  } finally {
    dir.cleanup();
  }
});

test('bench:compare --pair sets two variants of one file against each other', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    const run = (label: string, cpu: number): object => ({
      scenario: 's',
      label,
      figures: { rps: 1000, p50: 1, p99: 2, p999: 3, cpuPerOpUs: cpu, serverCores: 1, otherCores: 0, rssMb: 50, clientBound: false },
      extra: {},
      correctness: { checked: 1, wrong: 0, examples: [] },
    });
    const file = join(dir.dir, 'one.json');
    const machine = { cpus: 2, model: 'm', node: 'v', backgroundCores: 0 };
    const runs = [run('plain', 10), run('timed', 12)];
    writeFileSync(file, JSON.stringify({ schema: 1, startedAt: 'x', seconds: 1, quick: true, machine, scenarios: ['s'], failures: [], ok: true, runs }));
    const compare = (...args: string[]): { code: number | null; out: string } => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/compare.ts', file, file, ...args], { cwd: ROOT, encoding: 'utf8' });
      return { code: r.status, out: r.stdout + r.stderr };
    };
    const up = compare('--pair', 'plain=timed');
    assert.equal(up.code, 1, up.out);
    assert.match(up.out, /s\/plain → timed: CPU per operation 10\.00 → 12\.00/);
    assert.equal(compare('--pair', 'plain=timed', '--threshold', '25').code, 0);
    const missing = compare('--pair', 'plain=nothing');
    assert.equal(missing.code, 2, missing.out);
    assert.match(missing.out, /no runs of one scenario labelled 'plain' in A and 'nothing' in B/);
  } finally {
    dir.cleanup();
  }
});

test("the transfer file's digest: the same lines in any order agree, a changed or missing line does not", () => {
  const digest = (text: string, chunk: number): Digest => {
    const d = new LineDigest();
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += chunk) d.feed(bytes.subarray(at, at + chunk));
    return d.digest();
  };
  const lines = ['{"type":"role","role":"a","description":""}', '{"type":"membership","user":"u","role":"a"}', '{"type":"membership","user":"v","role":"a"}'];
  const file = digest(`{"header":1}\n${lines.join('\n')}\n`, 1 << 20);
  assert.equal(file.lines, 3);
  // Another header, another order, cut into chunks inside lines, no last newline: the same lines.
  assert.deepEqual(digest(`{"header":2}\n${[...lines].reverse().join('\n')}`, 7).sums, file.sums);
  assert.notDeepEqual(digest(`{"header":1}\n${lines.join('\n').replace('"v"', '"w"')}\n`, 5).sums, file.sums);
  assert.equal(digest(`{"header":1}\n${lines.slice(1).join('\n')}\n`, 5).lines, 2);
  // The file of a shape: its lines counted, every membership distinct (the import refuses a repeated line).
  const dir = tempDir('rbac-bench-test-');
  try {
    const shape = transferShape(1_000);
    const path = join(dir.dir, 'f.ndjson');
    const written = writeTransferFile(path, shape);
    const text = readFileSync(path, 'utf8').trimEnd().split('\n');
    assert.equal(written.lines, dataLines(shape));
    assert.equal(text.length, dataLines(shape) + 1);
    assert.equal(new Set(text).size, text.length);
    assert.equal(text.filter((l) => l.includes('"membership"')).length, 1_000);
  } finally {
    dir.cleanup();
  }
});

test('the transfer scenario, tiny, on SQLite: an import and an export beside a checked load, every figure and goal reported', () => {
  const dir = tempDir('rbac-bench-test-');
  try {
    // The shipped file at a tiny size: 2,000 memberships, one round, the load for a second.
    const tiny = { ...readScenario('transfer'), transferMemberships: 2_000, data: TINY.data, durationS: 1, warmupS: 0, rounds: 1 };
    writeFileSync(join(dir.dir, 'transfer.json'), JSON.stringify(tiny));
    const r = bench(['transfer', '--variant', 'sqlite', '--out', `test-transfer-${process.pid}`], { BENCH_SCENARIOS: dir.dir });
    assert.equal(r.code, 0, r.out);
    const file = join(ROOT, 'bench', 'results', `test-transfer-${process.pid}.json`);
    const report = JSON.parse(readFileSync(file, 'utf8')) as {
      runs: Array<{ label: string; extra: Record<string, number>; goals: Goal[]; correctness: { checked: number; wrong: number } }>;
    };
    spawnSync('rm', ['-f', file, file.replace(/json$/, 'md')]);
    assert.deepEqual(
      report.runs.map((x) => x.label),
      ['sqlite'],
    );
    const run = report.runs[0];
    assert.ok(run !== undefined && run.correctness.checked > 2 && run.correctness.wrong === 0, JSON.stringify(run?.correctness));
    assert.equal(run.extra.transferLines, dataLines(transferShape(2_000)));
    for (const k of [
      'importSeconds',
      'importLinesPerS',
      'exportSeconds',
      'exportLinesPerS',
      'exportMiB',
      'loadP99AtRestMs',
      'loadP99DuringImportMs',
      'loadP99DuringExportMs',
    ])
      assert.ok((run.extra[k] ?? NaN) > 0, `${k}: ${run.extra[k]}`);
    for (const k of ['importServerCpuS', 'importServerRssGrowthMiB', 'exportServerCpuS', 'exportWorkerRssGrowthMiB'])
      assert.ok(Number.isFinite(run.extra[k]), `${k}: ${run.extra[k]}`);
    assert.deepEqual(
      run.goals.map((g) => [g.unit, typeof g.met]),
      [
        ['s', 'boolean'],
        ['s', 'boolean'],
        ['MiB', 'boolean'],
      ],
    );
    assert.match(r.out, /goal: transfer\/sqlite: import of 2,000 memberships .*: (met|NOT MET)/);
  } finally {
    dir.cleanup();
  }
});
