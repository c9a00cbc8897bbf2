/**
 * The window body of grant and membership writes (docs/api.md §12.1): bounds read to exact
 * microseconds, and every refusal a 400 ERR_VALIDATION_BODY naming its field, worded as the body
 * validator words the same fault.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AppError } from '../../../src/errors/index.ts';
import { parseWindow, readWindowKeys, tenYearsAfter } from '../../../src/http/input/window.ts';
import { formatInstant, parseInstant } from '../../../src/time/instant.ts';

const at = (text: string): number => parseInstant(text) as number;
const NOW = at('2026-11-22T10:51:50.914928Z');

/** The 400 that `run` throws: its text must match `detail`. */
function refused(run: () => unknown, detail: RegExp | string, what = String(detail)): void {
  assert.throws(
    run,
    (err: unknown) => {
      assert.ok(err instanceof AppError, what);
      assert.equal(err.status, 400, what);
      assert.equal(err.code, 'ERR_VALIDATION_BODY', what);
      if (typeof detail === 'string') assert.equal(err.message, detail, what);
      else assert.match(err.message, detail, what);
      return true;
    },
    what,
  );
}

test('no body, an empty object, one bound or both', () => {
  // No bound is a permanent edge, as windowOf says of a change without one.
  assert.equal(parseWindow(undefined, NOW), undefined);
  assert.equal(parseWindow({}, NOW), undefined);
  assert.deepEqual(parseWindow({ not_before: '2026-12-01T09:00:00Z' }, NOW), { notBefore: at('2026-12-01T09:00:00Z') });
  assert.deepEqual(parseWindow({ expires_at: '2026-12-01T11:00:00.5+02:00' }, NOW), { expiresAt: at('2026-12-01T09:00:00.5Z') });
  assert.deepEqual(parseWindow({ not_before: '2026-12-01T09:00:00Z', expires_at: '2026-12-31T17:00:00.000001Z' }, NOW), {
    notBefore: at('2026-12-01T09:00:00Z'),
    expiresAt: at('2026-12-31T17:00:00.000001Z'),
  });
  // A start already past is accepted (the edge is active at once); so is one at the epoch.
  assert.deepEqual(parseWindow({ not_before: '2001-01-01T00:00:00Z' }, NOW), { notBefore: at('2001-01-01T00:00:00Z') });
  assert.deepEqual(parseWindow({ not_before: '1970-01-01T00:00:00Z' }, NOW), { notBefore: 0 });
});

test('a body that is not an object, an unknown key, a bound that is not a string', () => {
  for (const body of [null, [], [{}], 'x', '', 0, 1.5, true, false]) refused(() => parseWindow(body, NOW), 'body must be a JSON object', JSON.stringify(body));
  for (const [body, key] of [
    [{ x: 1 }, 'x'],
    [{ Not_before: '2026-12-01T09:00:00Z' }, 'Not_before'],
    [{ not_before: '2026-12-01T09:00:00Z', description: 'a' }, 'description'],
    [JSON.parse('{"__proto__":{"not_before":"2026-12-01T09:00:00Z"}}') as object, '__proto__'],
    [{ constructor: 'x' }, 'constructor'],
  ] as const) {
    refused(() => parseWindow(body, NOW), `body has an unknown key '${key}'`, JSON.stringify(body));
  }
  for (const field of ['not_before', 'expires_at']) {
    for (const value of [null, 1796115600, true, {}, ['2026-12-01T09:00:00Z']]) {
      refused(() => parseWindow({ [field]: value }, NOW), `${field} must be a string`, `${field}: ${JSON.stringify(value)}`);
    }
  }
});

test('a malformed instant is 400 naming its field and the rule', () => {
  for (const field of ['not_before', 'expires_at']) {
    for (const text of ['', 'tomorrow', '2026-12-01', '2026-12-01T09:00:00', '2026-12-01T09:00:00.1234567Z', '2026-02-30T09:00:00Z', '2026-12-31T23:59:60Z']) {
      refused(() => parseWindow({ [field]: text }, NOW), new RegExp(`^${field} must be an RFC 3339 date-time`), `${field}: ${text}`);
    }
  }
});

test('expires_at must be after now and after not_before', () => {
  refused(() => parseWindow({ expires_at: formatInstant(NOW) }, NOW), /^expires_at must be in the future/);
  refused(() => parseWindow({ expires_at: '2001-01-01T00:00:00Z' }, NOW), /^expires_at must be in the future/);
  refused(() => parseWindow({ expires_at: '1000-01-01T00:00:00Z' }, NOW), /^expires_at must be in the future/);
  assert.deepEqual(parseWindow({ expires_at: formatInstant(NOW + 1) }, NOW), { expiresAt: NOW + 1 });
  const start = '2026-12-01T09:00:00Z';
  refused(() => parseWindow({ not_before: start, expires_at: start }, NOW), 'expires_at must be after not_before');
  refused(() => parseWindow({ not_before: start, expires_at: '2026-12-01T10:00:00+02:00' }, NOW), 'expires_at must be after not_before');
  assert.deepEqual(parseWindow({ not_before: start, expires_at: '2026-12-01T09:00:00.000001Z' }, NOW), {
    notBefore: at(start),
    expiresAt: at(start) + 1,
  });
});

