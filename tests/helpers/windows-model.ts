/**
 * What the reference model (support/rbac-model.ts) says of timed access, atomic batches and
 * previews (docs/api.md §12), in the forms the wire carries: instants as text, each write's
 * status and data, the changelog rows a write makes, a batch's preview, explain, and the window
 * fields an answer may or must show at a given instant. Used by the windows property test, which
 * holds a real server to it in real time.
 */
import assert from 'node:assert/strict';
import type { Change, Window } from '../../src/authz/changes.ts';
import type { ApiResult } from '../../src/client/index.ts';
import { expectErr, expectOk } from './model-reads.ts';
import { byCodePoint, RbacModel, sorted } from '../../support/rbac-model.ts';

// ---- instants -----------------------------------------------------------------------------------

const MICROS_PER_SECOND = 1_000_000;

/** Now, in microseconds since the epoch, as precise as the service's own clock (milliseconds). */
export const nowMicros = (): number => Date.now() * 1000;

const isoSeconds = (micros: number): string => new Date(Math.floor(micros / MICROS_PER_SECOND) * 1000).toISOString().slice(0, 19);
const fraction6 = (micros: number): string => String(((micros % MICROS_PER_SECOND) + MICROS_PER_SECOND) % MICROS_PER_SECOND).padStart(6, '0');

/** The form the service echoes an instant in: UTC, exactly six fractional digits, `Z`. */
export const wireInstant = (micros: number): string => `${isoSeconds(micros)}.${fraction6(micros)}Z`;

/** How a request writes an instant: the echoed form, milliseconds only, or another offset. */
export type InstantStyle = 'micro' | 'milli' | 'offset';

/** `micros` as a request sends it; for `milli` the caller gives a whole millisecond. */
export function requestInstant(micros: number, style: InstantStyle): string {
  if (style === 'micro') return wireInstant(micros);
  if (style === 'milli') return `${isoSeconds(micros)}.${fraction6(micros).slice(0, 3)}Z`;
  const local = micros - (3 * 3600 + 30 * 60) * MICROS_PER_SECOND; // the same instant at -03:30
  return `${isoSeconds(local)}.${fraction6(local)}-03:30`;
}

const WIRE_INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})Z$/;

/** Microseconds of an instant the service echoed; anything but the echoed form fails `what`. */
export function parseWireInstant(text: unknown, what: string): number {
  const m = typeof text === 'string' ? WIRE_INSTANT.exec(text) : null;
  assert.ok(m !== null, `${what}: ${JSON.stringify(text)} is not an instant in the form 2026-12-01T09:00:00.000000Z`);
  return Date.parse(`${m[1] as string}Z`) * 1000 + Number(m[2]);
}

/** A window's bounds as the service echoes them; absent bounds absent. */
export function wireWindow(w: Window | undefined): { not_before?: string; expires_at?: string } {
  return {
    ...(w?.notBefore === undefined ? {} : { not_before: wireInstant(w.notBefore) }),
    ...(w?.expiresAt === undefined ? {} : { expires_at: wireInstant(w.expiresAt) }),
  };
}

// ---- the windows a client wrote ----------------------------------------------------------------

/**
 * The window each edge got from the client's last write of it (by {@link grantKey} /
 * {@link memberKey}). A boundary change leaves it here: the bounds it names have passed, and a
 * worker the change has not reached yet may still show them.
 */
export type Written = Map<string, Window>;

export const grantKey = (role: string, permission: string): string => `permission\0${role}\0${permission}`;
export const memberKey = (user: string, role: string): string => `membership\0${role}\0${user}`;

/** Records what a committed write of the client did to the windows of its edges. */
export function recordWritten(written: Written, c: Change): void {
  const set = (key: string, w: Window): void => void (w.notBefore === undefined && w.expiresAt === undefined ? written.delete(key) : written.set(key, w));
  switch (c.op) {
    case 'role.delete':
      for (const key of [...written.keys()]) if (key.split('\0')[1] === c.role) written.delete(key);
      return;
    case 'permission.grant':
    case 'permission.window':
      return set(grantKey(c.role, c.permission), windowOf(c));
    case 'membership.add':
    case 'membership.window':
      return set(memberKey(c.user, c.role), windowOf(c));
    case 'permission.revoke':
      return void written.delete(grantKey(c.role, c.permission));
    case 'membership.remove':
      return void written.delete(memberKey(c.user, c.role));
    default:
      return;
  }
}

const windowOf = (c: Window): Window => ({
  ...(c.notBefore === undefined ? {} : { notBefore: c.notBefore }),
  ...(c.expiresAt === undefined ? {} : { expiresAt: c.expiresAt }),
});

