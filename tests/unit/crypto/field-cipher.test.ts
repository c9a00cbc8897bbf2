import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DecryptionError, FieldCipher } from '../../../src/crypto/field-cipher.ts';

// docs/operations.md §7: the vectors for key `test-encryption-password`.
const VECTORS: ReadonlyArray<readonly [string, string]> = [
  ['alice', 'INCKN6LjRf9yFtqDdMjIYNcuVYo4'],
  ['read', 'SxZObua4nogpuK/3UVSX1+nbQis='],
  ['Administrators', '+pqDtMe+7mGL9y9aDLasAc0e8VNREmtF1+faR5KY'],
  ['alice@example.com', 'kYgStcTbc5lByvyhpryvr6KGmerBq9RYCJXz9ii/DDfi'],
];

const cipher = new FieldCipher('test-encryption-password');

test('the contract vectors encrypt and decrypt exactly', () => {
  for (const [plain, stored] of VECTORS) {
    assert.equal(cipher.encrypt(plain), stored, plain);
    assert.equal(cipher.decrypt(stored), plain, stored);
  }
});

test('encryption is deterministic and round-trips any text, the empty string and U+0000 included', () => {
  for (const text of ['', 'x', 'a\u0000b', 'é漢字🙂', 'd'.repeat(1024)]) {
    assert.equal(cipher.encrypt(text), cipher.encrypt(text));
    assert.equal(cipher.decrypt(cipher.encrypt(text)), text);
  }
});

test('decryption fails closed: another key, a flipped bit, a cut or a bad encoding', () => {
  const stored = cipher.encrypt('Administrators');
  const other = new FieldCipher('another-password');
  assert.notEqual(other.fingerprint, cipher.fingerprint);
  assert.throws(() => other.decrypt(stored), DecryptionError);
  const raw = Buffer.from(stored, 'base64');
  for (const i of [0, 15, 16, raw.length - 1]) {
    const flipped = Buffer.from(raw);
    flipped[i] = (flipped[i] as number) ^ 1;
    assert.throws(() => cipher.decrypt(flipped.toString('base64')), DecryptionError, `byte ${i}`);
  }
  assert.throws(() => cipher.decrypt(raw.subarray(0, 20).toString('base64')), DecryptionError);
  assert.throws(() => cipher.decrypt(raw.subarray(0, 10).toString('base64')), DecryptionError);
  assert.throws(() => cipher.decrypt(`${stored}!`), DecryptionError);
  assert.throws(() => cipher.decrypt('Administrators'), DecryptionError);
});

test('the fingerprint depends on the key only', () => {
  assert.equal(new FieldCipher('test-encryption-password').fingerprint, cipher.fingerprint);
  assert.match(cipher.fingerprint, /^[0-9a-f]{64}$/);
});
