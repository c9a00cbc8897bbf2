import type { Change } from '../../authz/changes.ts';
import type { TenantGraph } from '../../authz/graph.ts';
import { previewAsync, PreviewOutdatedError, type ItemResult, type Preview } from '../../authz/preview.ts';
import { parseWriteItems } from '../input/writes.ts';

/** The data of POST /api/dry-run (docs/api.md §12.3). */
export interface DryRunData extends Preview {
  readonly revision: number;
}

/** How often a preview is made again when a write lands while it runs, before it is answered at the newest graph it could finish on. */
const ATTEMPTS = 5;

/**
 * The preview of a batch body at the graph's revision, now. Items that are not a valid write (400)
 * are judged like the store's refusals: the items before one are previewed, and if none of them
 * fails the 400 item is the first failure, the rest 424. A large difference is worked through in
 * slices that yield the event loop; a write landing meanwhile makes it start again on the newer
 * graph (`current` gives the graph to use then), so the answer is always at one revision.
 */
export async function dryRun(body: unknown, first: TenantGraph, current: () => TenantGraph): Promise<DryRunData> {
  const now = Date.now() * 1000;
  const items = parseWriteItems(body, now);
  const bad = items.findIndex((i) => i.error !== undefined);
  const changes = (bad < 0 ? items : items.slice(0, bad)).map((i) => i.change as Change);
  let g = first;
  for (let attempt = 1; ; attempt++) {
    try {
      const preview = await previewAsync(g, changes, now);
      return { revision: g.revision, ...withBadItem(preview, items.length, bad, items[bad]?.error?.message) };
    } catch (err) {
      if (!(err instanceof PreviewOutdatedError) || attempt === ATTEMPTS) throw err;
      g = current();
    }
  }
}

/** The preview of the items before the first bad one, with that one's 400 and the rest's 424 when nothing failed before it. */
function withBadItem(preview: Preview, count: number, bad: number, error: string | undefined): Preview {
  if (bad < 0) return preview;
  const results: ItemResult[] = [...preview.results];
  const failedBefore = results.some((r) => r.status >= 400);
  results.push(failedBefore ? { status: 424 } : { status: 400, error: error ?? 'invalid write' });
  while (results.length < count) results.push({ status: 424 });
  return { valid: false, results, gained: [], lost: [], gained_count: 0, lost_count: 0, truncated: false };
}
