/**
 * Answers checked against the reference model during a run. A wrong answer fails the run, whatever
 * its speed: a fast wrong answer is the worst outcome an authorization service can have.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RbacClient } from '../../src/client/index.ts';
import { HOT_PERMISSION, type Dataset } from './dataset.ts';

export interface Tally {
  checked: number;
  wrong: number;
  /** The first few wrong answers, for the report. */
  examples: string[];
}

export const newTally = (): Tally => ({ checked: 0, wrong: 0, examples: [] });

export function record(t: Tally, problem: string | undefined): void {
  t.checked++;
  if (problem === undefined) return;
  t.wrong++;
  if (t.examples.length < 5) t.examples.push(problem);
}

export function merge(into: Tally, from: Tally): void {
  into.checked += from.checked;
  into.wrong += from.wrong;
  for (const e of from.examples) if (into.examples.length < 5) into.examples.push(e);
}

export interface Expectation {
  /** true: the data and headers are checked; false: status only (the bare server answers anything). */
  strict: boolean;
  /** X-Authz-Revision of every answer... */
  revision: number;
  /** ...or at least that when writes run beside the reads. */
  revisionAtLeast: boolean;
}

const header = (headers: IncomingHttpHeaders | undefined, name: string): string | undefined => {
  if (headers === undefined) return undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
  return undefined;
};

/** The problem with one answer: the route's own (`problem`), then the headers every answer carries. */
export function judgeBody(problem: string | undefined, status: number, headers: IncomingHttpHeaders | undefined, exp: Expectation): string | undefined {
  if (!exp.strict) return status === 200 || status === 201 ? undefined : `status ${status}`;
  if (problem !== undefined) return problem;
  const rev = header(headers, 'x-authz-revision');
  const ok = rev !== undefined && /^\d+$/.test(rev) && (exp.revisionAtLeast ? Number(rev) >= exp.revision : Number(rev) === exp.revision);
  if (!ok) return `X-Authz-Revision ${rev ?? 'missing'}, expected ${exp.revisionAtLeast ? 'at least ' : ''}${exp.revision}`;
  if (!/^application\/json\b/i.test(header(headers, 'content-type') ?? '')) return `Content-Type ${header(headers, 'content-type') ?? 'missing'}`;
  if ((header(headers, 'x-request-id') ?? '') === '') return 'no X-Request-Id';
  return undefined;
}

/**
 * Walks the which_users_can pages of the hot permission once, checking each against the model, and
 * returns their paths (the first page, then one per cursor) for the load to repeat.
 */
export async function pageUrls(client: RbacClient, ds: Dataset, size: number, tally: Tally): Promise<string[]> {
  const all = ds.model.whichUsersCan(HOT_PERMISSION);
  const base = `/api/which_users_can/${encodeURIComponent(HOT_PERMISSION)}?limit=${size}`;
  const urls: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page === 0 || cursor !== undefined; page++) {
    urls.push(cursor === undefined ? base : `${base}&cursor=${encodeURIComponent(cursor)}`);
    const res = await client.whichUsersCan(HOT_PERMISSION, { limit: size, ...(cursor === undefined ? {} : { cursor }) });
    const want = JSON.stringify(all.slice(page * size, (page + 1) * size));
    record(
      tally,
      res.status === 200 && JSON.stringify(res.data) === want
        ? undefined
        : `which_users_can page ${page}: HTTP ${res.status}, ${JSON.stringify(res.data)?.slice(0, 120)}`,
    );
    cursor = res.nextCursor;
    if (page > all.length / size + 1) throw new Error('which_users_can: more pages than the model holds');
  }
  return urls;
}
