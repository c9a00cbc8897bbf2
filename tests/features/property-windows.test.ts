/**
 * Model-based property test of timed access, atomic batches and previews (docs/api.md §12, §6) in
 * real time, on real servers of one and of two workers. Random writes through POST, PUT and
 * `/api/writes`, many with a window a second or two long, are held to the reference model
 * (support/rbac-model.ts) as acknowledged; between them, reads at random instants while the bounds
 * pass must equal the model at the instant of the answer (tests/helpers/windows-model.ts). The
 * changelog is the ledger: every revision between two of the client's writes must be a boundary
 * change of a bound the model holds, committed after that bound and within 5 s of it, once.
 * Batches are previewed first and sent with If-Match of the preview's revision. At the end, all
 * bounds past and 5 s more, every read equals the model with every window closed. Replay with
 * PROPERTY_SEED=<seed>: it fixes the requests asked for, not the timing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { startServer, type RunningServer } from '../helpers/server.ts';
import type { RbacClient } from '../../src/client/index.ts';
import type { Change, Window } from '../../src/authz/changes.ts';
import { RbacModel } from '../../support/rbac-model.ts';
import { prng } from '../../support/prng.ts';
import { checkList, expectErr, expectOk, inParallel } from '../helpers/model-reads.ts';
import * as W from '../helpers/windows-model.ts';

const { ROLES, PERMS, USERS, nowMicros, wireInstant } = W;

/** docs/api.md §12.1: a boundary change follows its bound within 5 s. */
const DEADLINE_US = 5_000_000;

// ---- the plan: what fast-check draws -----------------------------------------------------------

type ItemOp = 'role.create' | 'role.delete' | 'permission.grant' | 'permission.revoke' | 'membership.add' | 'membership.remove';
/** An item; `role` and `other` pick names at run time, among those that exist when `aim` says so. */
interface ItemSpec {
  op: ItemOp;
  role: number;
  other: number;
  aim: boolean;
  window: WindowSpec | undefined;
}
type WindowSpec = typeof windowArb extends fc.Arbitrary<infer T> ? T : never;
type Via = 'POST' | 'PUT' | 'PUT without body';
type Step =
  | { kind: 'write'; item: ItemSpec; via: Via; ifMatch: 'none' | 'revision' | '*' }
  | { kind: 'batch'; items: ItemSpec[]; holdMs: number }
  | { kind: 'reads'; count: number; pauseMs: number };

const windowArb = fc.record({
  nbMs: fc.option(fc.integer({ min: 500, max: 2000 }), { nil: undefined }),
  eaMs: fc.option(fc.integer({ min: 1000, max: 3000 }), { nil: undefined }),
  jitterUs: fc.integer({ min: 0, max: 999 }),
  style: fc.constantFrom<W.InstantStyle>('micro', 'micro', 'milli', 'offset'),
});
/** Weighted: more grants and memberships than role changes. */
const OPS: ItemOp[] = ['role.create', 'role.create', 'role.delete', 'permission.grant', 'permission.grant', 'permission.grant', 'permission.grant'];
OPS.push('permission.revoke', 'membership.add', 'membership.add', 'membership.add', 'membership.add', 'membership.add', 'membership.remove');
const itemArb: fc.Arbitrary<ItemSpec> = fc.record({
  op: fc.constantFrom(...OPS),
  role: fc.nat(99),
  other: fc.nat(99),
  aim: fc.nat(4).map((x) => x > 0),
  window: fc.option(windowArb, { freq: 3, nil: undefined }),
});
const writeArb = fc.record({
  kind: fc.constant('write' as const),
  item: itemArb,
  via: fc.constantFrom<Via>('POST', 'POST', 'PUT', 'PUT without body'),
  ifMatch: fc.constantFrom('none' as const, 'none' as const, 'revision' as const, '*' as const),
});
// Sometimes a pause between the preview and the write, for a boundary change to come between them (412, then again).
const holdArb = fc.constantFrom(0, 0, 0, 150, 400);
const batchArb = fc.record({ kind: fc.constant('batch' as const), items: fc.array(itemArb, { minLength: 1, maxLength: 6 }), holdMs: holdArb });
const readsArb = fc.record({ kind: fc.constant('reads' as const), count: fc.integer({ min: 4, max: 16 }), pauseMs: fc.nat(150) });
const stepArb: fc.Arbitrary<Step> = fc.oneof({ weight: 6, arbitrary: writeArb }, { weight: 2, arbitrary: batchArb }, { weight: 4, arbitrary: readsArb });

