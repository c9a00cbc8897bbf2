import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../src/errors/index.ts';
import { planThreads, type StoreSettings } from '../../../src/store/settings.ts';
import { storeFailure, transience } from '../../../src/store/transient.ts';
import { isTransient } from '../../helpers/transient.ts';

const raw = (code: string, message = 'boom'): Error => Object.assign(new Error(message), { code });

test('connection failures, timeouts and server restarts are transient: unavailable', () => {
  for (const code of [
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
    'ENOTFOUND',
    '08006',
    '08001',
    '08P01',
    '57P01',
    '57P03',
    '53300',
    '57014',
    '55P03',
    'SQLITE_BUSY',
    'SQLITE_BUSY_SNAPSHOT',
    'SQLITE_LOCKED',
  ]) {
    assert.equal(transience(raw(code)), 'unavailable', code);
  }
  for (const message of [
    'Connection terminated unexpectedly',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Client has encountered a connection error and is not queryable',
  ]) {
    assert.equal(transience(new Error(message)), 'unavailable', message);
  }
});

test('serialization failures and deadlocks are transient: conflict', () => {
  assert.equal(transience(raw('40001')), 'conflict');
  assert.equal(transience(raw('40P01')), 'conflict');
});

test('anything else is not transient, nor is a commit of unknown outcome', () => {
  for (const err of [raw('23505'), raw('42P01'), raw('SQLITE_CONSTRAINT'), raw('SQLITE_CANTOPEN'), new Error('bug'), 'text', null, undefined]) {
    assert.equal(isTransient(err), false, String(err));
  }
  assert.equal(isTransient(new AppError('ERR_STORE_COMMIT_UNKNOWN', 'x')), false);
  assert.equal(isTransient(new AppError('ERR_INTERNAL', 'Connection terminated')), false, 'a catalogued code decides');
});

test('catalogued and wire forms are recognised', () => {
  assert.equal(isTransient(new AppError('ERR_STORE_UNAVAILABLE', 'x')), true);
  assert.equal(isTransient(new AppError('ERR_STORE_CONFLICT', 'x')), true);
  assert.equal(isTransient({ code: 'ERR_STORE_UNAVAILABLE', message: 'x' }), true);
});

test('storeFailure catalogues without leaking hosts or driver codes', () => {
  const down = storeFailure(raw('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432'), 'write');
  assert.equal(down.code, 'ERR_STORE_UNAVAILABLE');
  assert.equal(down.message, 'the database is unavailable (write: connection refused)');
  assert.equal(storeFailure(raw('40P01'), 'write').code, 'ERR_STORE_CONFLICT');
  assert.equal(storeFailure(raw('SQLITE_BUSY'), 'load').message, 'the database is unavailable (load: busy)');
  const bug = storeFailure(raw('42P01', 'relation "x" does not exist'), 'load');
  assert.deepEqual([bug.code, bug.status, bug.message], ['ERR_INTERNAL', 500, 'relation "x" does not exist']);
  const refusal = new AppError('ERR_AUTHZ_ROLE_NOT_FOUND', 'r');
  assert.equal(storeFailure(refusal, 'write'), refusal);
});

test('a process shares AUTH_POSTGRESQL_POOL_MAX among its pool threads', () => {
  const pg = (poolMax: number): StoreSettings => ({
    type: 'postgresql',
    postgresql: { url: 'postgresql://h/db', poolMax, connectTimeoutMs: 1, statementTimeoutMs: 1 },
  });
  const plan = (poolMax: number, threads: number): number[] => {
    const p = planThreads(pg(poolMax), threads);
    return [p.threads, p.settings.type === 'postgresql' ? p.settings.postgresql.poolMax : -1, p.concurrency];
  };
  assert.deepEqual(plan(10, 2), [2, 5, 5]);
  assert.deepEqual(plan(3, 2), [2, 1, 1]);
  assert.deepEqual(plan(1, 2), [1, 1, 1]);
  assert.deepEqual(plan(100, 4), [4, 25, 25]);
  const sqlite: StoreSettings = { type: 'sqlite', sqlitePath: 'x' };
  assert.deepEqual(planThreads(sqlite, 2), { settings: sqlite, threads: 2, concurrency: 1 });
});
