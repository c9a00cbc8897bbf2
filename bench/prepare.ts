/**
 * Steps shared by the benchmarks (bench/run.ts, bench/cluster.ts) before any load: describing the
 * data set, seeding it over HTTP, checking a sample of answers, capturing raw answers for the
 * bare server. Each prints one line of progress.
 */
import type { RbacClient } from '../src/client/index.ts';
import type { BenchConfig } from './config.ts';
import { probePath, writeCount, type Dataset, type Probe } from './dataset.ts';
import { seed, type SeedResult } from './seed.ts';
import { checkSample, type Expectation, type Tally } from './verify.ts';

export function datasetInfo(cfg: BenchConfig, ds: Dataset): object {
  return {
    seed: cfg.seed,
    users: ds.users.length,
    roles: ds.roles.length,
    permissions: ds.permissions.length,
    memberships: ds.memberships.reduce((n, m) => n + m.length, 0),
    grants: ds.grants.reduce((n, g) => n + g.length, 0),
    writes: writeCount(ds),
  };
}

/** One raw answer of the gateway, to give the bare server bodies of the same size. */
export async function rawAnswer(baseUrl: string, key: string, p: Probe): Promise<{ body: string; requestId: string }> {
  const res = await fetch(baseUrl + probePath(p), { headers: { authorization: `Bearer ${key}` } });
  return { body: await res.text(), requestId: res.headers.get('x-request-id') ?? '' };
}

export interface Seeding extends SeedResult {
  writesPerSecond: number;
  concurrency: number;
}

/** Seeds the whole data set into an empty client (throws on a failed write or the time limit). */
export async function seedDataset(cfg: BenchConfig, ds: Dataset, client: RbacClient): Promise<Seeding> {
  console.log(`seeding ${writeCount(ds)} writes, ${cfg.seedConcurrency} in flight...`);
  const seeded = await seed(client, ds, cfg.seedConcurrency, cfg.seedTimeoutS);
  const writesPerSecond = seeded.writes / seeded.seconds;
  console.log(`seeded ${seeded.writes} writes in ${seeded.seconds.toFixed(1)} s (${writesPerSecond.toFixed(0)} writes/s), revision ${seeded.maxRevision}`);
  return { ...seeded, writesPerSecond, concurrency: cfg.seedConcurrency };
}

/** Checks every probe of `sample` (16 in flight) and prints the tally and the first wrong answers. */
export async function checkAnswers(client: RbacClient, sample: Probe[], exp: Expectation, label = 'correctness'): Promise<Tally & { seconds: number }> {
  const t0 = performance.now();
  const tally = await checkSample(client, sample, exp, 16);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`${label}: ${tally.checked} has_permission answers checked in ${seconds.toFixed(1)} s, ${tally.wrong} wrong`);
  for (const e of tally.examples) console.log(`  WRONG: ${e}`);
  return { ...tally, seconds };
}
