import { createCipheriv, createDecipheriv, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';

/** docs/operations.md §7: the derivation every instance sharing a database must agree on. */
const SALT = 'auth_deterministic_encryption_salt_v1';
const ITERATIONS = 100_000;
const IV_BYTES = 16;
/** What the fingerprint authenticates: a fixed label, so it reveals nothing about any name. */
const FINGERPRINT_LABEL = 'rbac-gateway key fingerprint v1';

/** A field that failed to decrypt: wrong key or tampering. Never answered with garbage instead. */
export class DecryptionError extends Error {
  constructor() {
    super('a stored field does not decrypt with the configured AUTH_ENCRYPTION_KEY (wrong key or tampered data)');
    this.name = 'DecryptionError';
  }
}

/**
 * Deterministic field encryption (docs/operations.md §7): equal plaintexts give equal stored texts, so
 * equality look-ups still run in the database. AES-256-CTR with a synthetic IV, the first 16
 * bytes of HMAC-SHA256 of the plaintext; decryption recomputes that IV and refuses a mismatch.
 * Constructing one runs PBKDF2 (100,000 rounds): do it off the event loop (a pool thread).
 */
export class FieldCipher {
  readonly #aesKey: Buffer;
  readonly #hmacKey: Buffer;
  /** Hex HMAC of a fixed label: tells whether a database was written with this key. */
  readonly fingerprint: string;

  constructor(password: string) {
    const derived = pbkdf2Sync(Buffer.from(password, 'utf8'), SALT, ITERATIONS, 64, 'sha256');
    this.#aesKey = derived.subarray(0, 32);
    this.#hmacKey = derived.subarray(32, 64);
    this.fingerprint = createHmac('sha256', this.#hmacKey).update(FINGERPRINT_LABEL).digest('hex');
  }

  encrypt(plaintext: string): string {
    const data = Buffer.from(plaintext, 'utf8');
    const iv = this.#iv(data);
    const cipher = createCipheriv('aes-256-ctr', this.#aesKey, iv);
    return Buffer.concat([iv, cipher.update(data), cipher.final()]).toString('base64');
  }

  /** Throws {@link DecryptionError} unless `stored` is exactly what {@link encrypt} makes. */
  decrypt(stored: string): string {
    const raw = Buffer.from(stored, 'base64');
    // Buffer.from ignores bad characters: re-encoding must give the stored text back exactly.
    if (raw.length < IV_BYTES || raw.toString('base64') !== stored) throw new DecryptionError();
    const iv = raw.subarray(0, IV_BYTES);
    const decipher = createDecipheriv('aes-256-ctr', this.#aesKey, iv);
    const data = Buffer.concat([decipher.update(raw.subarray(IV_BYTES)), decipher.final()]);
    if (!timingSafeEqual(this.#iv(data), iv)) throw new DecryptionError();
    const text = data.toString('utf8');
    // Invalid UTF-8 would decode lossily: a plaintext that does not round-trip was never stored.
    if (!Buffer.from(text, 'utf8').equals(data)) throw new DecryptionError();
    return text;
  }

  #iv(data: Buffer): Buffer {
    return createHmac('sha256', this.#hmacKey).update(data).digest().subarray(0, IV_BYTES);
  }
}