/** Every bound the client wrote: a read whose time span holds one may answer either way. */
export function boundsOf(written: Written): number[] {
  return [...written.values()].flatMap((w) => [w.notBefore, w.expiresAt].filter((b): b is number => b !== undefined));
}

/**
 * The window fields of an answer about an edge, at `instant`: a bound still ahead must show, as
 * written; a passed one may show (its boundary change may not have come yet) or not; nothing else.
 */
export function checkWindowFields(got: Record<string, unknown>, w: Window | undefined, instant: number, what: string): void {
  for (const [field, bound] of [
    ['not_before', w?.notBefore],
    ['expires_at', w?.expiresAt],
  ] as const) {
    const value = got[field];
    if (value === undefined) {
      assert.ok(bound === undefined || bound <= instant, `${what}: ${field} missing, though ${wireInstant(bound ?? 0)} is still ahead`);
    } else {
      assert.ok(bound !== undefined, `${what}: ${field} ${String(value)} on an edge written without one`);
      assert.equal(value, wireInstant(bound), `${what}: ${field}`);
    }
  }
}

/** A list of edges (`members`, `role_permissions`, `user_roles`): the model's items by name, then each item's window. */
export function checkEdgeList(
  got: unknown,
  expected: ReadonlyArray<Record<string, string>>,
  nameKey: string,
  windowOf: (name: string) => Window | undefined,
  instant: number,
  what: string,
): void {
  assert.ok(Array.isArray(got), `${what}: not an array`);
  const items = got as Array<Record<string, unknown>>;
  assert.deepEqual(
    items.map((i) => i[nameKey]),
    expected.map((i) => i[nameKey]),
    `${what}: names`,
  );
  for (const item of items) checkEdgeAnswer(item, nameKey, item[nameKey], windowOf(item[nameKey] as string), instant, `${what}: ${String(item[nameKey])}`);
}

/** An answer about one edge (`{is_member}`, `{has_permission}`, a list item): `field` as expected, the window as written. */
export function checkEdgeAnswer(got: Record<string, unknown>, field: string, expected: unknown, w: Window | undefined, instant: number, what: string): void {
  assert.equal(got[field], expected, `${what}: ${field}`);
  for (const key of Object.keys(got)) assert.ok([field, 'not_before', 'expires_at'].includes(key), `${what}: a key ${key}`);
  checkWindowFields(got, w, instant, what);
}

/** GET /api/windows at `instant`: the edges with a bound ahead, by that bound, then kind, role, user or permission. */
export function checkWindowsList(got: unknown, written: Written, instant: number, what: string): void {
  const due = [...written]
    .map(([key, w]) => {
      const [kind, role, other] = key.split('\0') as [string, string, string];
      const next = w.notBefore !== undefined && w.notBefore > instant ? w.notBefore : w.expiresAt;
      return { kind, role, other, w, next };
    })
    .filter((e) => e.next !== undefined && e.next > instant)
    .sort((a, b) => (a.next as number) - (b.next as number) || byCodePoint(a.kind, b.kind) || byCodePoint(a.role, b.role) || byCodePoint(a.other, b.other));
  assert.ok(Array.isArray(got), `${what}: not an array`);
  const items = got as Array<Record<string, unknown>>;
  const edge = (kind: unknown, role: unknown, other: unknown): string => `${String(kind)} ${String(role)} ${String(other)}`;
  assert.deepEqual(
    items.map((i) => edge(i.kind, i.role, i.kind === 'permission' ? i.permission : i.user)),
    due.map((e) => edge(e.kind, e.role, e.other)),
    `${what}: edges`,
  );
  due.forEach((e, i) => checkWindowFields(items[i] as Record<string, unknown>, e.w, instant, `${what}: ${edge(e.kind, e.role, e.other)}`));
}

// ---- writes -----------------------------------------------------------------------------------

/** What a write (a route's, or an item of a batch) answers on a model, and the change it commits. */
export interface Outcome {
  status: number;
  /** The change as committed (a PUT that creates its edge commits a grant or an add). */
  committed?: Change;
  data?: Record<string, unknown>;
  /** What the error text must name. */
  names?: string;
}

/**
 * The data a write is expected to answer, given the answer `got` received at `receivedAt`: a
 * `not_before` that had passed when the write committed is dropped (the edge is active at once,
 * docs/api.md §12.1), so one not after the answer may be missing.
 */
export function withPastNotBefore(expected: Record<string, unknown>, got: Record<string, unknown>, receivedAt: number): Record<string, unknown> {
  if (expected.not_before === undefined || got.not_before !== undefined) return expected;
  if (parseWireInstant(expected.not_before, 'not_before') > receivedAt) return expected;
  const { not_before: _passed, ...rest } = expected;
  return rest;
}

