/**
 * `tenantsSince`, the query behind the client index (loaded at start, then the clients created
 * since, every revalidation period), on SQLite and PostgreSQL alike: every tenant that wrote is
 * in the first answer, every tenant created later is in a later one, whatever order the
 * creating transactions commit in (on PostgreSQL, the case of a late commit is in
 * postgres-only.test.ts).
 */
import assert from 'node:assert/strict';
import { writeOne } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant } from '../../../helpers/tenants.ts';

const ROLE = { op: 'role.create', role: 'r', description: '' } as const;

export function createdCases(topic: StoreTopic): void {
  const { backend, it } = topic;

  it('lists every tenant that wrote, then those created after the cursor; a deleted-down tenant stays', async () => {
    const empty = await topic.store.tenantsSince(undefined);
    assert.deepEqual(empty.tenants, []);
    const [a, b, c] = [randomTenant(), randomTenant(), randomTenant()];
    for (const t of [a, b]) assert.ok((await writeOne(topic.store, t, ROLE)).ok);
    assert.ok((await writeOne(topic.store, a, { op: 'role.delete', role: 'r' })).ok, 'a is deleted down to nothing');
    const first = await topic.store.tenantsSince(undefined);
    assert.deepEqual(new Set(first.tenants), new Set([a, b]));
    const again = await topic.store.tenantsSince(empty.cursor);
    assert.deepEqual(new Set(again.tenants), new Set([a, b]), "from the empty database's cursor: both");
    const none = await topic.store.tenantsSince(first.cursor);
    assert.ok(!none.tenants.includes(c));
    assert.ok((await writeOne(topic.store, c, ROLE)).ok);
    const later = await topic.store.tenantsSince(none.cursor);
    assert.ok(later.tenants.includes(c), 'the tenant created after the cursor is listed');
    // Older ones may come again (on PostgreSQL while any older transaction of the server runs):
    // the port allows it, the index adds a tenant once. SQLite's cursor is exact.
    if (backend.name === 'sqlite') assert.deepEqual(later.tenants, [c]);
  });

  it('a tenant that never wrote is not listed', async () => {
    const t = randomTenant();
    await topic.store.load(t);
    await topic.store.revision(t);
    assert.ok(!(await topic.store.tenantsSince(undefined)).tenants.includes(t));
  });
}
