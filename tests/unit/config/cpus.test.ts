/**
 * usableCpus: the CPU quota of the process's cgroup caps the worker count (a container held to
 * 1.5 CPUs gets 2 workers, not one per host core); anything unreadable or malformed is no limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { cgroupCpuLimit, cgroupPaths, quotaCpus, quotaCpusV1, usableCpus, type ReadText } from '../../../src/config/cpus.ts';

/** A file system of the given files only. */
function files(map: Record<string, string>): ReadText {
  return (path) => map[path];
}

test('cgroup v2 cpu.max: "max" is no limit', () => {
  assert.equal(quotaCpus('max 100000\n'), undefined);
  assert.equal(quotaCpus('max 100000'), undefined);
});

test('cgroup v2 cpu.max: exact multiples of the period', () => {
  assert.equal(quotaCpus('100000 100000\n'), 1);
  assert.equal(quotaCpus('200000 100000\n'), 2);
  assert.equal(quotaCpus('400000 50000'), 8);
});

test('cgroup v2 cpu.max: fractions round up', () => {
  assert.equal(quotaCpus('150000 100000\n'), 2);
  assert.equal(quotaCpus('250001 100000'), 3);
  assert.equal(quotaCpus('50000 100000'), 1);
});

test('cgroup v2 cpu.max: a tiny quota still gives one CPU', () => {
  assert.equal(quotaCpus('1000 100000'), 1);
  assert.equal(quotaCpus('1 1000000'), 1);
});

test('cgroup v2 cpu.max: malformed text is ignored (no limit)', () => {
  for (const text of ['', '\n', 'max', '150000', 'abc 100000', '150000 abc', '0 100000', '150000 0', '-1 100000', '1.5 1', '150000 100000 7', '0x10 100000']) {
    assert.equal(quotaCpus(text), undefined, JSON.stringify(text));
  }
});

test('cgroup v1: -1 is no limit, quotas round up, malformed is no limit', () => {
  assert.equal(quotaCpusV1('-1\n', '100000\n'), undefined);
  assert.equal(quotaCpusV1('200000\n', '100000\n'), 2);
  assert.equal(quotaCpusV1('150000', '100000'), 2);
  assert.equal(quotaCpusV1('10', '100000'), 1);
  assert.equal(quotaCpusV1('', '100000'), undefined);
  assert.equal(quotaCpusV1('150000', ''), undefined);
  assert.equal(quotaCpusV1('150000', '0'), undefined);
  assert.equal(quotaCpusV1('lots', '100000'), undefined);
});

test('/proc/self/cgroup: the unified path and the v1 cpu hierarchy', () => {
  assert.deepEqual(cgroupPaths('0::/system.slice/rbac-gateway.service\n'), { v2: '/system.slice/rbac-gateway.service' });
  assert.deepEqual(cgroupPaths('12:pids:/\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n'), { v1: '/docker/abc', v2: '/' });
  assert.deepEqual(cgroupPaths('garbage\n'), {});
});

test("cgroup v2: the unit's own cgroup and its ancestors count, the smallest limit wins", () => {
  const unit = '/sys/fs/cgroup/system.slice/rbac-gateway.service/cpu.max';
  const read = files({
    '/proc/self/cgroup': '0::/system.slice/rbac-gateway.service\n',
    [unit]: '300000 100000\n',
    '/sys/fs/cgroup/system.slice/cpu.max': 'max 100000\n',
  });
  assert.equal(cgroupCpuLimit(read), 3);
  assert.equal(
    usableCpus(read, () => 16),
    3,
  );
  assert.equal(
    usableCpus(read, () => 2),
    2,
    'fewer cores than the quota: the cores',
  );
});

test('cgroup v2 inside a container (own namespace): /sys/fs/cgroup/cpu.max', () => {
  const read = files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '150000 100000\n' });
  assert.equal(
    usableCpus(read, () => 64),
    2,
  );
});

test('cgroup v2 present but unlimited: the v1 files are not consulted', () => {
  const read = files({
    '/proc/self/cgroup': '0::/\n',
    '/sys/fs/cgroup/cpu.max': 'max 100000\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '100000\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
  });
  assert.equal(
    usableCpus(read, () => 8),
    8,
  );
});

test('cgroup v1: read when there is no cpu.max, from the mount root when the path is not mounted', () => {
  const read = files({
    '/proc/self/cgroup': '4:cpu,cpuacct:/docker/abc\n0::/\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '250000\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
  });
  assert.equal(
    usableCpus(read, () => 32),
    3,
  );
  const unlimited = files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' });
  assert.equal(
    usableCpus(unlimited, () => 32),
    32,
  );
});

test('nothing readable, or a malformed quota: no limit, and never fewer than 1 CPU', () => {
  assert.equal(
    usableCpus(files({}), () => 6),
    6,
  );
  assert.equal(
    usableCpus(files({ '/sys/fs/cgroup/cpu.max': 'nonsense' }), () => 6),
    6,
  );
  assert.equal(
    usableCpus(files({ '/sys/fs/cgroup/cpu.max': '1000 100000' }), () => 6),
    1,
  );
  assert.equal(
    usableCpus(files({}), () => 0),
    1,
  );
});

test('never throws: a failing reader or CPU count is no limit / one CPU', () => {
  const throwing: ReadText = () => {
    throw new Error('EACCES');
  };
  assert.equal(
    usableCpus(throwing, () => 4),
    4,
  );
  assert.equal(
    usableCpus(files({}), () => {
      throw new Error('no');
    }),
    1,
  );
});

test('on this machine: between 1 and availableParallelism()', () => {
  const n = usableCpus();
  assert.ok(Number.isInteger(n) && n >= 1 && n <= availableParallelism(), String(n));
});