test('neither bound more than ten calendar years ahead, to the microsecond', () => {
  const limit = tenYearsAfter(NOW);
  assert.equal(formatInstant(limit), '2036-11-22T10:51:50.914928Z');
  for (const field of ['not_before', 'expires_at']) {
    assert.deepEqual(parseWindow({ [field]: formatInstant(limit) }, NOW), field === 'not_before' ? { notBefore: limit } : { expiresAt: limit });
    for (const text of [formatInstant(limit + 1), '2100-01-01T00:00:00Z', '9999-12-31T23:59:59.999999Z']) {
      refused(() => parseWindow({ [field]: text }, NOW), new RegExp(`^${field} must be at most 10 years ahead`), `${field}: ${text}`);
    }
  }
  // From a 29 February, ten years later is the 1 March (that year has no 29 February).
  assert.equal(formatInstant(tenYearsAfter(at('2028-02-29T12:00:00.000007Z'))), '2038-03-01T12:00:00.000007Z');
  assert.equal(formatInstant(tenYearsAfter(at('2024-02-29T00:00:00Z'))), '2034-03-01T00:00:00.000000Z');
});

test('a start before the epoch is refused (a count that far back is not exact)', () => {
  refused(() => parseWindow({ not_before: '1969-12-31T23:59:59.999999Z' }, NOW), /^not_before must not be before 1970-01-01T00:00:00Z/);
  refused(() => parseWindow({ not_before: '0001-01-01T00:00:00Z' }, NOW), /^not_before must not be before/);
});

test('with a prefix, the errors name the item field', () => {
  refused(() => readWindowKeys({ expires_at: 'x' }, NOW, 'writes[3].'), /^writes\[3\]\.expires_at must be an RFC 3339/);
  refused(() => readWindowKeys({ not_before: 1 }, NOW, 'writes[0].'), 'writes[0].not_before must be a string');
  refused(
    () => readWindowKeys({ not_before: '2027-01-01T00:00:00Z', expires_at: '2026-12-01T00:00:00Z' }, NOW, 'writes[7].'),
    'writes[7].expires_at must be after not_before',
  );
  // The other keys of an item are its reader's business.
  assert.deepEqual(readWindowKeys({ op: 'membership.add', user: 'u', role: 'r' }, NOW, 'writes[1].'), {});
});

test('accepted windows read back from their wire form, exactly', () => {
  const inRange = fc.integer({ min: 0, max: tenYearsAfter(NOW) });
  fc.assert(
    fc.property(fc.option(inRange, { nil: undefined }), fc.option(inRange, { nil: undefined }), (notBefore, expiresAt) => {
      const body = {
        ...(notBefore === undefined ? {} : { not_before: formatInstant(notBefore) }),
        ...(expiresAt === undefined ? {} : { expires_at: formatInstant(expiresAt) }),
      };
      let w;
      try {
        w = parseWindow(body, NOW);
      } catch (err) {
        assert.ok(err instanceof AppError && err.status === 400);
        assert.ok(expiresAt !== undefined && (expiresAt <= NOW || (notBefore !== undefined && expiresAt <= notBefore)));
        return;
      }
      const asked = { ...(notBefore === undefined ? {} : { notBefore }), ...(expiresAt === undefined ? {} : { expiresAt }) };
      assert.deepEqual(w, notBefore === undefined && expiresAt === undefined ? undefined : asked);
    }),
    { numRuns: 5_000 },
  );
});

test('random bodies are a window or a 400, never anything else', () => {
  const instantish = fc.oneof(
    fc.integer({ min: -2e15, max: 3e15 }).map((n) => formatInstant(n)),
    fc.array(fc.constantFrom(...'0123456789-:TZ.+'), { maxLength: 32 }).map((cs) => cs.join('')),
    fc.string({ maxLength: 30 }),
  );
  const bound = fc.oneof(instantish, fc.jsonValue({ maxDepth: 2 }));
  const body = fc.oneof(
    fc.record({ not_before: bound, expires_at: bound }, { requiredKeys: [] }),
    fc.dictionary(fc.oneof(fc.constantFrom('not_before', 'expires_at', '__proto__'), fc.string({ maxLength: 12 })), bound, { maxKeys: 4 }),
    fc.jsonValue({ maxDepth: 3 }),
  );
  fc.assert(
    fc.property(body, (b) => {
      try {
        const w = parseWindow(b, NOW);
        for (const bound of [w?.notBefore, w?.expiresAt]) if (bound !== undefined) assert.ok(Number.isSafeInteger(bound) && bound >= 0);
      } catch (err) {
        assert.ok(err instanceof AppError, String(err));
        assert.equal(err.code, 'ERR_VALIDATION_BODY');
      }
    }),
    { numRuns: 10_000 },
  );
});
