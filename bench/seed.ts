/**
 * Seeds a data set into the gateway over HTTP with the typed client: roles first, then grants and
 * memberships interleaved, a bounded number of writes in flight. Every write must answer 201.
 */
import type { ApiResult, RbacClient } from '../src/client/index.ts';
import type { Dataset } from './dataset.ts';

export interface SeedResult {
  writes: number;
  seconds: number;
  /** Highest X-Authz-Revision seen on a write. */
  maxRevision: number;
}

type Write = () => Promise<ApiResult<unknown>>;

/** Runs `tasks` with at most `limit` in flight; the first failure stops new tasks and rejects. */
async function pooled(tasks: Write[], limit: number, deadline: number, onDone: (res: ApiResult<unknown>) => void): Promise<void> {
  let next = 0;
  let failure: Error | undefined;
  const lane = async (): Promise<void> => {
    while (failure === undefined && next < tasks.length) {
      if (Date.now() > deadline) {
        failure = new Error(`seeding timed out after ${next} of ${tasks.length} writes`);
        break;
      }
      const task = tasks[next++];
      if (task === undefined) break;
      try {
        onDone(await task());
      } catch (err) {
        failure ??= err instanceof Error ? err : new Error(String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  if (failure !== undefined) throw failure;
}

function expect201(what: string, res: ApiResult<unknown>): ApiResult<unknown> {
  if (res.status !== 201) throw new Error(`${what}: expected 201, got ${res.status} ${res.error ?? ''}`);
  return res;
}

export async function seed(client: RbacClient, ds: Dataset, concurrency: number, timeoutS: number): Promise<SeedResult> {
  const started = performance.now();
  const deadline = Date.now() + timeoutS * 1000;
  let done = 0;
  let maxRevision = 0;
  const onDone = (res: ApiResult<unknown>): void => {
    done++;
    if (res.revision !== undefined && res.revision > maxRevision) maxRevision = res.revision;
  };
  const progress = setInterval(() => {
    const s = (performance.now() - started) / 1000;
    console.log(`  seeding: ${done} writes in ${s.toFixed(0)} s (${(done / s).toFixed(0)}/s)`);
  }, 5_000);
  try {
    const roleWrites: Write[] = ds.roles.map((role) => async () => expect201(`create ${role}`, await client.createRole(role)));
    await pooled(roleWrites, concurrency, deadline, onDone);

    const grantWrites: Write[] = [];
    ds.grants.forEach((perms, r) => {
      const role = ds.roles[r] ?? '';
      for (const p of perms) {
        const perm = ds.permissions[p] ?? '';
        grantWrites.push(async () => expect201(`grant ${role} ${perm}`, await client.grant(role, perm)));
      }
    });
    const memberWrites: Write[] = [];
    ds.memberships.forEach((roles, u) => {
      const user = ds.users[u] ?? '';
      for (const r of roles) {
        const role = ds.roles[r] ?? '';
        memberWrites.push(async () => expect201(`add ${user} to ${role}`, await client.addMember(user, role)));
      }
    });
    // Interleave so that the graph grows in both directions while it is written.
    const rest: Write[] = [];
    const ratio = memberWrites.length / Math.max(1, grantWrites.length);
    let g = 0;
    for (let m = 0; m < memberWrites.length || g < grantWrites.length; ) {
      if (g < grantWrites.length && (m >= memberWrites.length || m >= g * ratio)) rest.push(grantWrites[g++] as Write);
      else rest.push(memberWrites[m++] as Write);
    }
    await pooled(rest, concurrency, deadline, onDone);
  } finally {
    clearInterval(progress);
  }
  return { writes: done, seconds: (performance.now() - started) / 1000, maxRevision };
}
