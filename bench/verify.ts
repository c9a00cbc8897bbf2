/**
 * Correctness of has_permission answers against the model: a sample before timing, sampled
 * responses during autocannon, and a slow parallel checker during wrk. A wrong answer is a failure
 * of the run, whatever its speed.
 */
import type { RbacClient } from '../src/client/index.ts';
import { probePath, type Probe } from './dataset.ts';
import { sleep } from './procs.ts';

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

export interface Expectation {
  /** true: the body must carry this answer and the revision; false: status only (bare server). */
  strict: boolean;
  /** The X-Authz-Revision every answer must carry (strict only). */
  revision: number;
  /** true: an X-Authz-Revision above `revision` is right too (writes run beside the checks). */
  revisionAtLeast?: boolean;
}

type HeaderGet = (name: string) => string | undefined;

/** The problem with one response, or undefined when it is right. */
export function judge(p: Probe, exp: Expectation, status: number, body: string, header: HeaderGet): string | undefined {
  const what = `has_permission(${p.user}, ${p.permission})`;
  if (status !== 200) return `${what}: status ${status} ${body.slice(0, 200)}`;
  let parsed: unknown;
  try {
    // Parsed for the bare server too, so that the load generator does the same work for both.
    parsed = JSON.parse(body);
  } catch {
    return `${what}: body is not JSON: ${body.slice(0, 200)}`;
  }
  if (!exp.strict) return undefined;
  const env = parsed as { success?: unknown; code?: unknown; data?: { has_permission?: unknown } };
  if (env.success !== true || env.code !== 200) return `${what}: not a success envelope: ${body.slice(0, 200)}`;
  if (env.data?.has_permission !== p.expected) {
    return `${what}: answered ${String(env.data?.has_permission)}, model says ${p.expected}`;
  }
  const rev = header('x-authz-revision');
  if (exp.revisionAtLeast === true) {
    if (rev === undefined || !/^\d+$/.test(rev) || Number(rev) < exp.revision) {
      return `${what}: X-Authz-Revision ${rev ?? 'missing'}, expected at least ${exp.revision}`;
    }
  } else if (rev !== String(exp.revision)) return `${what}: X-Authz-Revision ${rev ?? 'missing'}, expected ${exp.revision}`;
  if (!/^application\/json\b/i.test(header('content-type') ?? '')) return `${what}: Content-Type ${header('content-type') ?? 'missing'}`;
  if ((header('x-request-id') ?? '') === '') return `${what}: no X-Request-Id`;
  return undefined;
}

/** Looks a header up in autocannon's `{name: value}` (names as the server spelled them). */
export function headerGetter(headers: Record<string, unknown> | undefined): HeaderGet {
  return (name) => {
    if (headers === undefined) return undefined;
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === name) return Array.isArray(v) ? String(v[0]) : String(v);
    }
    return undefined;
  };
}

/** Asks every probe through the typed client, `concurrency` at a time. */
export async function checkSample(client: RbacClient, sample: Probe[], exp: Expectation, concurrency: number): Promise<Tally> {
  const tally = newTally();
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let p = sample[next++]; p !== undefined; p = sample[next++]) {
      const res = await client.request('GET', probePath(p));
      const text = res.body === undefined ? '' : JSON.stringify(res.body);
      record(tally, judge(p, exp, res.status, text, (n) => res.headers.get(n) ?? undefined));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return tally;
}

/** Asks probes one at a time at about `rate` per second until `stop()`; for runs whose responses we cannot see (wrk). */
export function startChecker(client: RbacClient, sample: Probe[], exp: Expectation, rate: number): { stop(): Promise<Tally> } {
  const tally = newTally();
  let stopped = false;
  const gap = 1000 / rate;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const p = sample[i % sample.length];
      if (p === undefined) break;
      const t0 = performance.now();
      try {
        const res = await client.request('GET', probePath(p));
        const text = res.body === undefined ? '' : JSON.stringify(res.body);
        record(tally, judge(p, exp, res.status, text, (n) => res.headers.get(n) ?? undefined));
      } catch (err) {
        record(tally, `request failed: ${String(err)}`);
      }
      const wait = gap - (performance.now() - t0);
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return tally;
    },
  };
}
