/**
 * Instants of §12.1: RFC 3339 date-times read to exact microseconds (anything else refused,
 * never thrown), and microseconds written back in the §2 form plus `Z`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { daysFromCivil, formatInstant, parseInstant } from '../../../src/time/instant.ts';

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

test('date-times in UTC, with offsets, fractions and lower-case t and z', () => {
  const cases: Array<[string, number]> = [
    ['1970-01-01T00:00:00Z', 0],
    ['1970-01-01T00:00:00.000001Z', 1],
    ['1969-12-31T23:59:59.999999Z', -1],
    ['2026-12-01T09:00:00Z', Date.UTC(2026, 11, 1, 9) * 1000],
    ['2026-12-01t09:00:00z', Date.UTC(2026, 11, 1, 9) * 1000],
    ['2026-12-01T11:00:00+02:00', Date.UTC(2026, 11, 1, 9) * 1000],
    ['2026-12-01T09:00:00-00:00', Date.UTC(2026, 11, 1, 9) * 1000],
    ['2026-12-01T00:30:00-09:30', Date.UTC(2026, 11, 1, 10) * 1000],
    ['2026-12-01T09:00:00.5Z', Date.UTC(2026, 11, 1, 9) * 1000 + 500_000],
    ['2026-12-01T09:00:00.123456+00:00', Date.UTC(2026, 11, 1, 9) * 1000 + 123_456],
    ['2026-01-01T00:00:00+23:59', Date.UTC(2025, 11, 31, 0, 1) * 1000],
    ['2024-02-29T12:00:00Z', Date.UTC(2024, 1, 29, 12) * 1000],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29) * 1000],
    ['2255-06-05T23:47:34.740991Z', Number.MAX_SAFE_INTEGER],
  ];
  for (const [text, micros] of cases) assert.equal(parseInstant(text), micros, text);
});

test('anything else is refused: other syntax, out-of-range fields, leap seconds, seven digits', () => {
  const refused = [
    '',
    '2026-12-01',
    '2026-12-01T09:00:00',
    '2026-12-01T09:00Z',
    '2026-12-01 09:00:00Z',
    '2026-12-01T09:00:00.Z',
    '2026-12-01T09:00:00.1234567Z',
    '2026-12-01T09:00:00,5Z',
    '2026-12-01T09:00:00+0200',
    '2026-12-01T09:00:00+02',
    '2026-12-01T09:00:00+2:00',
    '2026-12-01T09:00:00Z+02:00',
    '2026-12-01T09:00:00+02:00Z',
    '2026-12-01T09:00:00UTC',
    '2026-12-01T09:00:00 Z',
    ' 2026-12-01T09:00:00Z',
    '2026-12-01T09:00:00Z ',
    '2026-12-01T09:00:00Z\n',
    '+2026-12-01T09:00:00Z',
    '-2026-12-01T09:00:00Z',
    '02026-12-01T09:00:00Z',
    '26-12-01T09:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-01T00:00:00Z',
    '2026-12-00T00:00:00Z',
    '2026-12-32T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-12-01T24:00:00Z',
    '2026-12-01T23:60:00Z',
    '2026-12-01T23:59:60Z',
    '2016-12-31T23:59:60Z',
    '2026-12-01T09:00:00+24:00',
    '2026-12-01T09:00:00+02:60',
    '\uff12026-12-01T09:00:00Z',
    '2026-12-01T09:00:00.\u0661Z',
    '2026-12-01T09:00:00.-1Z',
    '2026-12-01T09:00:00.1e3Z',
  ];
  for (const text of refused) assert.equal(parseInstant(text), undefined, JSON.stringify(text));
});

test('microseconds are written in the §2 form plus Z, UTC, six fractional digits', () => {
  assert.equal(formatInstant(0), '1970-01-01T00:00:00.000000Z');
  assert.equal(formatInstant(1), '1970-01-01T00:00:00.000001Z');
  assert.equal(formatInstant(-1), '1969-12-31T23:59:59.999999Z');
  assert.equal(formatInstant(Date.UTC(2026, 11, 1, 9) * 1000 + 250_000), '2026-12-01T09:00:00.250000Z');
  assert.equal(formatInstant(Number.MAX_SAFE_INTEGER), '2255-06-05T23:47:34.740991Z');
  assert.equal(formatInstant(Number.MIN_SAFE_INTEGER), '1684-07-28T00:12:25.259009Z');
  for (const bad of [0.5, NaN, Infinity, Number.MAX_SAFE_INTEGER + 1]) assert.throws(() => formatInstant(bad), RangeError, String(bad));
});

test('every safe count of microseconds reads back the same from its text', () => {
  fc.assert(
    fc.property(
      fc.maxSafeInteger().filter((n) => n >= Number.MIN_SAFE_INTEGER),
      (micros) => {
        const text = formatInstant(micros);
        assert.match(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
        assert.equal(parseInstant(text), micros, text);
      },
    ),
    { numRuns: 20_000 },
  );
});

test('the text agrees with Date to the millisecond, and around the epoch', () => {
  fc.assert(
    fc.property(fc.integer({ min: -8_000_000_000_000, max: 8_000_000_000_000 }), fc.integer({ min: 0, max: 999 }), (ms, extra) => {
      const text = formatInstant(ms * 1000 + extra);
      assert.equal(text.slice(0, 23), new Date(ms).toISOString().slice(0, 23));
      assert.equal(text.slice(23), `${pad(extra, 3)}Z`);
    }),
    { numRuns: 10_000 },
  );
});

/** A valid date-time, built from fields, with what it means as Date.UTC reckons it (years 100 and up). */
const dateTime = fc
  .record({
    year: fc.integer({ min: 100, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 6 }),
    zone: fc.oneof(
      fc.constantFrom('Z', 'z'),
      fc.record({ sign: fc.constantFrom('+', '-'), h: fc.integer({ min: 0, max: 23 }), m: fc.integer({ min: 0, max: 59 }) }),
    ),
    t: fc.constantFrom('T', 't'),
  })
  .filter(
    (f) => f.day <= new Date(Date.UTC(2000, f.month, 0)).getUTCDate() && (f.month !== 2 || f.day < 29 || new Date(Date.UTC(f.year, 1, 29)).getUTCDate() === 29),
  );