// ---- tenants, and the changelog as their ledger --------------------------------------------------

const STATS = ['applied', 'refused', 'preconditions', 'batches', 'retries', 'previews', 'nearPreviews', 'compared', 'skipped', 'boundaries', 'lagMs'] as const;

interface Tenant {
  label: string;
  client: RbacClient;
  key: string;
  model: RbacModel;
  written: W.Written;
  rng: () => number;
  log: string[];
  /** Changelog rows fetched and not yet applied to the model, with when each was first seen. */
  pending: Array<{ row: W.ChangeRow; absentAt: number }>;
  /** When the last fetch of the changelog was sent: a row it did not return was committed after. */
  fetchedAt: number;
  fetchedUpTo: number;
  /** Answers with X-Authz-Revision: everything up to `revision` was committed before `at`. */
  seen: Array<{ revision: number; at: number }>;
  /** The revision of the client's last committed write: every later read reflects it (§6). */
  lastWrite: number;
  stats: Record<(typeof STATS)[number], number>;
}

function newTenant(server: RunningServer, label: string, seed: number): Tenant {
  const client = server.client();
  const ledger = { pending: [], fetchedUpTo: 0, fetchedAt: 0, seen: [], lastWrite: 0 };
  return {
    label,
    client,
    key: client.key as string,
    model: new RbacModel(),
    written: new Map(),
    rng: prng(seed),
    log: [],
    stats: Object.fromEntries(STATS.map((s) => [s, 0])) as Tenant['stats'],
    ...ledger,
  };
}

/** Fetches the changelog past what was fetched; resolves with when the request was sent. */
async function fetchRows(t: Tenant): Promise<number> {
  const sentAt = nowMicros();
  const absentAt = t.fetchedAt;
  t.fetchedAt = sentAt;
  let cursor: string | undefined;
  do {
    const path = `/api/changes?since=${t.fetchedUpTo}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res = await t.client.request<W.ChangeRow[]>('GET', path);
    for (const row of expectOk(res, 200, `${t.label} GET ${path}`)) {
      assert.ok(row.revision >= t.fetchedUpTo && row.revision > t.model.revision, `${t.label} GET ${path}: ${JSON.stringify(row)} out of order`);
      t.pending.push({ row, absentAt });
      t.fetchedUpTo = row.revision;
    }
    cursor = res.nextCursor;
  } while (cursor !== undefined);
  return sentAt;
}

/** One of the client's writes: its revision, the changes it committed, when it was sent and answered. */
interface Mine {
  revision: number;
  changes: Change[];
  sentAt: number;
  receivedAt: number;
}

/** Applies the changelog up to `upTo`: the client's own write `mine` at its revision, boundary changes elsewhere. */
async function syncTo(t: Tenant, upTo: number, mine?: Mine): Promise<void> {
  for (let i = 0; t.fetchedUpTo < upTo; i++) {
    assert.ok(i < 3, `${t.label}: GET /api/changes lacks revision ${upTo}, which an answer already reflected`);
    await fetchRows(t);
  }
  while ((t.pending[0]?.row.revision ?? Infinity) <= upTo) {
    const revision = t.pending[0]?.row.revision as number;
    const group = t.pending.filter((p) => p.row.revision === revision);
    t.pending.splice(0, group.length);
    assert.equal(revision, t.model.revision + 1, `${t.label}: the changelog skips from revision ${t.model.revision} to ${revision}`);
    if (mine?.revision === revision) applyMine(t, group, mine);
    else applyBoundary(t, group);
    t.model.revision = revision;
  }
}

function applyMine(t: Tenant, group: Tenant['pending'], mine: Mine): void {
  const what = `${t.label} GET /api/changes at revision ${mine.revision}`;
  const rows = group.map(({ row: { revision: _r, timestamp: _t, ...rest } }) => rest);
  assert.deepEqual(rows, mine.changes.map(W.rowOf), `${what}: the rows of the write`);
  for (const { row } of group) {
    const at = W.parseWireInstant(`${row.timestamp}Z`, `${what} timestamp`);
    assert.ok(at >= mine.sentAt - 5000 && at <= mine.receivedAt + 5000, `${what}: timestamp ${row.timestamp} outside the request's span`);
  }
  for (const c of mine.changes) {
    t.model.apply(c);
    W.recordWritten(t.written, c);
  }
  t.lastWrite = mine.revision;
}