/** The committed change with the window the service echoed (in µs, parsed from its text). */
export function echoed(c: Change, data: Record<string, unknown>, what: string): Change {
  if (windowIn(c) === undefined) return c;
  const { notBefore: _nb, expiresAt: _ea, ...edge } = c as Change & Window;
  const nb = data.not_before === undefined ? {} : { notBefore: parseWireInstant(data.not_before, `${what} not_before`) };
  const ea = data.expires_at === undefined ? {} : { expiresAt: parseWireInstant(data.expires_at, `${what} expires_at`) };
  return { ...edge, ...nb, ...ea } as Change;
}

/** The answer of POST /api/dry-run (docs/api.md §12.3). */
export interface DryRun {
  revision: number;
  valid: boolean;
  results: Array<{ status: number; error?: string }>;
  gained: unknown[];
  lost: unknown[];
  gained_count: number;
  lost_count: number;
  truncated: boolean;
}

/** The outcome of `c` on `m` (unchanged), its data at `revision`. */
export function predict(m: RbacModel, c: Change, revision: number): Outcome {
  const state = m.roles.get(c.role);
  if (c.op === 'role.create')
    return state !== undefined ? { status: 409, names: c.role } : { status: 201, committed: c, data: { role: c.role, description: c.description, revision } };
  if (state === undefined) return { status: 404, names: c.role };
  const ok = (status: number, committed: Change, data: Record<string, unknown>): Outcome => ({
    status,
    committed,
    data: { ...data, revision, ...wireWindow(windowIn(committed)) },
  });
  switch (c.op) {
    case 'role.delete':
      return ok(200, c, { role: c.role, permissions_removed: state.perms.size, memberships_removed: state.members.size });
    case 'permission.grant':
    case 'permission.window':
    case 'permission.revoke': {
      const held = state.perms.has(c.permission);
      const data = { role: c.role, permission: c.permission };
      if (c.op === 'permission.window') return held ? ok(200, c, data) : ok(201, { ...c, op: 'permission.grant' }, data);
      if (c.op === 'permission.grant') return held ? { status: 409, names: c.permission } : ok(201, c, data);
      return held ? ok(200, c, data) : { status: 404, names: c.permission };
    }
    case 'membership.add':
    case 'membership.window':
    case 'membership.remove': {
      const held = state.members.has(c.user);
      const data = { user: c.user, role: c.role };
      if (c.op === 'membership.window') return held ? ok(200, c, data) : ok(201, { ...c, op: 'membership.add' }, data);
      if (c.op === 'membership.add') return held ? { status: 409, names: c.user } : ok(201, c, data);
      return held ? ok(200, c, data) : { status: 404, names: c.user };
    }
    default:
      throw new Error(`${c.op} is never asked for`);
  }
}

/** The window a change gives its edge, for the changes that give one. */
function windowIn(c: Change): Window | undefined {
  const asked = c.op.endsWith('.grant') || c.op.endsWith('.add') || c.op.endsWith('.window');
  return asked ? windowOf(c as Window) : undefined;
}

/** A copy of the model that later changes to either leave the other alone. */
export function cloneModel(m: RbacModel): RbacModel {
  const c = new RbacModel();
  for (const [role, s] of m.roles) c.roles.set(role, { description: s.description, perms: new Set(s.perms), members: new Set(s.members) });
  for (const [key, w] of m.windows) c.windows.set(key, w);
  c.revision = m.revision;
  c.clock = m.clock;
  return c;
}

/** A batch on a copy of `m` (§12.2, §12.3): each item's outcome, whether all succeed, and the state after. */
export function simulate(
  m: RbacModel,
  items: readonly Change[],
  revision: number,
): { valid: boolean; outcomes: Outcome[]; statuses: number[]; after: RbacModel } {
  const after = cloneModel(m);
  const outcomes: Outcome[] = [];
  for (const item of items) {
    const o = predict(after, item, revision);
    outcomes.push(o);
    if (o.committed === undefined) break;
    after.apply(o.committed);
  }
  const valid = outcomes.every((o) => o.committed !== undefined);
  const statuses = items.map((_, i) => outcomes[i]?.status ?? 424);
  after.revision = valid ? revision : m.revision;
  return { valid, outcomes, statuses, after: valid ? after : cloneModel(m) };
}

export interface UserPermission {
  user: string;
  permission: string;
}

