/**
 * Timed access, atomic batches and previews as the typed client speaks them (docs/api.md §12):
 * windows given as dates or RFC 3339 strings, and the answers of GET /api/windows,
 * POST /api/writes and POST /api/dry-run.
 */
import type { Schemas, Windowed } from './types.ts';

/** A time: a Date (sent as its UTC ISO form), or an RFC 3339 string sent as written. */
export type Time = Date | string;

/** The window of a grant or membership: from `notBefore` (on) until `expiresAt` (off). */
export interface WindowInput {
  notBefore?: Time;
  expiresAt?: Time;
}

/** `T` (each member of a union) with its window bounds given as times. */
type WithTimes<T> = T extends unknown ? { [K in keyof T]: K extends 'not_before' | 'expires_at' ? Time : T[K] } : never;

/** One write of a batch, keyed as on the wire (docs/api.md §12.2: `WriteItem`); its times may be dates. */
export type BatchWrite = WithTimes<Schemas['WriteItem']>;

/** An edge with a boundary still ahead (GET /api/windows). */
export type WindowEntry = Schemas['Window'];

/** The answer of an atomic batch: each item's data as its own route answers it, all at `revision`. */
export type BatchApplied = Schemas['WritesDone'];

/**
 * The answer of a preview (POST /api/dry-run): `revision` is the one judged (send it as `ifMatch`
 * to apply exactly this); per item, its own route's status (424 after a failure).
 */
export type Preview = Schemas['DryRunResult'];

/** A time as sent: a Date as its UTC ISO form (throws RangeError on an invalid Date), a string as is. */
export function rfc3339(time: Time): string {
  return typeof time === 'string' ? time : time.toISOString();
}

/** The body `{not_before?, expires_at?}` of a window (empty when neither bound is given). */
export function windowBody(window: WindowInput): Windowed {
  const body: Windowed = {};
  if (window.notBefore !== undefined) body.not_before = rfc3339(window.notBefore);
  if (window.expiresAt !== undefined) body.expires_at = rfc3339(window.expiresAt);
  return body;
}

/** The body of /api/writes and /api/dry-run: each item as given, its times as sent. */
export function batchBody(batch: readonly BatchWrite[]): { writes: unknown[] } {
  return {
    writes: batch.map((item) => {
      if (item.op !== 'permission.grant' && item.op !== 'membership.add') return item;
      const { not_before, expires_at, ...rest } = item;
      const sent: Record<string, unknown> = { ...rest };
      if (not_before !== undefined) sent.not_before = rfc3339(not_before);
      if (expires_at !== undefined) sent.expires_at = rfc3339(expires_at);
      return sent;
    }),
  };
}

/** The `If-Match` value of a revision: an entity tag, `"R"`, or `*`. */
export function ifMatchHeader(revision: number | '*'): string {
  return revision === '*' ? '*' : `"${revision}"`;
}