/** A revision the client did not write: one boundary change of a bound the model holds, committed after it. */
function applyBoundary(t: Tenant, group: Tenant['pending']): void {
  const { row, absentAt } = group[0] as Tenant['pending'][number];
  const what = `${t.label} GET /api/changes at revision ${row.revision}`;
  const c = group.length === 1 ? W.boundaryOf(row, what) : undefined;
  assert.ok(c !== undefined, `${what}: ${JSON.stringify(group.map((g) => g.row))}, which the client never wrote`);
  const w: Window | undefined = 'permission' in c ? t.model.grantWindow(c.role, c.permission) : t.model.memberWindow(row.user ?? '', c.role);
  const [bound, held] = 'notBefore' in c ? [c.notBefore, w?.notBefore] : [(c as { expiresAt: number }).expiresAt, w?.expiresAt];
  assert.equal(held, bound, `${what}: ${JSON.stringify(row)} names a bound the edge does not hold (${JSON.stringify(w)}): replaced, removed or passed`);
  assert.equal(`${row.timestamp}Z`, wireInstant(bound), `${what}: the timestamp of a boundary change`);
  const early = t.seen.find((s) => s.revision >= row.revision && s.at + 1000 < bound);
  assert.ok(
    early === undefined,
    `${what}: ${row.op} of ${wireInstant(bound)} committed before it: revision ${early?.revision} seen at ${wireInstant(early?.at ?? 0)}`,
  );
  t.model.apply(c);
  t.stats.boundaries++;
  t.stats.lagMs = Math.max(t.stats.lagMs, Math.round((absentAt - bound) / 1000));
}

/** The whole changelog applied; no bound of the model may have passed 5 s before the fetch. */
async function syncAll(t: Tenant): Promise<void> {
  const sentAt = await fetchRows(t);
  await syncTo(t, t.fetchedUpTo);
  for (const [key, w] of t.model.windows) {
    const late = [w.notBefore, w.expiresAt].find((b) => b !== undefined && b + DEADLINE_US + 1000 < sentAt);
    assert.ok(
      late === undefined,
      `${t.label}: no boundary change for ${key.replaceAll('\0', ' ')} at ${wireInstant(late ?? 0)}, ${(sentAt - (late ?? 0)) / 1e6} s later`,
    );
  }
}

// ---- writes ------------------------------------------------------------------------------------

const pick = <T>(items: readonly T[], i: number): T => items[i % items.length] as T;
const seg = encodeURIComponent;