/** The (user, permission) pairs whose check differs between two models at their clocks, sorted by user then permission. */
export function permissionDiff(before: RbacModel, after: RbacModel): { gained: UserPermission[]; lost: UserPermission[] } {
  const states = [...before.roles.values(), ...after.roles.values()];
  const users = sorted(states.flatMap((s) => [...s.members]));
  const perms = sorted(states.flatMap((s) => [...s.perms]));
  const gained: UserPermission[] = [];
  const lost: UserPermission[] = [];
  for (const user of users) {
    for (const permission of perms) {
      const was = before.hasPermission(user, permission);
      if (was !== after.hasPermission(user, permission)) (was ? lost : gained).push({ user, permission });
    }
  }
  return { gained, lost };
}

/**
 * Checks a preview against the model at the preview's revision: each item's status, and the
 * difference when no bound is near the span the preview was asked and answered in (`compared`).
 */
export function checkPreview(
  m: RbacModel,
  written: Written,
  items: readonly Change[],
  preview: DryRun,
  span: [number, number],
  what: string,
): { sim: ReturnType<typeof simulate>; compared: boolean } {
  const sim = simulate(m, items, preview.revision + 1);
  const got = { valid: preview.valid, statuses: preview.results.map((x) => x.status) };
  assert.deepEqual(got, { valid: sim.valid, statuses: sim.statuses }, `${what} at revision ${preview.revision}: ${JSON.stringify(preview.results)}`);
  sim.outcomes.forEach((o, i) => {
    const error = preview.results[i]?.error;
    if (o.committed !== undefined) assert.equal(error, undefined, `${what} results[${i}]: an error on a success`);
    else assert.ok(error?.includes(o.names ?? '') === true, `${what} results[${i}]: error ${error} should name ${o.names}`);
  });
  const diff = { gained: preview.gained, lost: preview.lost, gained_count: preview.gained_count, lost_count: preview.lost_count, truncated: preview.truncated };
  const bounds = [...boundsOf(written), ...items.flatMap((c) => [(c as Window).notBefore ?? NaN, (c as Window).expiresAt ?? NaN])];
  if (!sim.valid) {
    assert.deepEqual(diff, { gained: [], lost: [], gained_count: 0, lost_count: 0, truncated: false }, `${what} of an invalid batch`);
    return { sim, compared: true };
  }
  if (quiet(bounds, ...span)) {
    m.clock = sim.after.clock = () => span[0];
    const { gained, lost } = permissionDiff(m, sim.after);
    assert.deepEqual(
      diff,
      { gained, lost, gained_count: gained.length, lost_count: lost.length, truncated: false },
      `${what}: difference at ${preview.revision}`,
    );
    return { sim, compared: true };
  }
  return { sim, compared: false };
}

// ---- the changelog ------------------------------------------------------------------------------

/** A row of GET /api/changes. */
export interface ChangeRow {
  revision: number;
  op: string;
  role: string;
  permission?: string;
  user?: string;
  not_before?: string;
  expires_at?: string;
  timestamp: string;
}

/** The row a change makes, without its revision and timestamp. */
export function rowOf(c: Change): Record<string, string> {
  const edge = 'permission' in c ? { permission: c.permission } : 'user' in c ? { user: c.user } : {};
  const bounds = c.op.endsWith('.activate') || c.op.endsWith('.expire') ? wireWindow(c as Window) : wireWindow(windowIn(c));
  return { op: c.op, role: c.role, ...edge, ...bounds };
}

/** The boundary change a row names, or undefined when it is no boundary change. */
export function boundaryOf(row: ChangeRow, what: string): Change | undefined {
  const edge = row.op.startsWith('permission.') ? { role: row.role, permission: row.permission ?? '' } : { role: row.role, user: row.user ?? '' };
  if (row.op.endsWith('.activate')) {
    assert.equal(row.expires_at, undefined, `${what}: an activate row with expires_at`);
    return { op: row.op as 'permission.activate', ...edge, notBefore: parseWireInstant(row.not_before, `${what} not_before`) } as Change;
  }
  if (row.op.endsWith('.expire')) {
    assert.equal(row.not_before, undefined, `${what}: an expire row with not_before`);
    return { op: row.op as 'permission.expire', ...edge, expiresAt: parseWireInstant(row.expires_at, `${what} expires_at`) } as Change;
  }
  return undefined;
}

// ---- reads ------------------------------------------------------------------------------------

/** GET /api/explain at the model's clock: the active granting roles; the remedies by their active permission count. */
export function explainAt(m: RbacModel, user: string, permission: string): Record<string, unknown> {
  const granting = m.roleNamesWith(permission);
  const mine = new Set(m.userRoleNames(user));
  const grantedBy = granting.filter((r) => mine.has(r));
  if (grantedBy.length > 0) return { has_permission: true, granted_by: grantedBy, remedies: [] };
  const remedies = granting
    .map((role) => ({ role, permissions: m.activePerms(role).length }))
    .sort((x, y) => x.permissions - y.permissions || byCodePoint(x.role, y.role))
    .slice(0, 10);
  return { has_permission: false, granted_by: [], remedies };
}

