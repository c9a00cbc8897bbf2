import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isName, NAME_RE } from '../../../src/authz/names.ts';
import { NameTable } from '../../../src/authz/name-table.ts';

// isName is the hot path's form of the published pattern: they must never disagree.
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:@+|-%/ é\u0000\u00ff\u0100\ud83d';

test('isName answers as the published pattern on names of the allowed characters and around them', () => {
  const near = fc.array(fc.constantFrom(...alphabet), { minLength: 0, maxLength: 140 }).map((cs) => cs.join(''));
  fc.assert(
    fc.property(fc.oneof(near, fc.string({ maxLength: 140 }), fc.string({ unit: 'grapheme', maxLength: 20 })), (s) => {
      assert.equal(isName(s), NAME_RE.test(s), JSON.stringify(s));
    }),
    { numRuns: 20_000 },
  );
});

test('isName at the length limits', () => {
  assert.equal(isName(''), false);
  assert.equal(isName('a'), true);
  assert.equal(isName('a'.repeat(128)), true);
  assert.equal(isName('a'.repeat(129)), false);
  assert.equal(isName('user@example.com|svc:read+x_y.z-1'), true);
});

test('a name table finds a spelled name exactly where it finds the string', () => {
  const table = new NameTable<number>();
  const names = fc.sample(
    fc.array(fc.constantFrom(...'abcXYZ019_.:@+|-'), { minLength: 1, maxLength: 40 }).map((cs) => cs.join('')),
    3_000,
  );
  names.slice(0, 1_500).forEach((n) => table.intern(n));
  const spelling = { codes: new Uint8Array(128), length: 0 };
  for (const n of names) {
    for (let k = 0; k < n.length; k++) spelling.codes[k] = n.charCodeAt(k);
    spelling.length = n.length;
    assert.equal(table.idOf(spelling), table.id(n), n);
  }
});
