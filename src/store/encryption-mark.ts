/**
 * How a database's names are stored, as its `meta` table remembers it (docs/operations.md §7): checked at
 * start-up, after reading the mark and before any client data is read or written, so a wrong key
 * or a switch of AUTH_ENABLE_ENCRYPTION over existing data stops the service instead of mixing
 * plaintext and ciphertext, or answering garbage.
 */
export const PLAINTEXT_MARK = 'plaintext';

/** The mark of a database encrypted with the key whose fingerprint is `fingerprint`. */
export const encryptedMark = (fingerprint: string): string => `aes-256-ctr:${fingerprint}`;

/** Why a process with mark `wanted` must not use a database marked `stored`, or undefined. */
export function markMismatch(stored: string, wanted: string): string | undefined {
  if (stored === wanted) return undefined;
  if (stored === PLAINTEXT_MARK) {
    return 'AUTH_ENABLE_ENCRYPTION=true, but the database holds plaintext data: encryption cannot be switched on over existing data';
  }
  if (wanted === PLAINTEXT_MARK) {
    return 'the database is encrypted: start with AUTH_ENABLE_ENCRYPTION=true and the AUTH_ENCRYPTION_KEY it was written with';
  }
  return 'AUTH_ENCRYPTION_KEY is not the key this database was encrypted with';
}