/** The change an item asks for (names picked in the model as it is now, bounds from now on) and its batch item. */
function resolve(t: Tenant, s: ItemSpec): { change: Change; item: Record<string, string> } {
  // Aimed, a name that is there (or, to add it, one that is not): most writes then succeed; unaimed ones find refusals.
  const choose = (names: Iterable<string> | undefined, pool: readonly string[], there: boolean, i = s.other): string => {
    const present = new Set(names);
    const list = pool.filter((n) => present.has(n) === there);
    return s.aim && list.length > 0 ? pick(list, i) : pick(pool, i);
  };
  const role = choose(t.model.roles.keys(), ROLES, s.op !== 'role.create', s.role);
  const w = s.window;
  const nowMs = Date.now();
  const at = (ms: number | undefined): number | undefined =>
    ms === undefined ? undefined : (nowMs + ms) * 1000 + (w?.style === 'milli' ? 0 : (w?.jitterUs ?? 0));
  const [nb, ea] = [at(w?.nbMs), at(w?.eaMs === undefined ? undefined : Math.max(w.eaMs, (w.nbMs ?? 0) + 200))];
  const window = { ...(nb === undefined ? {} : { notBefore: nb }), ...(ea === undefined ? {} : { expiresAt: ea }) };
  const text = (b: number): string => W.requestInstant(b, w?.style ?? 'micro');
  const bounds = { ...(nb === undefined ? {} : { not_before: text(nb) }), ...(ea === undefined ? {} : { expires_at: text(ea) }) };
  const state = t.model.roles.get(role);
  // One in four aims at an edge that exists: a 409, or a PUT that replaces its window.
  const [permission, user] = [choose(state?.perms, PERMS, s.other % 4 === 0), choose(state?.members, USERS, s.other % 4 === 0)];
  const description = s.other % 3 === 0 ? undefined : `role ${s.other}`;
  const ask = (change: Change, item: Record<string, string>): { change: Change; item: Record<string, string> } => ({ change, item: { op: s.op, ...item } });
  switch (s.op) {
    case 'role.create':
      return ask({ op: s.op, role, description: description ?? '' }, { role, ...(description === undefined ? {} : { description }) });
    case 'role.delete':
      return ask({ op: s.op, role }, { role });
    case 'permission.grant':
      return ask({ op: s.op, role, permission, ...window }, { role, permission, ...bounds });
    case 'permission.revoke':
      return ask({ op: s.op, role, permission: choose(state?.perms, PERMS, true) }, { role, permission: choose(state?.perms, PERMS, true) });
    case 'membership.add':
      return ask({ op: s.op, user, role, ...window }, { user, role, ...bounds });
    case 'membership.remove':
      return ask({ op: s.op, user: choose(state?.members, USERS, true), role }, { user: choose(state?.members, USERS, true), role });
  }
}

/** An item sent through its own route: the change asked (a PUT sets a window) and the request. */
function routeOf(asked: Change, item: Record<string, string>, via: Via): { change: Change; method: string; path: string; body?: object } {
  const { op: _o, role: _r, permission: _p, user: _u, description, ...bounds } = item;
  const path =
    'permission' in asked
      ? `/api/permission/${seg(asked.role)}/${seg(asked.permission)}`
      : 'user' in asked
        ? `/api/membership/${seg(asked.user)}/${seg(asked.role)}`
        : `/api/role/${seg(asked.role)}`;
  if (asked.op.endsWith('.delete') || asked.op.endsWith('.revoke') || asked.op.endsWith('.remove')) return { change: asked, method: 'DELETE', path };
  const body = description !== undefined ? { description } : Object.keys(bounds).length > 0 ? bounds : undefined;
  if (via === 'POST' || asked.op === 'role.create') return { change: asked, method: 'POST', path, ...(body === undefined ? {} : { body }) };
  // PUT sets the window, `{}` or no body making the edge permanent.
  const { notBefore: _nb, expiresAt: _ea, ...permanent } = asked as Change & Window;
  const op = 'permission' in asked ? 'permission.window' : 'membership.window';
  if (via === 'PUT') return { change: { ...asked, op } as Change, method: 'PUT', path, body: bounds };
  return { change: { ...permanent, op } as Change, method: 'PUT', path };
}

