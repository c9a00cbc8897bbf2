/**
 * The If-Match header of writes (docs/api.md §12.4): absent, `*`, or one strong quoted revision;
 * anything else a 400 ERR_VALIDATION_HEADER naming If-Match.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AppError } from '../../../src/errors/index.ts';
import { parseIfMatch } from '../../../src/http/input/if-match.ts';

function refused(header: string): void {
  assert.throws(
    () => parseIfMatch(header),
    (err: unknown) => {
      assert.ok(err instanceof AppError, JSON.stringify(header));
      assert.equal(err.status, 400);
      assert.equal(err.code, 'ERR_VALIDATION_HEADER');
      assert.match(err.message, /^If-Match /);
      return true;
    },
    JSON.stringify(header),
  );
}

test('absent, any, or one revision', () => {
  assert.equal(parseIfMatch(undefined), undefined);
  assert.equal(parseIfMatch(''), undefined);
  assert.equal(parseIfMatch('*'), 'any');
  assert.equal(parseIfMatch(' * '), 'any');
  assert.equal(parseIfMatch('"0"'), 0);
  assert.equal(parseIfMatch('"7"'), 7);
  assert.equal(parseIfMatch('\t"42" '), 42);
  assert.equal(parseIfMatch(`"${Number.MAX_SAFE_INTEGER}"`), Number.MAX_SAFE_INTEGER);
});

test('weak tags, unquoted values, lists and junk are 400 naming If-Match', () => {
  for (const header of [
    'W/"7"',
    'w/"7"',
    '7',
    '"7',
    '7"',
    "'7'",
    '""',
    '"-1"',
    '"+7"',
    '"7.0"',
    '"1e3"',
    '"0x10"',
    '"007"',
    '" 7"',
    '"7 "',
    '"7", "8"',
    '"7","8"',
    '*, "7"',
    '"7" *',
    '**',
    '"*"',
    '"abc"',
    '"\u0667"',
    '"\uff17"',
    '"7"\u00a0',
    '\u00e9',
    '   ',
    'null',
  ]) {
    refused(header);
  }
});

test('a revision beyond any a client reaches is well-formed and matches none', () => {
  assert.equal(parseIfMatch(`"${Number.MAX_SAFE_INTEGER + 1}"`), Number.MAX_SAFE_INTEGER);
  assert.equal(parseIfMatch('"99999999999999999999"'), Number.MAX_SAFE_INTEGER);
});

test('every safe revision reads back from its tag', () => {
  fc.assert(
    fc.property(fc.maxSafeNat(), (revision) => {
      assert.equal(parseIfMatch(`"${revision}"`), revision);
      refused(`W/"${revision}"`);
      refused(String(revision));
    }),
    { numRuns: 5_000 },
  );
});

test('random values are a revision, any, absent or a 400, never anything else', () => {
  const near = fc.array(fc.constantFrom(...'0123456789"*W/, \t-+e.\u00e9'), { maxLength: 20 }).map((cs) => cs.join(''));
  fc.assert(
    fc.property(fc.oneof(near, fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 })), (header) => {
      let parsed;
      try {
        parsed = parseIfMatch(header);
      } catch (err) {
        assert.ok(err instanceof AppError && err.code === 'ERR_VALIDATION_HEADER', String(err));
        return;
      }
      if (parsed === undefined) assert.equal(header, '');
      else if (parsed === 'any') assert.equal(header.trim(), '*');
      else assert.equal(header.replace(/^[ \t]+|[ \t]+$/g, ''), `"${parsed}"`);
    }),
    { numRuns: 10_000 },
  );
});
