import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * How many CPUs this process may really use. `os.availableParallelism()` counts the CPUs of the
 * affinity mask, but a container or a systemd unit with `CPUQuota=` is usually held to fewer by
 * the CFS bandwidth quota of its cgroup: forking one worker per host core there only makes the
 * workers take turns (and each costs its own graph cache), so the quota caps the count.
 */

/** Reads a text file; `undefined` when it cannot be read, which everywhere here means "no limit". */
export type ReadText = (path: string) => string | undefined;

const CGROUP_ROOT = '/sys/fs/cgroup';

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** CPUs allowed by `quota` µs per `period` µs, rounded up (1.5 CPUs of time keep 2 busy); never 0. */
function cpusOf(quota: number, period: number): number {
  return Math.max(1, Math.ceil(quota / period));
}

const POSITIVE_INT = /^[1-9]\d*$/;

/**
 * The CPU limit in a cgroup v2 `cpu.max` file ("<quota> <period>" or "max <period>"), or
 * `undefined` for no limit. Text that is not in that shape is ignored (no limit), never an error.
 */
export function quotaCpus(cpuMaxText: string): number | undefined {
  const fields = cpuMaxText.trim().split(/\s+/);
  if (fields.length !== 2) return undefined;
  const [quota, period] = fields as [string, string];
  if (quota === 'max' || !POSITIVE_INT.test(quota) || !POSITIVE_INT.test(period)) return undefined;
  return cpusOf(Number(quota), Number(period));
}

/**
 * The CPU limit of cgroup v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us` contents, or
 * `undefined` for no limit (a quota of -1, or anything unreadable or malformed).
 */
export function quotaCpusV1(quotaText: string, periodText: string): number | undefined {
  const quota = quotaText.trim();
  const period = periodText.trim();
  if (!POSITIVE_INT.test(quota) || !POSITIVE_INT.test(period)) return undefined;
  return cpusOf(Number(quota), Number(period));
}

/**
 * This process's cgroup paths from `/proc/self/cgroup`: `v2` from the unified line ("0::/path"),
 * `v1` from the hierarchy whose controllers include `cpu`. Inside a container with its own cgroup
 * namespace both are usually "/".
 */
export function cgroupPaths(procSelfCgroupText: string): { v2?: string; v1?: string } {
  const found: { v2?: string; v1?: string } = {};
  for (const line of procSelfCgroupText.split('\n')) {
    const match = /^(\d+):([^:]*):(\/.*)$/.exec(line.trim());
    if (match === null) continue;
    const [, id = '', controllers = '', path = '/'] = match;
    if (id === '0' && controllers === '') found.v2 = path;
    else if (controllers.split(',').includes('cpu')) found.v1 = path;
  }
  return found;
}

/**
 * The folders from `mount` + `path` up to `mount` itself. A limit set on any ancestor holds for
 * every cgroup below it (systemd puts `CPUQuota=` on the unit's own cgroup, a container runtime
 * on the container's), so each level is looked at and the smallest limit wins.
 */
function levels(mount: string, path: string | undefined): string[] {
  const parts = (path ?? '/').split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
  const out: string[] = [];
  for (let n = parts.length; n >= 0; n--) out.push([mount, ...parts.slice(0, n)].join('/'));
  return out;
}

function smallest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/**
 * The CPU quota of this process's cgroup: cgroup v2 `cpu.max` when the unified hierarchy has one,
 * else cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`; `undefined` when there is no limit or
 * nothing can be read. `read` is for tests.
 */
export function cgroupCpuLimit(read: ReadText = readOrUndefined): number | undefined {
  const paths = cgroupPaths(read('/proc/self/cgroup') ?? '');
  let v2Seen = false;
  let limit: number | undefined;
  for (const dir of levels(CGROUP_ROOT, paths.v2)) {
    const text = read(`${dir}/cpu.max`);
    if (text === undefined) continue;
    v2Seen = true;
    limit = smallest(limit, quotaCpus(text));
  }
  if (v2Seen) return limit;
  // cgroup v1 (or hybrid): `cpu` is normally a link to the `cpu,cpuacct` hierarchy.
  for (const dir of levels(`${CGROUP_ROOT}/cpu`, paths.v1)) {
    const quota = read(`${dir}/cpu.cfs_quota_us`);
    const period = read(`${dir}/cpu.cfs_period_us`);
    if (quota === undefined || period === undefined) continue;
    limit = smallest(limit, quotaCpusV1(quota, period));
  }
  return limit;
}

/**
 * The CPUs this process may use: the smaller of `os.availableParallelism()` and its cgroup's CPU
 * quota rounded up, at least 1. Never throws: whatever cannot be read counts as no limit.
 */
export function usableCpus(read: ReadText = readOrUndefined, parallelism: () => number = availableParallelism): number {
  let cpus: number;
  try {
    cpus = parallelism();
  } catch {
    cpus = 1;
  }
  if (!Number.isFinite(cpus) || cpus < 1) cpus = 1;
  let limit: number | undefined;
  try {
    limit = cgroupCpuLimit(read);
  } catch {
    limit = undefined;
  }
  return Math.max(1, Math.floor(limit === undefined ? cpus : Math.min(cpus, limit)));
}