/** One write through its route, checked against the model at the revision it was judged at. */
async function write(t: Tenant, step: Extract<Step, { kind: 'write' }>, index: number): Promise<void> {
  const asked = resolve(t, step.item);
  const { change, method, path, body } = routeOf(asked.change, asked.item, step.via);
  const revision = t.model.revision;
  const headers: Record<string, string> = step.ifMatch === 'none' ? {} : { 'if-match': step.ifMatch === '*' ? '*' : `"${revision}"` };
  const what = `${t.label} #${index} ${method} ${path}`;
  t.log.push(`${method} ${path} ${body === undefined ? '' : JSON.stringify(body)} ${JSON.stringify(headers)}`);
  const sentAt = nowMicros();
  const res = await t.client.request(method, path, { ...(body === undefined ? {} : { body }), headers });
  const receivedAt = nowMicros();
  const v = res.revision as number;
  t.seen.push({ revision: v, at: receivedAt });
  t.log.push(`  → ${res.status} at revision ${v}`);
  if (res.status === 412) {
    assert.equal(step.ifMatch, 'revision', `${what}: 412 without a revision to match`);
    expectErr(res, 412, what, t.key, 'If-Match');
    assert.ok(res.error?.includes(String(v)), `${what}: the 412 names the current revision ${v}: ${res.error}`);
    await syncTo(t, v);
    assert.notEqual(v, revision, `${what}: 412 though the revision was ${revision}`);
    t.stats.preconditions++;
    return;
  }
  await syncTo(t, res.ok ? v - 1 : v);
  if (step.ifMatch === 'revision') assert.equal(t.model.revision, revision, `${what}: If-Match "${revision}" passed at revision ${t.model.revision}`);
  // The server judges an expires_at against its own now: on a loaded machine a request may be
  // judged after a bound that was ahead when it was sent (400 naming expires_at, nothing stored).
  if (res.status === 400 && passedBy(asked.change, receivedAt) && res.error?.includes('expires_at') === true) return void t.stats.refused++;
  const o = W.predict(t.model, change, v);
  if (o.committed === undefined) {
    expectErr(res, o.status, what, t.key, o.names);
    t.stats.refused++;
    return;
  }
  const data = expectOk(res, o.status, what) as Record<string, unknown>;
  assert.deepEqual(data, W.withPastNotBefore(o.data ?? {}, data, receivedAt), `${what}: data`);
  await syncTo(t, v, { revision: v, changes: [W.echoed(o.committed, data, what)], sentAt, receivedAt });
  t.stats.applied++;
}

/** Whether the change's expires_at had passed by `micros`. */
const passedBy = (c: Change, micros: number): boolean => ((c as Window).expiresAt ?? Infinity) <= micros;

/**
 * A batch: previewed, then sent with If-Match of the preview's revision; drawn again (names and
 * bounds from the model and the time as they are then) when a boundary change came between.
 */
async function batch(t: Tenant, specs: readonly ItemSpec[], holdMs: number, index: number): Promise<void> {
  const what = `${t.label} #${index} batch`;
  for (let attempt = 1; attempt <= 5; attempt++) {
    const resolved = specs.map((s) => resolve(t, s));
    const items = resolved.map((r) => r.change);
    const body = { writes: resolved.map((r) => r.item) };
    t.log.push(`POST /api/dry-run, /api/writes ${JSON.stringify(body)}`);
    const d0 = nowMicros();
    const dr = await t.client.request<W.DryRun>('POST', '/api/dry-run', { body });
    const preview = expectOk(dr, 200, `${what} POST /api/dry-run`);
    const r = preview.revision;
    t.seen.push({ revision: r, at: nowMicros() });
    assert.equal(dr.revision, r, `${what} POST /api/dry-run: X-Authz-Revision`);
    if (r < t.model.revision) continue; // a worker the last boundary change has not reached yet: the If-Match would fail
    await syncTo(t, r);
    const { sim, compared } = W.checkPreview(t.model, t.written, items, preview, [d0, t.seen.at(-1)?.at ?? d0], `${what} POST /api/dry-run`);
    t.stats[compared ? 'previews' : 'nearPreviews']++;
    await sleep(holdMs);
    const w0 = nowMicros();
    const res = await t.client.request<{ revision: number; results: Array<Record<string, unknown>> }>('POST', '/api/writes', {
      body,
      headers: { 'if-match': `"${r}"` },
    });
    const w1 = nowMicros();
    const v = res.revision as number;
    t.seen.push({ revision: v, at: w1 });
    t.log.push(`  dry-run at ${r} valid=${String(preview.valid)}; writes → ${res.status} at revision ${v}`);
    if (res.status === 412) {
      expectErr(res, 412, `${what} POST /api/writes`, t.key, 'If-Match');
      assert.notEqual(v, r, `${what}: 412 at the previewed revision`);
      t.stats.retries++;
      continue;
    }
    if (res.status === 400 && items.some((c) => passedBy(c, w1)) && res.error?.includes('expires_at') === true) {
      // Judged after an expires_at of the batch passed (see write()): nothing stored; drawn again.
      assert.equal(v, r, `${what}: a refused batch moved the revision`);
      t.stats.retries++;
      continue;
    }
    if (!sim.valid) {
      const i = sim.statuses.findIndex((s) => s >= 400 && s !== 424);
      expectErr(res, sim.statuses[i] as number, `${what} POST /api/writes`, t.key, `writes[${i}]`);
      assert.equal(v, r, `${what}: a refused batch moved the revision`);
      t.stats.refused++;
      return;
    }
    const data = expectOk(res, 200, `${what} POST /api/writes`);
    const results = sim.outcomes.map((o, i) => W.withPastNotBefore(o.data ?? {}, data.results[i] ?? {}, w1));
    assert.deepEqual(data, { revision: r + 1, results }, `${what} POST /api/writes data`);
    assert.equal(v, r + 1, `${what}: X-Authz-Revision`);
    const changes = sim.outcomes.map((o, i) => W.echoed(o.committed as Change, data.results[i] ?? {}, `${what} results[${i}]`));
    await syncTo(t, v, { revision: v, changes, sentAt: w0, receivedAt: w1 });
    t.stats.batches++;
    return;
  }
}

