// The client index and the cache's use of it: a tenant that never wrote is answered as the empty
// client with no load and no cache entry; every way the cache hears of a tenant that exists
// (loaded, a change applied, a catch-up, a hydration) adds it; empty graphs that still get
// cached stay on their own small shelf and never evict a real client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Snapshot } from '../../../src/authz/changes.ts';
import type { TenantId } from '../../../src/authz/tenant.ts';
import { ClientIndex } from '../../../src/cache/client-index.ts';
import { EMPTY_GRAPHS_MAX } from '../../../src/cache/graphs.ts';
import { TenantCache, UNKNOWN_CLIENT } from '../../../src/cache/index.ts';
import { randomTenant, tenantId } from '../../helpers/tenants.ts';
import { imageOfSnapshot, type GraphImage } from '../../../src/authz/graph-image.ts';
import { TenantGraph } from '../../../src/authz/graph.ts';

const EMPTY: Snapshot = { revision: 0, roles: [], grants: [], memberships: [], windows: [] };
const ONE_ROLE: Snapshot = { revision: 1, roles: [['r', '']], grants: [], memberships: [['u', 'r']], windows: [] };
const noReplay = async () => [];

/** A cache over a fake database: `stored` holds the snapshots, `loads` counts the reads. */
function cacheOver(stored: Map<TenantId, Snapshot>, maxBytes = 1 << 20): { cache: TenantCache; loads: TenantId[]; evictions: number[] } {
  const loads: TenantId[] = [];
  const evictions = [0];
  const load = async (t: TenantId): Promise<GraphImage> => {
    loads.push(t);
    return imageOfSnapshot(stored.get(t) ?? EMPTY);
  };
  const events = { hydrated: () => undefined, evicted: () => void evictions[0]!++, gap: () => undefined };
  return { cache: new TenantCache(load, maxBytes, undefined, events), loads, evictions };
}

test('the index holds what was added, answers no for the rest, and grows without losing any', () => {
  const index = new ClientIndex();
  const added = Array.from({ length: 20_000 }, randomTenant);
  for (const t of added) index.add(t);
  for (const t of added) index.add(t);
  assert.equal(index.size, added.length, 'adding twice counts once');
  for (const t of added) assert.ok(index.has(t));
  let found = 0;
  for (let i = 0; i < 100_000; i++) if (index.has(randomTenant())) found++;
  assert.equal(found, 0, 'random tenants are not in it');
  assert.ok(index.bytes <= added.length * 16 * 2, `a few bytes per tenant (${index.bytes} for ${added.length})`);
});

test('the all-zero prefix and upper-case hex are tenants like any other', () => {
  const index = new ClientIndex();
  const zero = tenantId('0'.repeat(64));
  assert.ok(!index.has(zero));
  index.add(zero);
  assert.ok(index.has(zero));
  assert.equal(index.size, 1);
  const t = randomTenant();
  index.add(t);
  assert.ok(index.has(tenantId(t.toUpperCase())), 'the prefix is the number, not the spelling');
});

test('before the index is loaded every tenant goes the normal way; after, an unknown one is the empty client without a load or an entry', async () => {
  const known = randomTenant();
  const { cache, loads } = cacheOver(new Map([[known, ONE_ROLE]]));
  const stranger = randomTenant();
  assert.equal(cache.get(stranger), undefined, 'not loaded yet: hydrate');
  cache.know([known], true);
  assert.equal(cache.indexed, 1);
  for (let i = 0; i < 1000; i++) assert.equal(cache.get(randomTenant()), UNKNOWN_CLIENT);
  assert.equal(UNKNOWN_CLIENT.revision, 0);
  assert.equal(cache.size, 0, 'nothing cached');
  assert.deepEqual(loads, []);
  assert.equal(cache.get(known), undefined, 'a known tenant goes the normal way');
  assert.equal((await cache.load(known)).revision, 1);
  assert.equal(cache.get(known)?.revision, 1);
});

test('a first write heard as a change, a catch-up or a hydration makes the tenant known at once', async () => {
  const [viaChange, viaCatchUp, viaLoad, refused] = [randomTenant(), randomTenant(), randomTenant(), randomTenant()];
  const stored = new Map([
    [viaChange, ONE_ROLE],
    [viaCatchUp, ONE_ROLE],
    [viaLoad, ONE_ROLE],
  ]);
  const { cache } = cacheOver(stored);
  cache.know([], true);
  await cache.apply(viaChange, [{ op: 'role.create', role: 'r', description: '' }], 1, noReplay);
  await cache.catchUp(viaCatchUp, 1, noReplay);
  await cache.catchUp(refused, 0, noReplay);
  // A read that had to reach the database (X-Authz-Min-Revision) found it at revision 1.
  await cache.reload(viaLoad);
  for (const t of [viaChange, viaCatchUp, viaLoad]) {
    assert.notEqual(cache.get(t), UNKNOWN_CLIENT);
    assert.equal((cache.get(t) ?? (await cache.load(t))).revision, 1);
  }
  assert.equal(cache.get(refused), UNKNOWN_CLIENT, 'a refused first write leaves it unknown (revision 0)');
});

test('a tenant deleted down to nothing stays known, at its revision', async () => {
  const t = randomTenant();
  const { cache } = cacheOver(new Map([[t, { ...EMPTY, revision: 2 }]]));
  cache.know([t], true);
  assert.equal((await cache.load(t)).revision, 2);
  cache.drop(t);
  assert.notEqual(cache.get(t), UNKNOWN_CLIENT);
});

test('empty graphs still cached (index hits the database does not know) never evict a real graph', async () => {
  const real = randomTenant();
  const { cache, evictions } = cacheOver(new Map([[real, ONE_ROLE]]), 64 * 1024);
  const ghosts = Array.from({ length: EMPTY_GRAPHS_MAX * 2 }, randomTenant);
  cache.know([real, ...ghosts], true);
  await cache.load(real);
  const before = cache.bytes;
  for (const g of ghosts) assert.equal((await cache.load(g)).revision, 0);
  assert.equal(evictions[0], 0, 'no real graph evicted');
  assert.equal(cache.get(real)?.revision, 1, 'the real graph is still cached');
  assert.ok(cache.size <= EMPTY_GRAPHS_MAX + 1, `the empty ones are bounded (${cache.size})`);
  // Each as a hydration makes it: an empty image's graph (its one small buffer counted).
  const emptyBytes = TenantGraph.fromImage(imageOfSnapshot(EMPTY)).estimatedBytes;
  assert.ok(cache.bytes - before <= EMPTY_GRAPHS_MAX * emptyBytes, 'and so are their bytes, apart from the budget');
  // The first write of one of them moves it to the real graphs.
  const ghost = ghosts.at(-1) as TenantId;
  await cache.apply(ghost, [{ op: 'role.create', role: 'r', description: '' }], 1, noReplay);
  assert.equal(cache.get(ghost)?.revision, 1);
});
