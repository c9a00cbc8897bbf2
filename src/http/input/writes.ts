import type { Change } from '../../authz/changes.ts';
import { isName, NAME_RULE } from '../../authz/names.ts';
import { AppError } from '../../errors/index.ts';
import { bodyError, isJsonObject, mustBe, own, readWindowKeys } from './window.ts';

/**
 * The body of `POST /api/writes` and `POST /api/dry-run` (docs/api.md §12.2, §12.3):
 * `{"writes":[W, …]}`. Read in two layers, because the two routes part ways between them: the
 * body as a whole (an object whose `writes` is an array of 1 to 1000 items) is refused by both
 * alike, while a bad item refuses the whole batch of /api/writes but is one item's status of a
 * dry-run, beside the others'. Errors are 400 ERR_VALIDATION_BODY, worded as the body validator
 * words its own and naming the item's field (`writes[3].permission`).
 */

export const MAX_WRITES = 1000;

/** The ops a write request may ask, each with the keys it takes beside `op`. */
const OPS = {
  'role.create': { required: ['role'], optional: ['description'] },
  'role.delete': { required: ['role'], optional: [] },
  'permission.grant': { required: ['role', 'permission'], optional: ['not_before', 'expires_at'] },
  'permission.revoke': { required: ['role', 'permission'], optional: [] },
  'membership.add': { required: ['user', 'role'], optional: ['not_before', 'expires_at'] },
  'membership.remove': { required: ['user', 'role'], optional: [] },
} as const satisfies Record<string, { required: readonly string[]; optional: readonly string[] }>;

export type WriteOp = keyof typeof OPS;

/** The ops of a write request, in the order the contract lists them. */
export const WRITE_OPS = Object.keys(OPS) as WriteOp[];

/** The longest description, in Unicode code points (as role creation's body allows). */
const MAX_DESCRIPTION = 1024;

function isWriteOp(op: string): op is WriteOp {
  return Object.hasOwn(OPS, op);
}

/**
 * The items of a write request's body, checked as a whole only: throws a 400 naming `writes` (or
 * the body) when the body is absent, not an object, has a key other than `writes`, or when
 * `writes` is not an array of 1 to 1000 items. The items themselves are not looked at.
 */
export function parseWriteList(body: unknown): readonly unknown[] {
  if (body === undefined) throw bodyError("body must have the key 'writes'");
  if (!isJsonObject(body)) throw bodyError('body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (key !== 'writes') throw bodyError(`body has an unknown key '${key}'`);
  }
  const writes = own(body, 'writes');
  if (writes === undefined) throw bodyError("body must have the key 'writes'");
  if (!Array.isArray(writes)) throw mustBe('writes', 'array');
  if (writes.length < 1) throw bodyError('writes must have at least 1 items');
  if (writes.length > MAX_WRITES) throw bodyError(`writes must have at most ${MAX_WRITES} items`);
  return writes;
}

/** A role, permission or user name of an item; `field` as the error names it. */
function readName(value: unknown, field: string): string {
  if (typeof value !== 'string') throw mustBe(field, 'string');
  if (!isName(value)) throw bodyError(`${field} must be ${NAME_RULE}`);
  return value;
}

/** Code points of `s` up to `limit + 1`: enough to tell whether it is over `limit`. */
function codePointsOver(s: string, limit: number): boolean {
  if (s.length <= limit) return false;
  let count = 0;
  for (const _ of s) if (++count > limit) return true;
  return false;
}

function readDescription(value: unknown, field: string): string {
  if (value === undefined) return '';
  if (typeof value !== 'string') throw mustBe(field, 'string');
  if (codePointsOver(value, MAX_DESCRIPTION)) throw bodyError(`${field} must be at most ${MAX_DESCRIPTION} characters`);
  return value;
}

/** The op of an item, after its own checks; throws a 400 naming `writes[i]` or `writes[i].op`. */
function readOp(item: unknown, at: string): WriteOp {
  if (!isJsonObject(item)) throw mustBe(at, 'object');
  const op = own(item, 'op');
  if (op === undefined) throw bodyError(`${at} must have the key 'op'`);
  if (typeof op !== 'string') throw mustBe(`${at}.op`, 'string');
  if (!isWriteOp(op)) throw bodyError(`${at}.op must be one of ${WRITE_OPS.join(', ')}`);
  const { required, optional } = OPS[op];
  for (const key of Object.keys(item)) {
    if (key !== 'op' && !(required as readonly string[]).includes(key) && !(optional as readonly string[]).includes(key)) {
      throw bodyError(`${at} has an unknown key '${key}'`);
    }
  }
  for (const key of required) if (!Object.hasOwn(item, key)) throw bodyError(`${at} must have the key '${key}'`);
  return op;
}

/**
 * The change item `index` of a write request asks, its window checked against `nowMicros` (the
 * time the write commits). Throws a 400 naming `writes[index]` and its faulty field.
 */
export function parseWriteItem(item: unknown, index: number, nowMicros: number): Change {
  const at = `writes[${index}]`;
  const op = readOp(item, at);
  const w = item as Record<string, unknown>;
  const name = (key: 'role' | 'permission' | 'user'): string => readName(own(w, key), `${at}.${key}`);
  switch (op) {
    case 'role.create':
      return { op, role: name('role'), description: readDescription(own(w, 'description'), `${at}.description`) };
    case 'role.delete':
      return { op, role: name('role') };
    case 'permission.grant':
      return { op, role: name('role'), permission: name('permission'), ...readWindowKeys(w, nowMicros, `${at}.`) };
    case 'permission.revoke':
      return { op, role: name('role'), permission: name('permission') };
    case 'membership.add':
      return { op, user: name('user'), role: name('role'), ...readWindowKeys(w, nowMicros, `${at}.`) };
    case 'membership.remove':
      return { op, user: name('user'), role: name('role') };
  }
}

/** An item of a write request as read: the change it asks, or why it is refused. */
export type WriteItem = { readonly change: Change; readonly error?: undefined } | { readonly change?: undefined; readonly error: AppError };

/**
 * Every item of a write request, each read on its own (for `/api/dry-run`, which answers each
 * item's status): throws only for the body as a whole ({@link parseWriteList}).
 */
export function parseWriteItems(body: unknown, nowMicros: number): WriteItem[] {
  return parseWriteList(body).map((item, index): WriteItem => {
    try {
      return { change: parseWriteItem(item, index, nowMicros) };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return { error: err };
    }
  });
}

/**
 * The changes of a write request, in order (for `/api/writes`, which refuses the whole batch at
 * its first bad item): throws a 400 for the body as a whole, or naming the first bad item.
 */
export function parseWrites(body: unknown, nowMicros: number): Change[] {
  return parseWriteList(body).map((item, index) => parseWriteItem(item, index, nowMicros));
}
