/**
 * The benchmark kit's `clients` kind, black-box: the runner on a tiny many-clients scenario of our
 * own (BENCH_SCENARIOS) against the real gateway must hydrate each client exactly once, check
 * every answer, and report each of its figures; a stand-in without a worker process must fail the
 * run rather than report another process's memory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/launcher.ts';
import { tempDir } from '../helpers/server.ts';

const CLIENTS = 40;

const TINY = {
  title: 'tiny clients',
  models: 'a test of the kit',
  kind: 'clients',
  data: { clients: CLIENTS, users: 8, roles: 3, permissions: 12, rolesPerUser: 1, grantsPerRole: [3, 3] },
  gateway: { workers: 1 },
  connections: 4,
  idleS: 1,
  settleS: 0,
  randomClient: true,
  warmupS: 0,
  durationS: 1,
  rounds: 1,
  verifyEvery: 2,
  variants: [{ label: 'unbounded' }, { label: 'budget', gateway: { env: { AUTH_CACHE_MAX_MB: '1' } }, idleS: 0, randomClient: false }],
};

interface Report {
  ok: boolean;
  failures: string[];
  runs: Array<{ label: string; extra: Record<string, number>; correctness: { checked: number; wrong: number } }>;
}

function bench(name: string, env: Record<string, string>): { code: number | null; out: string; report: Report } {
  const dir = tempDir('rbac-bench-clients-test-');
  const out = `test-clients-${name}-${process.pid}`;
  try {
    writeFileSync(join(dir.dir, 'tiny.json'), JSON.stringify(TINY));
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'tiny', '--out', out], {
      cwd: ROOT,
      env: { ...process.env, BENCH_SCENARIOS: dir.dir, ...env },
      encoding: 'utf8',
      timeout: 300_000,
    });
    const file = join(ROOT, 'bench', 'results', `${out}.json`);
    const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
    for (const ext of ['json', 'md']) rmSync(join(ROOT, 'bench', 'results', `${out}.${ext}`), { force: true });
    return { code: r.status, out: `${r.stdout}${r.stderr}`, report };
  } finally {
    dir.cleanup();
  }
}

test('every client hydrates once, every answer is checked, every figure is reported', () => {
  const { code, out, report } = bench('real', {});
  assert.equal(code, 0, out);
  assert.ok(report.ok, report.failures.join('\n'));
  assert.match(out, /seeded \d+ writes × 40 clients/);
  assert.equal(out.match(/seeded \d+ writes/g)?.length, 1, 'one seeding for both variants');
  const [unbounded, budget] = report.runs;
  assert.ok(unbounded !== undefined && budget !== undefined);
  for (const run of report.runs) {
    const x = run.extra;
    assert.equal(x.hydrations, CLIENTS - 1, `${run.label}: hydrations`);
    assert.equal(x.cacheClients, CLIENTS, `${run.label}: cached clients`);
    assert.ok((x.clientsPerS ?? 0) > 0 && (x.workerCpuUsPerClient ?? 0) > 0, JSON.stringify(x));
    assert.ok(Number.isFinite(x.rssBytesPerClient) && (x.estimatedBytesPerClient ?? 0) > 0, JSON.stringify(x));
    // A true and a false answer per client, beyond the first client's warm-up.
    assert.ok(run.correctness.checked >= 2 * (CLIENTS - 1) && run.correctness.wrong === 0, JSON.stringify(run.correctness));
  }
  assert.ok((unbounded.extra.idleWorkerCpuPct ?? -1) >= 0 && (unbounded.extra.idlePrimaryCpuPct ?? -1) >= 0, JSON.stringify(unbounded.extra));
  assert.ok((unbounded.extra.randomOverOneCpuRatio ?? 0) > 0, JSON.stringify(unbounded.extra));
  assert.equal(unbounded.extra.hydrationsInRounds, 0);
  assert.ok(Number.isFinite(budget.extra.rssGrowthOverBudgetRatio), JSON.stringify(budget.extra));
  assert.equal(budget.extra.idleWorkerCpuPct, undefined, 'idleS 0: no idle measurement');
  assert.equal(budget.extra.randomOverOneCpuRatio, undefined, 'randomClient false: no rounds');
});

test('a stand-in without a worker process fails the run, naming why', () => {
  const { code, out, report } = bench('bare', { BENCH_GATEWAY_ENTRY: 'bench/lib/bare-server.ts' });
  assert.equal(code, 1, out);
  assert.equal(report.ok, false);
  assert.match(out, /FAILED:[\s\S]*expected one worker process/);
});