/** Whether no bound lies within a request's span, widened by a millisecond (the service's clock reads whole ones): then its answer is the model's at any instant of the span. */
export const quiet = (bounds: readonly number[], from: number, to: number): boolean => !bounds.some((b) => b >= from - 1000 && b <= to + 1000);

/** The names the windows property test draws from (binary collation: '+' < '.' < 'A' < '_' < 'a' < '|'). */
export const ROLES = ['A', 'a.b', 'ops+dev|1', '_x'] as const;
export const PERMS = ['read', 'Read', 'doc:edit', 'z', 'A-1'] as const;
export const USERS = ['a', 'A', 'bob+tag@ex.io', 'x|y', 'user@example.com'] as const;

/** A read request and what the model says of its answer at `instant` (the model's clock set there). */
export interface Read {
  path: string;
  /** A POST's body (POST /api/check); GET without. */
  body?: object;
  expect(res: ApiResult<unknown>, instant: number): void;
}

const seg = encodeURIComponent;

/** A random read route of the client whose model and written windows are given. */
export function randomRead(m: RbacModel, w: Written, rng: () => number, label: string, key: string): Read {
  const of = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
  const [u, p, r] = [of(USERS), of(PERMS), of(ROLES)];
  const read = (path: string, check: (data: unknown, instant: number, what: string) => void, roleMustExist = false): Read => ({
    path,
    expect: (res, instant) => {
      const what = `${label} ${path}`;
      if (roleMustExist && !m.roles.has(r)) return expectErr(res, 404, what, key, r);
      check(expectOk(res, 200, what), instant, what);
    },
  });
  const equal = (path: string, expected: () => unknown): Read => read(path, (data, _at, what) => assert.deepEqual(data, expected(), what));
  switch (Math.floor(rng() * 12)) {
    case 0:
      return equal(`/api/has_permission/${seg(u)}/${seg(p)}`, () => ({ has_permission: m.hasPermission(u, p) }));
    case 1:
      return equal(`/api/user_permissions/${seg(u)}`, () => m.userPermissions(u));
    case 2:
      return equal(`/api/which_users_can/${seg(p)}`, () => m.whichUsersCan(p));
    case 3:
      return equal(`/api/which_roles_can/${seg(p)}`, () => m.whichRolesCan(p));
    case 4:
      return equal(`/api/explain/${seg(u)}/${seg(p)}`, () => explainAt(m, u, p));
    case 5:
      return read(`/api/user_roles/${seg(u)}`, (data, at, what) => checkEdgeList(data, m.userRoles(u), 'role', (x) => w.get(memberKey(u, x)), at, what));
    case 6:
      return read(`/api/members/${seg(r)}`, (data, at, what) => checkEdgeList(data, m.members(r), 'user', (x) => w.get(memberKey(x, r)), at, what), true);
    case 7:
      return read(
        `/api/role_permissions/${seg(r)}`,
        (data, at, what) => checkEdgeList(data, m.rolePermissions(r), 'name', (x) => w.get(grantKey(r, x)), at, what),
        true,
      );
    case 8: {
      const check = (data: unknown, at: number, what: string): void =>
        checkEdgeAnswer(data as Record<string, unknown>, 'is_member', m.userRoleNames(u).includes(r), w.get(memberKey(u, r)), at, what);
      return read(`/api/membership/${seg(u)}/${seg(r)}`, check, true);
    }
    case 9: {
      const check = (data: unknown, at: number, what: string): void =>
        checkEdgeAnswer(data as Record<string, unknown>, 'has_permission', m.activePerms(r).includes(p), w.get(grantKey(r, p)), at, what);
      return read(`/api/permission/${seg(r)}/${seg(p)}`, check, true);
    }
    case 10:
      return read('/api/windows', (data, at, what) => checkWindowsList(data, w, at, what));
    default: {
      const checks = Array.from({ length: 1 + Math.floor(rng() * 8) }, () => ({ user: of(USERS), permission: of(PERMS) }));
      const expected = (): object => {
        const results = checks.map((x) => ({ ...x, has_permission: m.hasPermission(x.user, x.permission) }));
        return { results, all: results.every((x) => x.has_permission), any: results.some((x) => x.has_permission) };
      };
      return { ...equal('/api/check', expected), body: { checks } };
    }
  }
}
