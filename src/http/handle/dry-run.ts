import type { TenantGraph } from '../../authz/graph.ts';
import { previewAsync, PreviewOutdatedError, type Preview, type PreviewItem } from '../../authz/preview.ts';
import { parseWriteItems } from '../input/writes.ts';

/** The data of POST /api/dry-run (docs/api.md §12.3). */
export interface DryRunData extends Preview {
  readonly revision: number;
}

/** How often a preview starts again when a write lands while it runs. */
const ATTEMPTS = 5;

/**
 * The preview of a batch body at the graph's revision, now: an item that is no valid write
 * answers 400 in its place, like a refusal. A large difference is worked through in slices that
 * yield the event loop; a write landing meanwhile makes it start again on the newer graph
 * (`current` gives the graph to use then), so the answer is always at one revision.
 */
export async function dryRun(body: unknown, first: TenantGraph, current: () => TenantGraph): Promise<DryRunData> {
  const now = Date.now() * 1000;
  const items: PreviewItem[] = parseWriteItems(body, now).map((i) => i.change ?? { invalid: i.error.message });
  let g = first;
  for (let attempt = 1; ; attempt++) {
    try {
      return { revision: g.revision, ...(await previewAsync(g, items, now)) };
    } catch (err) {
      if (!(err instanceof PreviewOutdatedError) || attempt === ATTEMPTS) throw err;
      g = current();
    }
  }
}
