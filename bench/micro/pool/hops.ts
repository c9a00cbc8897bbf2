/**
 * `npm run bench:hops`: what one hand-off between threads or processes costs on this machine, in
 * CPU. A write crosses about eight of them (HTTP in, the pool thread and back, the primary, every
 * other worker and back, HTTP out), and that, more than the SQL, is what a write costs the checks
 * beside it (bench/README.md). Each hop is measured twice: back to back (the other side is still
 * awake) and paced 2.5 ms apart, as writes at a few hundred per second are, so that the other
 * side has gone to sleep and must be woken. The paced loop's own timer wake-up is measured alone
 * and subtracted. CPU is both sides' process.cpuUsage() (every thread of the process).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { sleep } from '../../lib/procs.ts';
import { table } from '../../lib/stats.ts';

const N = 2_000;
const PACE_MS = 2.5;
const SELF = fileURLToPath(import.meta.url);

/** A write request of one change, a change message as the fan-out carries it, and a batch of one write as the pool gets it. */
const grantOf = (i: number): object => ({ op: 'permission.grant', role: 'r', permission: `p${i}` });
const change = (i: number): object => ({ v: 1, tenant: 'a'.repeat(64), revision: i, changes: [grantOf(i)] });

/** CPU microseconds of this process while `fn` runs `N` times, per iteration. */
async function perIteration(fn: (i: number) => Promise<unknown>, paced: boolean): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    await fn(i);
    if (paced) await sleep(PACE_MS);
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / N;
}

async function main(): Promise<void> {
  const rows: Array<[string, string, string]> = [];
  const us = (x: number): string => `${Math.round(x)} µs`;

  const timer = await perIteration(async () => undefined, true);
  rows.push([`timer wake-up alone (subtracted below)`, '-', us(timer)]);

  const pool = new Piscina({ filename: new URL('./hops-task.ts', import.meta.url).href, name: 'echo', minThreads: 1, maxThreads: 1 });
  try {
    const run = (i: number): Promise<unknown> => pool.run({ kind: 'writeMany', writes: [{ tenant: 'a'.repeat(64), changes: [grantOf(i)] }] });
    for (let i = 0; i < 100; i++) await run(i);
    rows.push(['piscina round trip (a one-write batch, echoed)', us(await perIteration(run, false)), us((await perIteration(run, true)) - timer)]);
  } finally {
    await pool.destroy();
  }

  const child = fork(SELF, ['echo'], { execArgv: ['--import', 'tsx'] });
  try {
    await new Promise<void>((resolve) => child.once('message', () => resolve()));
    const roundTrip = (i: number): Promise<unknown> =>
      new Promise((resolve) => {
        child.once('message', resolve);
        child.send({ t: 'apply', id: i, msgs: [change(i)] });
      });
    const childCpu = (): Promise<number> =>
      new Promise((resolve) => {
        child.once('message', (m: { cpu: number }) => resolve(m.cpu));
        child.send({ t: 'cpu' });
      });
    for (let i = 0; i < 100; i++) await roundTrip(i);
    /** Both processes' CPU per round trip (less the parent's timer wake-up when paced). */
    const both = async (paced: boolean): Promise<number> => {
      const c0 = await childCpu();
      const own = await perIteration(roundTrip, paced);
      const other = ((await childCpu()) - c0) / N;
      return own - (paced ? timer : 0) + other;
    };
    rows.push(['process.send round trip (parent + child)', us(await both(false)), us(await both(true))]);
  } finally {
    child.kill();
  }
  console.log(`CPU per hop, ${N} iterations each\n${table([['hop', 'back to back', `paced ${PACE_MS} ms`], ...rows])}`);
}

if (process.argv[2] === 'echo') {
  process.on('message', (m: { t?: string }) => {
    if (m.t === 'cpu') {
      const u = process.cpuUsage();
      process.send?.({ cpu: u.user + u.system });
    } else process.send?.(m);
  });
  process.send?.({ t: 'ready' });
} else {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
