// What the tests ask of a store failure; src/ asks `transience` itself (store/transient.ts).
import { transience } from '../../src/store/transient.ts';

/**
 * Whether retrying the failed call may succeed: a code the catalogue calls retryable (as an
 * AppError or in its `{code, message}` wire form), or a raw driver error of the same kind.
 * ERR_STORE_COMMIT_UNKNOWN is not (the write may have committed), nor ERR_STORE_CIRCUIT_OPEN.
 */
export function isTransient(err: unknown): boolean {
  return transience(err) !== undefined;
}
