/**
 * The client as of a revision, rebuilt from the change feed (GET /api/changes from revision 0),
 * and as it is now, from its export (GET /api/export); and the differences between the two. Both
 * are what the store holds: roles, and grants and memberships with their windows, pending ones
 * included. The feed keeps no role descriptions, so none are compared.
 */
import type { ChangeRow, Windowed } from '../client/index.ts';
import { api, must } from './session.ts';

/** One thing the client holds: a role, a grant (`name` is the permission) or a membership (`name` is the user). */
export interface Item extends Windowed {
  readonly kind: 'role' | 'permission' | 'membership';
  readonly role: string;
  readonly name: string;
}

const FEED_PAGE = 10_000;

/** Roles, each with its grants and members by name, and their windows. */
export class ClientState {
  readonly roles = new Map<string, { grants: Map<string, Windowed>; members: Map<string, Windowed> }>();

  /** Applies one row of the feed, as the store applied its change. */
  apply(row: ChangeRow): void {
    if (row.role === undefined) return; // client.import: counts only (the caller refuses to replay it)
    if (row.op === 'role.create') this.roles.set(row.role, { grants: new Map(), members: new Map() });
    else if (row.op === 'role.delete') this.roles.delete(row.role);
    else if (row.op.startsWith('permission.')) this.#edge(this.roles.get(row.role)?.grants, row.permission, row);
    else if (row.op.startsWith('membership.')) this.#edge(this.roles.get(row.role)?.members, row.user, row);
  }

  #edge(edges: Map<string, Windowed> | undefined, name: string | undefined, row: ChangeRow): void {
    if (edges === undefined || name === undefined) return;
    const what = row.op.slice(row.op.indexOf('.') + 1);
    if (what === 'revoke' || what === 'remove' || what === 'expire') edges.delete(name);
    else if (what === 'activate') edges.set(name, withoutStart(edges.get(name) ?? {}));
    // grant, add, window: the window the row carries; a start already past when written is not kept.
    else edges.set(name, startPassed(row) ? withoutStart(windowOf(row)) : windowOf(row));
  }

  /** Applies a line of an export (docs/api.md §17.1); the header line is the caller's. */
  load(line: { type?: string; role: string; permission?: string; user?: string } & Windowed): void {
    if (line.type === 'role') this.roles.set(line.role, { grants: new Map(), members: new Map() });
    else if (line.type === 'permission' && line.permission !== undefined) this.roles.get(line.role)?.grants.set(line.permission, windowOf(line));
    else if (line.type === 'membership' && line.user !== undefined) this.roles.get(line.role)?.members.set(line.user, windowOf(line));
  }

  /** Everything held, in the export's order: roles, then grants, then memberships, each by role then name. */
  items(): Item[] {
    const roles = [...this.roles.keys()].sort(byCodePoint);
    const edges = (kind: 'permission' | 'membership'): Item[] =>
      roles.flatMap((role) => {
        const held = this.roles.get(role) as { grants: Map<string, Windowed>; members: Map<string, Windowed> };
        const map = kind === 'permission' ? held.grants : held.members;
        return [...map.keys()].sort(byCodePoint).map((name) => ({ kind, role, name, ...map.get(name) }));
      });
    return [...roles.map((role): Item => ({ kind: 'role', role, name: '' })), ...edges('permission'), ...edges('membership')];
  }

  /** The window of an item, undefined when it is not held. */
  find(item: Item): Windowed | undefined {
    const held = this.roles.get(item.role);
    if (held === undefined) return undefined;
    if (item.kind === 'role') return {};
    return (item.kind === 'permission' ? held.grants : held.members).get(item.name);
  }
}

/** Why a revision cannot be shown, in words; or the state at it. */
export type AsOf = { readonly state: ClientState } | { readonly refused: string };

/** The client at `revision`, replayed from the feed's first row; refused past an import, whose row keeps counts, not data. */
export async function stateAt(revision: number): Promise<AsOf> {
  const state = new ClientState();
  let cursor: string | undefined;
  do {
    const res = await api().changes(0, cursor === undefined ? { limit: FEED_PAGE } : { limit: FEED_PAGE, cursor });
    for (const row of must(res)) {
      if (row.revision > revision) return { state };
      if (row.op === 'client.import') return { refused: importRefusal(revision, row.revision) };
      state.apply(row);
    }
    cursor = res.nextCursor;
  } while (cursor !== undefined);
  return { state };
}

function importRefusal(asked: number, imported: number): string {
  return (
    `Revision ${asked} cannot be rebuilt from the change log: revision ${imported} is an import (client.import), ` +
    `whose change row records how much it added and removed, not what. Revisions before ${imported} can be shown.`
  );
}

/** The client now, from its export: its revision and what it holds. */
export async function stateNow(): Promise<{ readonly revision: number; readonly state: ClientState }> {
  const state = new ClientState();
  let revision: number | undefined;
  for await (const text of api().exportClient()) {
    if (text === '') continue;
    const line = JSON.parse(text) as { format?: string; revision?: number; type?: string; role: string } & Windowed;
    if (line.format !== undefined) revision = line.revision;
    else state.load(line);
  }
  if (revision === undefined) throw new Error('the export had no header line');
  return { revision, state };
}

export interface Differences {
  /** Held now, not then. */
  readonly added: readonly Item[];
  /** Held then, not now. */
  readonly removed: readonly Item[];
  /** Held both times, with another window now (the item as it is now). */
  readonly rewindowed: readonly Item[];
}

export function differences(then: ClientState, now: ClientState): Differences {
  const nowItems = now.items();
  const added = nowItems.filter((i) => then.find(i) === undefined);
  const removed = then.items().filter((i) => now.find(i) === undefined);
  const rewindowed = nowItems.filter((i) => {
    const before = then.find(i);
    return i.kind !== 'role' && before !== undefined && (before.not_before !== i.not_before || before.expires_at !== i.expires_at);
  });
  return { added, removed, rewindowed };
}

function windowOf(w: Windowed): Windowed {
  const out: Windowed = {};
  if (w.not_before !== undefined) out.not_before = w.not_before;
  if (w.expires_at !== undefined) out.expires_at = w.expires_at;
  return out;
}

function withoutStart(w: Windowed): Windowed {
  return w.expires_at === undefined ? {} : { expires_at: w.expires_at };
}

function startPassed(row: ChangeRow): boolean {
  return row.not_before !== undefined && Date.parse(row.not_before) <= Date.parse(utc(row.timestamp));
}

/** A §2 timestamp is UTC without a zone; said so, so that it is not read as local time. */
export function utc(timestamp: string): string {
  return /(Z|[+-]\d\d:\d\d)$/.test(timestamp) ? timestamp : `${timestamp}Z`;
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
