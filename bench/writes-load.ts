/**
 * The load of bench/writes.ts: grant/revoke loops over 16 tenants driven by a model of what each
 * tenant's role holds, wrk on has_permission, a slow checker beside it, and the final read-back.
 * Writes go over kept-alive connections of lean-http.ts (one per loop, one request at a time):
 * the client shares the 2 cores with the gateway, and that client costs the least CPU.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeanConnection, leanOneShot, leanRequest, type LeanResponse } from './lean-http.ts';
import { Samples } from './stats.ts';
import { sleep, spawnTracked } from './writes-gateway.ts';

export const TENANTS = 16;
export const ROLE = 'R';
/** The checked answer: alice is a member of R in tenant 0, where R holds CHECK_YES and never CHECK_NO. */
export const CHECK_USER = 'alice';
export const CHECK_YES = 'p1';
export const CHECK_NO = 'p2';
/** Permissions per write loop; loop j writes p<FIRST_WRITE_PERM + j*PERMS_PER_LOOP + m>, never p1 or p2. */
const PERMS_PER_LOOP = 8;
const FIRST_WRITE_PERM = 100;
/** A loop gives up after this many failures (each one already fails the run), or this many writes in one phase. */
const MAX_FAILURES_PER_LOOP = 20;
const MAX_WRITES_PER_LOOP = 500_000;

const keys = (): string[] => Array.from({ length: TENANTS }, () => randomUUID());

