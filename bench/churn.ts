/**
 * Writes of bench/cluster.ts that change no probed answer: grants and revokes of dedicated churn
 * permissions on a dedicated churn role, whose only member is a dedicated churn user (none of them
 * is in the data set). A paced writer, the read-your-writes prober of the mixed run (each
 * acknowledged write is then read back on a new TCP connection, so either worker may answer; it
 * speaks through the lean client of lean-http.ts), and batches for the write latency.
 */
import type { RbacClient } from '../src/client/index.ts';
import { LeanConnection, leanOneShot, leanRequest } from './lean-http.ts';
import { sleep, withTimeout } from './procs.ts';
import { Samples, type Latency } from './stats.ts';
import { newTally, record, type Tally } from './verify.ts';

export const CHURN_ROLE = 'bench-churn-role';
export const CHURN_USER = 'bench-churn-user@example.com';
/** Permissions per lane; a lane's writes are sequential, so it always knows their state. */
const PERMS_PER_LANE = 4;
const churnPermission = (lane: number, j: number): string => `bench.churn:lane${lane}.p${j}`;

export interface WriteStats {
  writes: number;
  /** Writes that failed (not 201/200, or no answer); each fails the run. */
  errors: number;
  seconds: number;
  writesPerSecond: number;
  /** Client-side, ms, from performance.now() around each write. */
  latency: Latency & { mean: number };
  examples: string[];
}

export interface MixedWrites extends WriteStats {
  /** Writes per second asked for. */
  targetRate: number;
  lanes: number;
  /** has_permission(churn user, written permission) on a new connection after each acknowledged write. */
  reads: Tally;
}

interface Step {
  permission: string;
  granted: boolean;
  revision: number;
}

/** How a write reaches the gateway: the typed client by default, the lean one in the mixed run. */
export type Sender = (grant: boolean, permission: string) => Promise<{ status: number; revision: number | undefined; error?: string }>;

const permissionPath = (permission: string): string => `/api/permission/${encodeURIComponent(CHURN_ROLE)}/${encodeURIComponent(permission)}`;

/** A sender on one kept-alive lean connection (one write at a time, as a lane writes). */
export function leanSender(port: number, key: string): { send: Sender; close(): void } {
  const conn = new LeanConnection(port);
  const send: Sender = async (grant, permission) => {
    const res = await conn.request(leanRequest(grant ? 'POST' : 'DELETE', permissionPath(permission), key, true));
    return { status: res.status, revision: Number.isNaN(res.revision) ? undefined : res.revision, ...(res.status >= 300 ? { error: res.body.slice(0, 200) } : {}) };
  };
  return { send, close: () => conn.close() };
}

/** Latencies and errors of a set of writes. */
export class WriteLog {
  readonly samples = new Samples();
  readonly started = performance.now();
  writes = 0;
  errors = 0;
  sum = 0;
  examples: string[] = [];

  ok(ms: number): void {
    this.writes++;
    this.sum += ms;
    this.samples.add(ms);
  }

  fail(problem: string): void {
    this.errors++;
    if (this.examples.length < 5) this.examples.push(problem);
  }

  stats(): WriteStats {
    const seconds = (performance.now() - this.started) / 1000;
    const latency = { ...this.samples.latency(), mean: this.writes === 0 ? NaN : this.sum / this.writes };
    return { writes: this.writes, errors: this.errors, seconds, writesPerSecond: this.writes / seconds, latency, examples: this.examples };
  }
}

/** The churn role's state as this process wrote it, shared by every phase and gateway restart. */
export class Churn {
  readonly #granted = new Set<string>();
  /** Every churn permission written so far. */
  readonly #written = new Set<string>();
  /** Permissions whose state a failed write left unknown; read back before their next write. */
  readonly #uncertain = new Set<string>();
  /** Highest X-Authz-Revision of an acknowledged write. */
  revision = 0;
  client: RbacClient;

  constructor(client: RbacClient) {
    this.client = client;
  }

  /** Creates the churn role and makes the churn user its member. */
  async setup(): Promise<void> {
    const role = await this.client.createRole(CHURN_ROLE, { description: 'bench:cluster churn' });
    if (role.status !== 201) throw new Error(`create ${CHURN_ROLE}: ${role.status} ${role.error ?? ''}`);
    const member = await this.client.addMember(CHURN_USER, CHURN_ROLE);
    if (member.status !== 201) throw new Error(`add ${CHURN_USER}: ${member.status} ${member.error ?? ''}`);
    this.revision = Math.max(role.revision ?? 0, member.revision ?? 0);
  }

