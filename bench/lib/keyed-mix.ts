/**
 * has_permission request lists over a sample of probes, each request's client key either the
 * first key or one drawn at random (uniform) from many: the `clients` kind's random-client rounds.
 * Built from a recipe, so that a load generator's own process makes the same lists.
 */
import type autocannon from 'autocannon';
import { prng, type Probe } from './dataset.ts';
import type { Mix } from './requests.ts';
import { judgeBody, newTally, record, type Expectation } from './verify.ts';

const PER_CONNECTION = 512;

export interface KeyedRecipe {
  kind: 'keyed';
  sample: Probe[];
  keys: string[];
  /** A key drawn at random per request; else always the first. */
  random: boolean;
  verifyEvery: number;
  expectation: Expectation;
}

/** What is wrong with a has_permission answer to `p`, if anything. */
export function answerProblem(p: Probe, status: number, body: string): string | undefined {
  let data: unknown;
  try {
    data = (JSON.parse(body) as { data?: { has_permission?: unknown } }).data?.has_permission;
  } catch {
    data = undefined;
  }
  return status === 200 && data === p.expected
    ? undefined
    : `has_permission(${p.user}, ${p.permission}): HTTP ${status} ${body.slice(0, 160)}, expected ${p.expected}`;
}

export const checkPath = (p: Probe): string => `/api/has_permission/${encodeURIComponent(p.user)}/${encodeURIComponent(p.permission)}`;

/** The lists a keyed recipe describes; one answer in `verifyEvery` checked. */
export function keyedMix(recipe: KeyedRecipe): Mix {
  const { sample, keys, random, verifyEvery, expectation } = recipe;
  const tally = newTally();
  const requests = (conn: number, run: number): autocannon.Request[] => {
    const rand = prng(conn * 104_729 + run * 7919 + 1);
    return Array.from({ length: PER_CONNECTION }, (_, i) => {
      const p = sample[(conn * 131 + i) % sample.length] as Probe;
      const key = random ? keys[Math.floor(rand() * keys.length)] : keys[0];
      const req: autocannon.Request = { method: 'GET', path: checkPath(p), headers: { authorization: `Bearer ${key ?? ''}` } };
      if (i % verifyEvery === 0)
        req.onResponse = (status, body, _ctx, headers) => record(tally, judgeBody(answerProblem(p, status, body), status, headers, expectation));
      return req;
    });
  };
  return { requests, tally, recipe };
}
