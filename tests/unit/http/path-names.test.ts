import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { decodeName, SpelledName } from '../../../src/http/input/path-names.ts';

/** decodeName's verdict on a raw path segment: the name, or undefined when it refuses it. */
function decoded(raw: string): string | undefined {
  try {
    return decodeName('user', raw);
  } catch {
    return undefined;
  }
}

// The hot path decodes has_permission's names in place; it must accept exactly what decodeName
// accepts, and decode it to the same name.
test('a spelled name accepts and decodes exactly what decodeName does', () => {
  const spelled = new SpelledName();
  const units = [
    'a',
    'Z',
    '0',
    '_',
    '.',
    ':',
    '@',
    '+',
    '|',
    '-',
    '%',
    '%40',
    '%3A',
    '%3a',
    '%7C',
    '%25',
    '%2',
    '%zz',
    '%C3%A9',
    '%E2%82',
    '%20',
    '%00',
    '/',
    ' ',
    'é',
    '\u0100',
  ];
  const raw = fc.array(fc.constantFrom(...units), { minLength: 0, maxLength: 50 }).map((xs) => xs.join(''));
  fc.assert(
    fc.property(fc.oneof(raw, fc.string({ maxLength: 140 })), (s) => {
      const want = decoded(s);
      const ok = spelled.read(s);
      assert.equal(ok, want !== undefined, JSON.stringify(s));
      if (ok) assert.equal(spelled.text(), want);
    }),
    { numRuns: 20_000 },
  );
});

test('a spelled name at the length limit, encoded or not', () => {
  const spelled = new SpelledName();
  assert.equal(spelled.read('a'.repeat(128)), true);
  assert.equal(spelled.read('a'.repeat(129)), false);
  assert.equal(spelled.read('%40'.repeat(128)), true);
  assert.equal(spelled.text(), '@'.repeat(128));
  assert.equal(spelled.read('%40'.repeat(129)), false);
  assert.equal(spelled.read(''), false);
});
