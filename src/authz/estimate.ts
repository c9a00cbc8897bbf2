/**
 * What a graph costs the memory it lives in: its buffers' bytes, the role descriptions, and a
 * fixed part for the objects around them (the graph, its tables and relations, their typed-array
 * views, the backing store of the buffer they share). The fixed part was measured on Node 20:
 * 10,000 small graphs adopted from images, heap and array-buffer bytes per graph.
 */
export const BASE_BYTES = 2048;
/** A JS string's header, for the role descriptions (the only names kept as strings). */
const STRING_HEADER_BYTES = 16;

/**
 * The memory of a graph made of `parts` (those left out count nothing) with `descriptions`. Each
 * buffer behind the parts' arrays counts once and whole: an image's buffer stays alive while any
 * array still views it, even after the others outgrew it and moved to buffers of their own.
 */
export function estimatedBytes(
  parts: ReadonlyArray<{ readonly arrays: readonly ArrayBufferView[] } | undefined>,
  descriptions: ReadonlyArray<string | undefined>,
): number {
  let bytes = BASE_BYTES + 8 * descriptions.length;
  for (const d of descriptions) if (d !== undefined) bytes += STRING_HEADER_BYTES + 2 * d.length;
  const buffers = new Set<ArrayBufferLike>();
  for (const p of parts) for (const a of p?.arrays ?? []) buffers.add(a.buffer);
  for (const b of buffers) bytes += b.byteLength;
  return bytes;
}
