/**
 * Regression: the audit list is newest first by time. A failed request's row is written after
 * its answer (batched, about 50 ms later), so a success committed just after it got a smaller id
 * and was listed below it, though it happened later.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.ts';
import { sleep } from '../helpers/wait.ts';

test('a failed request recorded after a later success still lists below it (by timestamp, then id)', async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const c = server.client();
  const expected: string[] = [];
  for (let i = 0; i < 5; i++) {
    assert.equal((await c.deleteRole(`missing${i}`)).status, 404);
    assert.equal((await c.createRole(`r${i}`)).status, 201);
    expected.push(`/api/role/missing${i}`, `/api/role/r${i}`);
  }
  let rows: Array<{ id: number; timestamp: string; resource: string }> = [];
  for (let waited = 0; rows.length < expected.length && waited < 10_000; waited += 100) {
    await sleep(100);
    rows = (await c.audit()).data ?? [];
  }
  assert.deepEqual(
    rows.map((r) => r.resource),
    [...expected].reverse(),
    'newest first',
  );
  for (let i = 1; i < rows.length; i++) {
    const [a, b] = [rows[i - 1], rows[i]];
    assert.ok(a !== undefined && b !== undefined);
    assert.ok(a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id), `row ${i}: ${JSON.stringify(a)} before ${JSON.stringify(b)}`);
  }
  // Paged one by one, the same order.
  const paged: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await c.audit({ limit: 1, ...(cursor === undefined ? {} : { cursor }) });
    paged.push(...(page.data ?? []).map((r) => r.resource));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  assert.deepEqual(paged, [...expected].reverse());
});
