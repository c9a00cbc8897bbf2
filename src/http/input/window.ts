import type { Window } from '../../authz/changes.ts';
import { appError, type AppError } from '../../errors/index.ts';
import { formatInstant, parseInstant } from '../../time/instant.ts';

/**
 * The window of a grant or a membership (docs/api.md §12.1), from the body of
 * `POST`/`PUT /api/permission/{role}/{permission}` and `/api/membership/{user}/{role}`, or from an
 * item of `/api/writes`. Errors are 400 ERR_VALIDATION_BODY worded as the body validator words
 * its own (`not_before must be a string`, `body has an unknown key 'x'`), so one route never
 * speaks two ways.
 */

const WINDOW_KEYS = ['not_before', 'expires_at'] as const;

/** How far ahead a bound may be: ten calendar years. */
const MAX_YEARS_AHEAD = 10;

const INSTANT_RULE = 'an RFC 3339 date-time with Z or an offset and at most 6 fractional digits, as 2026-12-01T09:00:00Z';

/** A 400 about the body, worded by the caller. */
export function bodyError(detail: string): AppError {
  return appError('ERR_VALIDATION_BODY', detail);
}

/** The article the body validator puts before a JSON type: `an object`, `a string`. */
export function mustBe(field: string, type: 'object' | 'string' | 'array'): AppError {
  return bodyError(`${field} must be ${type === 'object' || type === 'array' ? 'an' : 'a'} ${type}`);
}

/** Whether `value` is what JSON.parse makes of a JSON object. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `obj[key]` when `obj` has it as its own key (never a property of Object.prototype). */
export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** The same instant ten calendar years later (29 February goes to 1 March), in microseconds. */
export function tenYearsAfter(nowMicros: number): number {
  const ms = Math.floor(nowMicros / 1000);
  const later = new Date(ms);
  later.setUTCFullYear(later.getUTCFullYear() + MAX_YEARS_AHEAD);
  return later.getTime() * 1000 + (nowMicros - ms * 1000);
}

/** One bound: absent, or an instant in microseconds; `field` is its name as the error says it. */
function readBound(value: unknown, field: string, latest: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw mustBe(field, 'string');
  const micros = parseInstant(value);
  if (micros === undefined) throw bodyError(`${field} must be ${INSTANT_RULE}`);
  if (micros > latest) throw bodyError(`${field} must be at most ${MAX_YEARS_AHEAD} years ahead (${formatInstant(latest)})`);
  return micros;
}

/**
 * The window named by the `not_before` and `expires_at` keys of `obj`, checked against
 * `nowMicros`, the time the write commits. `prefix` goes before each key in the errors
 * (`writes[3].`); other keys of `obj` are the caller's business. Throws a 400 naming the field
 * when a bound is not a string, not an instant, more than ten years ahead, when `not_before` is
 * before the epoch, or when `expires_at` is not after now or not after `not_before`. Every bound
 * returned lies between the epoch and ten years ahead: a safe integer, exact.
 */
export function readWindowKeys(obj: Record<string, unknown>, nowMicros: number, prefix = ''): Window {
  const latest = tenYearsAfter(nowMicros);
  const notBefore = readBound(own(obj, 'not_before'), `${prefix}not_before`, latest);
  const expiresAt = readBound(own(obj, 'expires_at'), `${prefix}expires_at`, latest);
  // A count of microseconds is exact back to 1685 only; a start before the epoch is no start anyway.
  if (notBefore !== undefined && notBefore < 0) throw bodyError(`${prefix}not_before must not be before 1970-01-01T00:00:00Z`);
  if (expiresAt === undefined) return notBefore === undefined ? {} : { notBefore };
  if (expiresAt <= nowMicros) throw bodyError(`${prefix}expires_at must be in the future (now is ${formatInstant(nowMicros)})`);
  if (notBefore === undefined) return { expiresAt };
  if (expiresAt <= notBefore) throw bodyError(`${prefix}expires_at must be after not_before`);
  return { notBefore, expiresAt };
}

/**
 * The window asked by the body of a grant or membership write; undefined (a permanent edge) when
 * the body is absent (empty) or names no bound. Throws a 400 naming the field, as
 * {@link readWindowKeys}, or naming the body when it is not an object or has another key.
 */
export function parseWindow(body: unknown, nowMicros: number): Window | undefined {
  if (body === undefined) return undefined;
  if (!isJsonObject(body)) throw bodyError('body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!(WINDOW_KEYS as readonly string[]).includes(key)) throw bodyError(`body has an unknown key '${key}'`);
  }
  const w = readWindowKeys(body, nowMicros);
  return w.notBefore === undefined && w.expiresAt === undefined ? undefined : w;
}