test('any valid date-time means what Date.UTC says, to the microsecond', () => {
  fc.assert(
    fc.property(dateTime, (f) => {
      const zone = typeof f.zone === 'string' ? f.zone : `${f.zone.sign}${pad(f.zone.h, 2)}:${pad(f.zone.m, 2)}`;
      const fraction = f.fraction === '' ? '' : `.${f.fraction}`;
      const text = `${pad(f.year, 4)}-${pad(f.month, 2)}-${pad(f.day, 2)}${f.t}${pad(f.hour, 2)}:${pad(f.minute, 2)}:${pad(f.second, 2)}${fraction}${zone}`;
      const offsetMs = typeof f.zone === 'string' ? 0 : (f.zone.sign === '-' ? -1 : 1) * (f.zone.h * 60 + f.zone.m) * 60_000;
      const ms = Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second) - offsetMs;
      const micros = parseInstant(text);
      assert.notEqual(micros, undefined, text);
      // Far from 1970 the count is the nearest number; near it (and within the safe range) exact.
      const expected = ms * 1000 + Number(f.fraction.padEnd(6, '0'));
      if (Number.isSafeInteger(expected)) assert.equal(micros, expected, text);
      else assert.ok(Math.abs((micros as number) - expected) <= Math.abs(expected) * Number.EPSILON, text);
    }),
    { numRuns: 20_000 },
  );
});

test('days from a civil date agree with Date.UTC, leap years included', () => {
  fc.assert(
    fc.property(fc.integer({ min: -3_000_000, max: 3_000_000 }), (days) => {
      const d = new Date(days * 86_400_000);
      if (d.getUTCFullYear() < 100) return;
      assert.equal(daysFromCivil(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()), days);
    }),
    { numRuns: 10_000 },
  );
});

test('garbage is refused, never thrown, and only date-time shapes are read', () => {
  const near = fc.array(fc.constantFrom(...'0123456789-:T tZz.+\u0000\u00e9'), { maxLength: 40 }).map((cs) => cs.join(''));
  fc.assert(
    fc.property(fc.oneof(near, fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 30 })), (s) => {
      const micros = parseInstant(s);
      if (micros === undefined) return;
      assert.ok(Number.isInteger(micros));
      assert.match(s, /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})$/);
    }),
    { numRuns: 20_000 },
  );
});
