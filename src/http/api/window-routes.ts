import { windowOf, type Change, type ChangeEffect, type Window, type WindowedEdge, type WriteCommitted } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import { formatInstant } from '../../time/instant.ts';
import { parseWindow } from '../input/window.ts';
import { parseWrites } from '../input/writes.ts';
import type { Route } from './route-types.ts';

/*
 * The routes of timed access, atomic batches and previews (docs/api.md §12), and what the
 * routes of §5 share with them: a request body's window, and a committed change's window and
 * data as the wire shows them.
 */

const p0 = (p: readonly string[]): string => p[0] as string;
const p1 = (p: readonly string[]): string => p[1] as string;

const ROLE_NOT_FOUND = 'Role not found';

/** The window a POST or PUT body asks for, as fields to spread into its change (none: permanent). */
export function windowOfBody(body: unknown, nowMicros: number): Window {
  return parseWindow(body, nowMicros) ?? {};
}

/** A window's bounds as the wire shows them (`not_before`, `expires_at`, UTC with `Z`); absent bounds absent. */
export function wireWindow(notBefore: number | undefined, expiresAt: number | undefined): { not_before?: string; expires_at?: string } {
  return {
    ...(notBefore === undefined ? {} : { not_before: formatInstant(notBefore) }),
    ...(expiresAt === undefined ? {} : { expires_at: formatInstant(expiresAt) }),
  };
}

/** The window a write request's first change asked for, as the wire shows it. */
export function askedWindow(asked: readonly Change[]): { not_before?: string; expires_at?: string } {
  const first = asked[0];
  const w = first === undefined ? undefined : windowOf(first);
  return wireWindow(w?.notBefore, w?.expiresAt);
}

/** The description a committed role.create gave its role. */
export function createdDescription(d: WriteCommitted): string {
  const first = d.changes[0];
  return first?.op === 'role.create' ? first.description : '';
}

/** A committed change's data, as its own route answers it (docs/api.md §5, §12.2). */
function changeData(c: Change, effect: ChangeEffect | undefined, revision: number): object {
  const w = windowOf(c);
  const window = wireWindow(w?.notBefore, w?.expiresAt);
  switch (c.op) {
    case 'role.create':
      return { role: c.role, description: c.description, revision };
    case 'role.delete':
      return { role: c.role, permissions_removed: effect?.permissionsRemoved ?? 0, memberships_removed: effect?.membershipsRemoved ?? 0, revision };
    case 'permission.grant':
    case 'permission.revoke':
    case 'permission.window':
    case 'permission.activate':
    case 'permission.expire':
      return { role: c.role, permission: c.permission, revision, ...window };
    default:
      return { user: c.user, role: c.role, revision, ...window };
  }
}

/** 201 when a PUT created its edge, 200 when it replaced the window of one that existed. */
const createdOrReplaced = (d: WriteCommitted): 200 | 201 => (d.changes[0]?.op.endsWith('.window') === true ? 200 : 201);

// ---- GET /api/windows: edges by their next boundary --------------------------------------------

/** Microseconds as fixed-width digits, so that text order is time order. */
const DIGITS = 17;

/**
 * The edges with a bound ahead of now, as keys in the list's order (docs/api.md §12.1: by next
 * boundary, then kind, role, user or permission): `<boundary>\0<kind>\0<role>\0<other>`. Names
 * never hold U+0000, so comparing keys by code point compares those fields in turn, and a key is
 * the page position a cursor holds.
 */
function windowKeys(g: TenantGraph): readonly string[] {
  return g.remember('windows', () => {
    const now = Date.now() * 1000;
    const keys: string[] = [];
    for (const e of g.windowedEdges()) {
      const next = e.notBefore !== undefined && e.notBefore > now ? e.notBefore : e.expiresAt;
      if (next === undefined || next <= now) continue;
      keys.push(`${String(next).padStart(DIGITS, '0')}\0${e.kind}\0${e.role}\0${e.kind === 'permission' ? e.permission : e.user}`);
    }
    return keys;
  });
}

/** The items of a page of {@link windowKeys}: each edge with its window as it is now. */
function windowItems(g: TenantGraph, keys: readonly string[]): unknown[] {
  return keys.map((key) => {
    const [, kind, role, other] = key.split('\0') as [string, WindowedEdge['kind'], string, string];
    const w = kind === 'permission' ? g.grantEdge(role, other) : g.memberEdge(other, role);
    const edge = kind === 'permission' ? { kind, role, permission: other } : { kind, role, user: other };
    return { ...edge, ...wireWindow(w?.notBefore, w?.expiresAt) };
  });
}

export const WINDOW_ROUTES: readonly Route[] = [
  {
    id: 'permission.window',
    kind: 'write',
    method: 'PUT',
    path: '/api/permission/{role}/{permission}',
    params: ['role', 'permission'],
    status: 201,
    message: 'Permission window set',
    data: 'grantWindowed',
    body: 'edgeWindow',
    notFound: ROLE_NOT_FOUND,
    summary: 'Sets the window of a grant, granting it when it does not exist (201) or replacing its window (200; an empty body makes it permanent)',
    changes: (p, body, now) => [{ op: 'permission.window', role: p0(p), permission: p1(p), ...windowOfBody(body, now) }],
    result: (d, p, asked) => ({ role: p0(p), permission: p1(p), revision: d.revision, ...askedWindow(asked) }),
    statusOf: createdOrReplaced,
  },
  {
    id: 'membership.window',
    kind: 'write',
    method: 'PUT',
    path: '/api/membership/{user}/{role}',
    params: ['user', 'role'],
    status: 201,
    message: 'Membership window set',
    data: 'membershipWindowed',
    body: 'edgeWindow',
    notFound: ROLE_NOT_FOUND,
    summary: 'Sets the window of a membership, adding it when it does not exist (201) or replacing its window (200; an empty body makes it permanent)',
    changes: (p, body, now) => [{ op: 'membership.window', user: p0(p), role: p1(p), ...windowOfBody(body, now) }],
    result: (d, p, asked) => ({ user: p0(p), role: p1(p), revision: d.revision, ...askedWindow(asked) }),
    statusOf: createdOrReplaced,
  },
  {
    id: 'windows',
    kind: 'list',
    method: 'GET',
    path: '/api/windows',
    params: [],
    status: 200,
    message: 'OK',
    data: 'windows',
    summary: 'Grants and memberships with a boundary ahead, by that boundary',
    names: (g) => windowKeys(g),
    items: (g, keys) => windowItems(g, keys),
  },
  {
    id: 'writes',
    kind: 'write',
    method: 'POST',
    path: '/api/writes',
    params: [],
    status: 200,
    message: 'Writes committed',
    data: 'writesDone',
    body: 'writes',
    notFound: 'A role (or grant, or membership) that an item names does not exist',
    summary: 'Applies 1 to 1000 writes in order, in one transaction at one revision: all of them or none',
    changes: (_p, body, now) => parseWrites(body, now),
    result: (d, _p, asked) => ({ revision: d.revision, results: asked.map((c, i) => changeData(c, d.effects[i], d.revision)) }),
  },
  {
    id: 'dry-run',
    kind: 'preview',
    method: 'POST',
    path: '/api/dry-run',
    params: [],
    status: 200,
    message: 'OK',
    data: 'dryRun',
    body: 'writes',
    summary: 'Whether a batch of writes would succeed now, and who would gain and lose which permissions: stores nothing',
  },
];