// ---- reads -------------------------------------------------------------------------------------

/** One read; compared with the model when no bound falls within its span, else counted as skipped. */
async function runRead(t: Tenant, read: W.Read): Promise<void> {
  const t0 = nowMicros();
  const res = await t.client.request(read.body === undefined ? 'GET' : 'POST', read.path, read.body === undefined ? {} : { body: read.body });
  const t1 = nowMicros();
  assert.ok(
    res.revision !== undefined && res.revision >= t.lastWrite,
    `${t.label} ${read.path}: revision ${res.revision} below the last write's ${t.lastWrite}`,
  );
  t.seen.push({ revision: res.revision, at: t1 });
  if (!W.quiet(W.boundsOf(t.written), t0, t1)) return void t.stats.skipped++;
  t.model.clock = () => t0;
  read.expect(res, t0);
  t.stats.compared++;
}

const randomRead = (t: Tenant): W.Read => W.randomRead(t.model, t.written, t.rng, t.label, t.key);

async function reads(t: Tenant, count: number): Promise<void> {
  await syncAll(t);
  await inParallel(
    Array.from({ length: count }, () => randomRead(t)).map((r) => () => runRead(t, r)),
    6,
  );
}

/** All bounds past and 5 s more: every boundary change is in, no window is left, every read is the model's. */
async function settle(t: Tenant): Promise<void> {
  const last = Math.max(0, ...W.boundsOf(t.written));
  await sleep(Math.max(0, (last + DEADLINE_US) / 1000 - Date.now() + 20));
  await syncAll(t);
  assert.deepEqual([...t.model.windows.keys()], [], `${t.label}: windows left after their bounds and 5 s`);
  const compared = t.stats.compared;
  for (let i = 0; i < 60; i++) await runRead(t, randomRead(t));
  assert.equal(t.stats.compared - compared, 60, `${t.label}: reads skipped with no bound ahead`);
  const { model: m, client: c, label } = t;
  m.clock = nowMicros;
  const roles = [...m.roles.keys()];
  await inParallel([
    ...roles.map((r) => () => checkList(`${label} members ${r}`, (o) => c.members(r, o), m.members(r), true)),
    ...roles.map((r) => () => checkList(`${label} role_permissions ${r}`, (o) => c.rolePermissions(r, o), m.rolePermissions(r), true)),
    ...USERS.map((u) => () => checkList(`${label} user_roles ${u}`, (o) => c.userRoles(u, o), m.userRoles(u), true)),
    ...PERMS.map((p) => () => checkList(`${label} which_users_can ${p}`, (o) => c.whichUsersCan(p, o), m.whichUsersCan(p), true)),
    async () => assert.deepEqual(expectOk(await c.request('GET', '/api/windows'), 200, `${label} GET /api/windows`), [], `${label}: windows ahead`),
  ]);
}