  /**
   * Write number `i` of lane `lane`: a grant of one of the lane's permissions when it is not
   * granted, else its revoke. Throws on failure. Returns the latency in `log`.
   */
  async step(lane: number, i: number, log: WriteLog, send?: Sender): Promise<Step | undefined> {
    const permission = churnPermission(lane, Math.floor(i / 2) % PERMS_PER_LANE);
    if (this.#uncertain.has(permission)) {
      const now = await this.client.roleHasPermission(CHURN_ROLE, permission);
      if (now.data === undefined) {
        log.fail(`read back ${permission}: ${now.status}`);
        return undefined;
      }
      if (now.data.has_permission) this.#granted.add(permission);
      else this.#granted.delete(permission);
      this.#uncertain.delete(permission);
    }
    const grant = !this.#granted.has(permission);
    this.#written.add(permission);
    const what = `${grant ? 'grant' : 'revoke'} ${permission}`;
    const t0 = performance.now();
    try {
      const res =
        send !== undefined
          ? await send(grant, permission)
          : grant
            ? await this.client.grant(CHURN_ROLE, permission)
            : await this.client.revoke(CHURN_ROLE, permission);
      const ms = performance.now() - t0;
      if (res.status !== (grant ? 201 : 200)) {
        this.#uncertain.add(permission);
        log.fail(`${what}: ${res.status} ${res.error ?? ''}`);
        return undefined;
      }
      log.ok(ms);
      if (grant) this.#granted.add(permission);
      else this.#granted.delete(permission);
      const revision = res.revision ?? 0;
      if (revision > this.revision) this.revision = revision;
      return { permission, granted: grant, revision };
    } catch (err) {
      this.#uncertain.add(permission);
      log.fail(`${what}: ${String(err)}`);
      return undefined;
    }
  }

  /** has_permission(churn user, p) for every churn permission written so far, against what was acknowledged. */
  async verify(baseUrl: string, key: string): Promise<Tally> {
    const tally = newTally();
    for (const p of this.#written) {
      if (this.#uncertain.has(p)) continue;
      record(tally, await readBack(baseUrl, key, { permission: p, granted: this.#granted.has(p), revision: 0 }));
    }
    return tally;
  }
}

/** The problem with has_permission(churn user, step.permission) read on a new connection, if any. */
async function readBack(baseUrl: string, key: string, step: Step): Promise<string | undefined> {
  const what = `has_permission(${CHURN_USER}, ${step.permission}) on a new connection`;
  try {
    const path = `/api/has_permission/${encodeURIComponent(CHURN_USER)}/${encodeURIComponent(step.permission)}`;
    const res = await leanOneShot(Number(new URL(baseUrl).port), leanRequest('GET', path, key, false));
    if (res.status !== 200) return `${what}: status ${res.status} ${res.body.slice(0, 200)}`;
    const answer = (JSON.parse(res.body) as { data?: { has_permission?: unknown } }).data?.has_permission;
    if (answer !== step.granted) return `${what}: answered ${String(answer)} after the acknowledged ${step.granted ? 'grant' : 'revoke'} (revision ${step.revision})`;
    if (!(res.revision >= step.revision)) return `${what}: X-Authz-Revision ${res.revision}, below the write's ${step.revision}`;
    return undefined;
  } catch (err) {
    return `${what}: ${String(err)}`;
  }
}

/**
 * Writes at about `rate` per second from `lanes` sequential lanes (a shared schedule; a lane that
 * falls more than a second behind skips ticks rather than bursting), each acknowledged write read
 * back on a new connection. stop() waits at most 15 s for the lanes.
 */
export function startWriter(churn: Churn, baseUrl: string, key: string, rate: number, lanes: number): { stop(): Promise<MixedWrites> } {
  const log = new WriteLog();
  const reads = newTally();
  let stopped = false;
  let tick = 0;
  const port = Number(new URL(baseUrl).port);
  const lane = async (l: number): Promise<void> => {
    const sender = leanSender(port, key);
    try {
      await paced(l, sender.send);
    } finally {
      sender.close();
    }
  };
  const paced = async (l: number, send: Sender): Promise<void> => {
    for (let i = 0; !stopped; ) {
      let due = log.started + (tick * 1000) / rate;
      const now = performance.now();
      if (now - due > 1_000) {
        tick = Math.ceil(((now - log.started) * rate) / 1000);
        due = now;
      }
      tick++;
      if (due > now) await sleep(due - now);
      if (stopped) break;
      const step = await churn.step(l, i, log, send);
      if (step === undefined) continue;
      i++;
      record(reads, await readBack(baseUrl, key, step));
    }
  };
  const running = Promise.all(Array.from({ length: lanes }, (_, l) => lane(l)));
  return {
    async stop() {
      stopped = true;
      await withTimeout(running, 15_000, 'writer lanes').catch((err: unknown) => log.fail(String(err)));
      return { ...log.stats(), targetRate: rate, lanes, reads };
    },
  };
}

/** `count` writes, `inFlight` at a time (each lane sequential), timed one by one; stops early at `deadline` (performance.now()). */
export async function writeBatch(churn: Churn, count: number, inFlight: number, deadline: number): Promise<WriteStats> {
  const log = new WriteLog();
  let next = 0;
  const lane = async (l: number): Promise<void> => {
    for (let i = 0; next < count; i++) {
      if (performance.now() > deadline) {
        log.fail(`time limit reached after ${next} of ${count} writes`);
        return;
      }
      next++;
      await churn.step(l, i, log);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, (_, l) => lane(l)));
  return log.stats();
}