/** What each tenant's role R must hold, as acknowledged writes left it. */
export class Model {
  readonly keys = keys();
  readonly granted: Array<Set<string>> = Array.from({ length: TENANTS }, () => new Set<string>());
  /** Permissions whose state a failed write left unknown: skipped by the read-back. */
  readonly uncertain: Array<Set<string>> = Array.from({ length: TENANTS }, () => new Set<string>());
  /** Next step of each write loop (its sequence continues across phases of one gateway). */
  readonly steps = new Map<number, number>();
  readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  /** Creates R in every tenant; in tenant 0, alice joins R and R gets p1. */
  async setup(): Promise<void> {
    const conn = new LeanConnection(this.port);
    try {
      const expect = async (method: string, path: string, key: string): Promise<void> => {
        const res = await conn.request(leanRequest(method, path, key, true));
        if (res.status !== 201) throw new Error(`setup ${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
      };
      for (const key of this.keys) await expect('POST', `/api/role/${ROLE}`, key);
      const key0 = this.keys[0] as string;
      await expect('POST', `/api/membership/${CHECK_USER}/${ROLE}`, key0);
      await expect('POST', `/api/permission/${ROLE}/${CHECK_YES}`, key0);
      this.granted[0]?.add(CHECK_YES);
    } finally {
      conn.close();
    }
  }
}

export interface WriteResult {
  writes: number;
  failures: number;
  examples: string[];
  latency: { p50: number; p99: number; max: number; mean: number };
  seconds: number;
}

export interface WriteOptions {
  loops: number;
  durationS: number;
  /** Writes per second over all loops (paced); absent: back to back. */
  rate?: number;
}

/**
 * `loops` concurrent loops, each one write at a time on its own kept-alive connection, until
 * `durationS` has passed (or `stop()` is called). Loop j's step s: tenant (⌊s/2⌋ + j) mod 16,
 * permission m = ⌊s/32⌋ mod 8 of its own range, granted (POST, 201) when the model says it is
 * not, else revoked (DELETE, 200): grants and revokes alternate and no two loops touch one pair.
 */
export function runWrites(model: Model, options: WriteOptions): { done: Promise<WriteResult>; stop(): void } {
  const samples = new Samples();
  const examples: string[] = [];
  let writes = 0;
  let failures = 0;
  let sum = 0;
  let stopped = false;
  const t0 = performance.now();
  const deadline = t0 + options.durationS * 1000;
  const interval = options.rate === undefined ? 0 : (1000 * options.loops) / options.rate;
  const loop = async (j: number): Promise<void> => {
    const conn = new LeanConnection(model.port);
    let mine = 0;
    let count = 0;
    let next = t0 + (interval * j) / options.loops;
    try {
      while (!stopped && performance.now() < deadline && mine < MAX_FAILURES_PER_LOOP && count++ < MAX_WRITES_PER_LOOP) {
        if (interval > 0) {
          const wait = next - performance.now();
          next += interval;
          if (wait > 0) await sleep(wait);
          if (stopped || performance.now() >= deadline) break;
        }
        const s = model.steps.get(j) ?? 0;
        model.steps.set(j, s + 1);
        const t = (Math.floor(s / 2) + j) % TENANTS;
        const perm = `p${FIRST_WRITE_PERM + j * PERMS_PER_LOOP + (Math.floor(s / 32) % PERMS_PER_LOOP)}`;
        const set = model.granted[t] as Set<string>;
        const grant = !set.has(perm);
        const path = `/api/permission/${ROLE}/${perm}`;
        const start = performance.now();
        let res: LeanResponse | undefined;
        let problem: string | undefined;
        try {
          res = await conn.request(leanRequest(grant ? 'POST' : 'DELETE', path, model.keys[t] as string, true));
          if (res.status !== (grant ? 201 : 200)) problem = `${res.status} ${res.body.slice(0, 160)}`;
        } catch (err) {
          problem = (err as Error).message;
        }
        const ms = performance.now() - start;
        if (problem === undefined) {
          writes++;
          sum += ms;
          samples.add(ms);
          if (grant) set.add(perm);
          else set.delete(perm);
        } else {
          failures++;
          mine++;
          model.uncertain[t]?.add(perm);
          if (examples.length < 5) examples.push(`tenant ${t} ${grant ? 'POST' : 'DELETE'} ${path}: ${problem}`);
        }
      }
    } finally {
      conn.close();
    }
  };
  const done = Promise.all(Array.from({ length: options.loops }, (_, j) => loop(j))).then((): WriteResult => {
    const l = samples.latency();
    return { writes, failures, examples, latency: { p50: l.p50, p99: l.p99, max: l.max, mean: writes === 0 ? NaN : sum / writes }, seconds: (performance.now() - t0) / 1000 };
  });
  return { done, stop: () => void (stopped = true) };
}

export interface WrkResult {
  requests: number;
  durationS: number;
  rps: number;
  non2xx: number;
  errors: number;
  p50: number;
  p99: number;
  /** wrk's own CPU seconds. */
  cpuSeconds: number;
}

/** wrk -t1 -c`connections` on GET has_permission(alice, p1) of tenant 0, bounded by its duration + 20 s. */
export async function runWrk(model: Model, connections: number, durationS: number): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-writes-wrk-'));
  try {
    const file = join(dir, 'done.lua');
    writeFileSync(
      file,
      `function done(s, latency, requests)
  local e = s.errors
  io.write(string.format("WRITES_WRK %d %d %d %d %d %d %d %d %d %.3f\\n", s.duration, s.requests,
    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50), latency:percentile(99), os.clock()))
end
`,
    );
    const url = `http://127.0.0.1:${model.port}/api/has_permission/${CHECK_USER}/${CHECK_YES}`;
    const args = ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '10s', '-s', file, '-H', `Authorization: Bearer ${model.keys[0] as string}`, url];
    const child = spawnTracked('wrk', args, dir, { PATH: process.env.PATH ?? '' });
    const timer = setTimeout(() => child.proc.kill('SIGKILL'), (durationS + 20) * 1000);
    const code = await child.exited;
    clearTimeout(timer);
    const m = /^WRITES_WRK ((?:\d+ ){8}\d+) ([\d.]+)$/m.exec(child.output());
    if (code !== 0 || m?.[1] === undefined) throw new Error(`wrk exited with ${code}:\n${child.output().slice(-2000)}`);
    const [dur = 0, requests = 0, connect = 0, read = 0, write = 0, status = 0, timeout = 0, p50 = 0, p99 = 0] = m[1].split(' ').map(Number);
    const durationSeconds = dur / 1e6;
    return { requests, durationS: durationSeconds, rps: requests / durationSeconds, non2xx: status, errors: connect + read + write + timeout, p50: p50 / 1000, p99: p99 / 1000, cpuSeconds: Number(m[2]) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Tally {
  checked: number;
  wrong: number;
  examples: string[];
}

export const newTally = (): Tally => ({ checked: 0, wrong: 0, examples: [] });

function tallyAnswer(tally: Tally, what: string, res: LeanResponse | Error, ok: (body: string) => boolean): void {
  tally.checked++;
  if (!(res instanceof Error) && res.status === 200 && ok(res.body)) return;
  tally.wrong++;
  if (tally.examples.length < 5) tally.examples.push(`${what}: ${res instanceof Error ? res.message : `${res.status} ${res.body.slice(0, 160)}`}`);
}

/** has_permission(alice, p1) must be true and (alice, p2) false in tenant 0, on a new connection each (either worker). */
export async function checkOnce(model: Model, tally: Tally): Promise<void> {
  for (const [perm, expected] of [
    [CHECK_YES, true],
    [CHECK_NO, false],
  ] as const) {
    const req = leanRequest('GET', `/api/has_permission/${CHECK_USER}/${perm}`, model.keys[0] as string, false);
    const res = await leanOneShot(model.port, req).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    tallyAnswer(tally, `has_permission ${CHECK_USER} ${perm}`, res, (b) => b.includes(`"has_permission":${expected}`));
  }
}

/** checkOnce about every `everyMs` until stopped (a few requests a second: little load). */
export function startChecker(model: Model, tally: Tally, everyMs = 250): { stop(): Promise<void> } {
  let stopped = false;
  const run = (async (): Promise<void> => {
    for (let i = 0; i < 10_000 && !stopped; i++) {
      await checkOnce(model, tally);
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await run;
    },
  };
}

/** Every tenant's GET /api/role_permissions/R, on a new connection each and `times` times, against the model. */
export async function verifyModel(model: Model, tally: Tally, times: number): Promise<void> {
  for (let k = 0; k < times; k++) {
    for (let t = 0; t < TENANTS; t++) {
      const req = leanRequest('GET', `/api/role_permissions/${ROLE}`, model.keys[t] as string, false);
      const res = await leanOneShot(model.port, req).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      const uncertain = model.uncertain[t] as Set<string>;
      const want = [...(model.granted[t] as Set<string>)].filter((p) => !uncertain.has(p)).sort();
      let got: string[] = [];
      if (!(res instanceof Error) && res.status === 200) {
        try {
          const data = (JSON.parse(res.body) as { data?: Array<{ name?: unknown }> }).data ?? [];
          got = data.map((d) => String(d.name)).filter((p) => !uncertain.has(p)).sort();
        } catch {
          got = ['<not JSON>'];
        }
      }
      const same = got.length === want.length && got.every((p, i) => p === want[i]);
      tallyAnswer(tally, `tenant ${t} role_permissions ${ROLE} (want ${want.length}: ${want.slice(0, 4).join(',')}…, got ${got.length}: ${got.slice(0, 4).join(',')}…)`, res, () => same);
    }
  }
}
