import { TIMESTAMP_LENGTH, writeTimestamp } from '../../time/index.ts';

/**
 * A JSON answer that is the same bytes every time but for its closing timestamp (has_permission's
 * two answers), kept encoded. The hot path writes the time into the buffer and hands the engine
 * the bytes, which it copies out before returning (docs/design.md, the hot path): no string is
 * built, flattened or encoded to UTF-8 per request. One buffer per answer and server, so it is
 * valid only until the next call.
 */
export class TimestampedAnswer {
  readonly #bytes: Uint8Array;
  readonly #at: number;

  /** `head`: the answer up to the timestamp's opening quote; ASCII, as every envelope's fixed part is. */
  constructor(head: string) {
    const text = `${head}${'0'.repeat(TIMESTAMP_LENGTH)}"}`;
    if (!/^[\x20-\x7e]*$/.test(text)) throw new Error(`a prebuilt answer must be printable ASCII: ${text}`);
    this.#bytes = new Uint8Array(text.length);
    for (let k = 0; k < text.length; k++) this.#bytes[k] = text.charCodeAt(k);
    this.#at = head.length;
  }

  /** The answer stamped with `now` (a `performance.now()`). */
  at(now: number): Uint8Array {
    writeTimestamp(this.#bytes, this.#at, now);
    return this.#bytes;
  }
}