const FIRST_ROLES: ItemSpec[] = [0, 1, 2].map((role) => ({ op: 'role.create', role, other: 1, aim: false, window: undefined }));

async function runTenant(t: Tenant, plan: readonly Step[]): Promise<void> {
  // Three roles to start with, so that most writes of the plan find one.
  await batch(t, FIRST_ROLES, 0, -1);
  for (const [i, step] of plan.entries()) {
    if (step.kind === 'write') await write(t, step, i);
    else if (step.kind === 'batch') await batch(t, step.items, step.holdMs, i);
    else {
      await reads(t, step.count);
      await sleep(step.pauseMs);
    }
  }
  // No more writes: reads at random instants until the last bound has passed.
  const last = Math.max(0, ...W.boundsOf(t.written));
  while (nowMicros() < last + 50_000) {
    await reads(t, 8);
    await sleep(Math.floor(t.rng() * 100));
  }
  await settle(t);
}

// ---- the test ----------------------------------------------------------------------------------

const STEPS = Number(process.env.PROPERTY_STEPS ?? 70);
const FORCED = process.env.PROPERTY_SEED;
const SEED = FORCED !== undefined && FORCED !== '' ? Number.parseInt(FORCED, 10) >>> 0 : randomInt(2 ** 31);

let servers: RunningServer[] = [];

before(async () => {
  servers = await Promise.all([startServer(), startServer({ env: { AUTH_WORKERS: '2' } })]);
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

function failure(tenants: readonly Tenant[], err: unknown): Error {
  const tails = tenants.map((t) => `last requests of ${t.label}:\n  ${t.log.slice(-30).join('\n  ')}`);
  const message = [`property failure, replay with PROPERTY_SEED=${SEED}`, err instanceof Error ? err.message : String(err), ...tails];
  return new Error(message.join('\n'), { cause: err });
}

test(`timed access, batches and previews match the model in real time (seed ${SEED}, ${STEPS} steps × 4 tenants, 1 and 2 workers)`, async (ctx) => {
  ctx.diagnostic(`PROPERTY_SEED=${SEED}`);
  const started = Date.now();
  const tenants: Tenant[] = [];
  const plans = fc.array(fc.array(stepArb, { minLength: STEPS, maxLength: STEPS }), { minLength: 4, maxLength: 4 });
  const property = fc.asyncProperty(plans, async (drawn) => {
    tenants.push(...drawn.map((_, i) => newTenant(servers[i >> 1] as RunningServer, `tenant ${i} (${i < 2 ? 1 : 2} worker${i < 2 ? '' : 's'})`, SEED + i)));
    try {
      await Promise.all(tenants.map((t, i) => runTenant(t, drawn[i] as Step[])));
    } catch (err) {
      throw failure(tenants, err);
    }
  });
  // fast-check draws the plans; its own report of a failure would print them whole, this one says what went wrong.
  const run = await fc.check(property, { seed: SEED, numRuns: 1, endOnFailure: true });
  if (run.failed) throw run.errorInstance;
  for (const t of tenants) {
    const s = t.stats;
    ctx.diagnostic(
      `${t.label}: ${s.applied} writes and ${s.batches} batches applied, ${s.refused} refused as predicted, ${s.preconditions} 412s, ${s.retries} batch retries; ` +
        `${s.previews} previews compared (${s.nearPreviews} near a bound); ${s.boundaries} boundary changes (one missing ${s.lagMs} ms after its bound at most); ` +
        `${s.compared} reads compared, ${s.skipped} skipped near a bound; revision ${t.model.revision}`,
    );
    assert.ok(s.skipped * 5 < s.compared, `${t.label}: ${s.skipped} reads skipped near a bound against ${s.compared} compared`);
  }
  assert.ok(
    tenants.some((t) => t.stats.boundaries > 0),
    'no boundary change passed',
  );
  ctx.diagnostic(`${Date.now() - started} ms`);
});
