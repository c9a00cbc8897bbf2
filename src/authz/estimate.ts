/**
 * What a graph costs the memory it lives in: its buffers' bytes, the role descriptions, and a
 * fixed part for the objects around them (the graph, its tables and relations, their typed-array
 * views, the backing store of the buffer they share). The fixed part was measured on Node 20:
 * 10,000 small graphs adopted from images, heap and array-buffer bytes per graph.
 */
export const BASE_BYTES = 2048;
/** A JS string's header, for the role descriptions (the only names kept as strings). */
const STRING_HEADER_BYTES = 16;

/** The memory of a graph made of `parts` (those left out count nothing) with `descriptions`. */
export function estimatedBytes(parts: ReadonlyArray<{ readonly bytes: number } | undefined>, descriptions: ReadonlyArray<string | undefined>): number {
  let bytes = BASE_BYTES + 8 * descriptions.length;
  for (const d of descriptions) if (d !== undefined) bytes += STRING_HEADER_BYTES + 2 * d.length;
  for (const p of parts) bytes += p?.bytes ?? 0;
  return bytes;
}
