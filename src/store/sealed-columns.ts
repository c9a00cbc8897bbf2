import { DecryptionError, type FieldCipher } from '../crypto/field-cipher.ts';

/**
 * How a column holds names when field encryption is on (docs/operations.md §7): `name`, one
 * sealed text; `resource`, an audit row's resource (see {@link openResource}); `name-list`, a JSON
 * array of sealed names (a workflow run's diff).
 */
export type SealedKind = 'name' | 'resource' | 'name-list';

/** A table and its columns that hold sealed text (NULL cells hold none). */
export interface SealedTable {
  readonly table: string;
  readonly columns: Readonly<Record<string, SealedKind>>;
}

/**
 * Every stored cell wrappers/encrypted.ts seals, by table: what re-keying a database rewrites.
 * Kept in step with EncryptedStore (a name it seals in a new column must be listed here, or a
 * rotation would leave that column under the old key). Each non-NULL cell listed is sealed.
 */
export const SEALED_TABLES: readonly SealedTable[] = [
  { table: 'roles', columns: { role: 'name', description: 'name' } },
  { table: 'grants', columns: { role: 'name', permission: 'name' } },
  { table: 'memberships', columns: { role: 'name', user: 'name' } },
  { table: 'changelog', columns: { role: 'name', permission: 'name', user: 'name', description: 'name' } },
  { table: 'audit', columns: { resource: 'resource' } },
  { table: 'workflow_schedules', columns: { workflow: 'name', webhook_url: 'name', webhook_secret: 'name' } },
  { table: 'workflow_runs', columns: { workflow: 'name', added: 'name-list', removed: 'name-list' } },
  { table: 'workflow_holders', columns: { workflow: 'name', user: 'name' } },
];

/** The paths of boundary changes' audit rows (see edgeResource), before their two names. */
const EDGE_PATHS = ['/api/permission/', '/api/membership/'];

/** A stored audit resource opened: the whole text, or an edge's path prefix and its two names. */
export type OpenedResource = { readonly whole: string } | { readonly prefix: string; readonly names: readonly [string, string] };

/**
 * An audit row's resource, opened. A boundary change's row is written by the adapter itself,
 * inside the change's transaction, with the edge's path built from the names as stored (see
 * edgeResource): its two sealed names are opened one by one. A sealed name is base64 (a multiple
 * of 4 characters, possibly holding `/`): the path is cut at the `/` after which both halves
 * decrypt, which the cipher's authentication makes the only one. Any other resource is sealed
 * whole. Throws DecryptionError when neither reading holds.
 */
export function openResource(stored: string, cipher: FieldCipher): OpenedResource {
  const prefix = EDGE_PATHS.find((p) => stored.startsWith(p));
  if (prefix !== undefined) {
    const names = stored.slice(prefix.length);
    for (let cut = names.indexOf('/'); cut !== -1; cut = names.indexOf('/', cut + 1)) {
      if (cut % 4 !== 0) continue;
      try {
        return { prefix, names: [cipher.decrypt(names.slice(0, cut)), cipher.decrypt(names.slice(cut + 1))] };
      } catch (err) {
        if (!(err instanceof DecryptionError)) throw err;
      }
    }
  }
  return { whole: cipher.decrypt(stored) };
}

/** {@link openResource}'s answer as plaintext text. */
export const plainResource = (opened: OpenedResource): string => ('whole' in opened ? opened.whole : `${opened.prefix}${opened.names[0]}/${opened.names[1]}`);

/** Turns a sealed cell of one kind from how one key stores it into how another does. */
export type CellRewrite = (kind: SealedKind, stored: string) => string;

/** Names remembered while re-keying: a user recurs in every membership it has. Bounded. */
const MEMO_MAX = 100_000;

/**
 * The rewrite of every sealed cell from `from` to `to` (undefined: plaintext), for re-keying a
 * database: a name is opened with `from` (a wrong key fails closed, DecryptionError) and sealed
 * with `to`. An edge resource keeps its shape; a plaintext resource is sealed whole, which
 * EncryptedStore reads back the same.
 */
export function cellRewrite(from: FieldCipher | undefined, to: FieldCipher | undefined): CellRewrite {
  let memo = new Map<string, string>();
  const open = (text: string): string => (from === undefined ? text : from.decrypt(text));
  const seal = (text: string): string => (to === undefined ? text : to.encrypt(text));
  const name = (stored: string): string => {
    let out = memo.get(stored);
    if (out === undefined) {
      if (memo.size >= MEMO_MAX) memo = new Map();
      memo.set(stored, (out = seal(open(stored))));
    }
    return out;
  };
  const resource = (stored: string): string => {
    if (from === undefined) return seal(stored);
    const opened = openResource(stored, from);
    if ('whole' in opened) return seal(opened.whole);
    return `${opened.prefix}${seal(opened.names[0])}/${seal(opened.names[1])}`;
  };
  return (kind, stored) => {
    if (kind === 'name') return name(stored);
    if (kind === 'resource') return resource(stored);
    const list = JSON.parse(stored) as unknown;
    if (!Array.isArray(list) || !list.every((n): n is string => typeof n === 'string')) throw new Error(`a stored name list is not a JSON array of strings`);
    return JSON.stringify(list.map(name));
  };
}
