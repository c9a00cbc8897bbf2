/**
 * The request mix of a run, as autocannon request lists (one list per connection, cycled), built
 * from the scenario's route weights; one request in `verifyEvery` carries a check of its answer
 * against the reference model. Writes grant and revoke permissions of a role without members, so
 * no read's answer depends on them (only the revision moves).
 */
import { randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';
import { HOT_PERMISSION, paretoIndex, paretoUsers, prng, probes, windowReach, WRITE_ROLE, type Dataset, type Probe } from './dataset.ts';
import { dryRunBatches, dryRunJudge, gainedPairs, type DryRunBatch } from './dry-run.ts';
import { keyedMix, type KeyedRecipe } from './keyed-mix.ts';
import type { DataShape, Route, RunSettings } from './scenario.ts';
import { judgeBody, newTally, record, type Expectation, type Tally } from './verify.ts';

const PER_CONNECTION = 512;
const enc = encodeURIComponent;

export interface Mix {
  /** The list of connection `conn` of run number `run` (write names are fresh per run). */
  requests(conn: number, run: number): autocannon.Request[];
  tally: Tally;
  /** How to build the same mix again in a load generator's own process (see {@link mixOf}). */
  recipe: Recipe;
  /** Figures of the requests themselves, for the report (the dry-run batches' size of difference). */
  figures?: () => Record<string, number>;
}

/** A mix as data: what a client process needs to build the same request lists and judges. */
export type Recipe =
  | { kind: 'mix'; data: DataShape; settings: RunSettings; keys: string[]; pages: string[]; expectation: Expectation }
  | { kind: 'flood'; verifyEvery: number }
  | KeyedRecipe;

/** The mix a recipe describes; `dataset` generates (or recalls) the data set of a shape. */
export function mixOf(recipe: Recipe, dataset: (shape: DataShape) => Dataset): Mix {
  if (recipe.kind === 'flood') return floodMix(recipe.verifyEvery);
  if (recipe.kind === 'keyed') return keyedMix(recipe);
  const { data, ...input } = recipe;
  return buildMix({ ds: dataset(data), ...input });
}

/** Whether every request of the mix may go out in any order on any connection (no write pairs, no per-request keys): what wrk can send. */
export const orderFree = (r: Recipe): boolean => r.kind === 'mix' && !((r.settings.routes.write ?? 0) > 0);

/** has_permission with a fresh random client key on every request; every answer must be 200, false. */
export function floodMix(verifyEvery: number): Mix {
  const tally = newTally();
  const requests = (): autocannon.Request[] =>
    Array.from({ length: 64 }, (_, i) => {
      const req: autocannon.Request = {
        method: 'GET',
        path: `/api/has_permission/user${i}@example.com/svc0.res-000001:read`,
        setupRequest: (r) => ({ ...r, headers: { authorization: `Bearer ${randomUUID()}` } }),
      };
      if (i % verifyEvery === 0) {
        req.onResponse = (status, body) =>
          record(tally, status === 200 && /"has_permission":false/.test(body) ? undefined : `unknown key: HTTP ${status} ${body.slice(0, 120)}`);
      }
      return req;
    });
  return { requests, tally, recipe: { kind: 'flood', verifyEvery } };
}

export interface MixInput {
  ds: Dataset;
  settings: RunSettings;
  keys: string[];
  /** The which_users_can pages: the first, then one per cursor (see {@link pageUrls}). */
  pages: string[];
  expectation: Expectation;
}

function pickRoute(rand: () => number, weights: Array<[Route, number]>, total: number): Route {
  let x = rand() * total;
  for (const [route, w] of weights) {
    x -= w;
    if (x < 0) return route;
  }
  return (weights[weights.length - 1] as [Route, number])[0];
}

interface Pools {
  probes: Probe[];
  batches: Probe[][];
  users: string[];
  previews: DryRunBatch[];
}

function pools(ds: Dataset, settings: RunSettings): Pools {
  const routes = settings.routes;
  const all = probes(ds, 8_192, settings.denials, ds.shape.seed + 1);
  const batches: Probe[][] = [];
  if ((routes.check ?? 0) > 0 || (routes.authzen_evaluations ?? 0) > 0) {
    const rand = prng(ds.shape.seed + 3);
    for (let b = 0; b < 64; b++) batches.push(Array.from({ length: settings.checkBatch }, () => all[Math.floor(rand() * all.length)] as Probe));
  }
  const users = (routes.user_permissions ?? 0) > 0 ? paretoUsers(ds, 2_048, ds.shape.seed + 4) : [];
  const previews = (routes.dry_run ?? 0) > 0 ? dryRunBatches(ds, 16, settings.checkBatch, ds.shape.seed + 5) : [];
  return { probes: all, batches, users, previews };
}

export function buildMix(input: MixInput): Mix {
  const { ds, settings, keys, pages, expectation } = input;
  const { probes: all, batches, users, previews } = pools(ds, settings);
  const revisionOk = (r: number): boolean => (expectation.revisionAtLeast ? r >= expectation.revision : r === expectation.revision);
  const weights = Object.entries(settings.routes).filter(([, w]) => (w ?? 0) > 0) as Array<[Route, number]>;
  const total = weights.reduce((n, [, w]) => n + w, 0);
  const tally = newTally();
  const bearer = keys.map((k) => ({ authorization: `Bearer ${k}` }));
  const check = (req: autocannon.Request, expected: (status: number, body: string) => string | undefined): void => {
    req.onResponse = (status, body, _ctx, headers) => record(tally, judgeBody(expected(status, body), status, headers, expectation));
  };
  const requests = (conn: number, run: number): autocannon.Request[] => {
    const rand = prng(ds.shape.seed * 7919 + conn * 104_729 + run);
    let write = 0;
    const list = Array.from({ length: PER_CONNECTION }, (_, i): autocannon.Request => {
      const route = pickRoute(rand, weights, total);
      const headers = bearer[keys.length === 1 ? 0 : paretoIndex(rand, keys.length, ds.shape.pareto)];
      const req = requestOf(route, rand, { probes: all, batches, users, previews, pages, ds, revisionOk });
      if (route === 'write') {
        // POST then DELETE of one name, alternately: every grant is revoked again before the list repeats.
        const name = `w${run}-${conn}-${write >> 1}`;
        req.method = write % 2 === 0 ? 'POST' : 'DELETE';
        req.path = `/api/permission/${WRITE_ROLE}/${name}`;
        const want = write++ % 2 === 0 ? 201 : 200;
        if (i % settings.verifyEvery === 0)
          check(req, (status) => (status === want ? undefined : `${req.method} ${req.path}: status ${status}, expected ${want}`));
      } else if (i % settings.verifyEvery === 0) {
        if (req.expect !== undefined) check(req, req.expect);
      }
      delete req.expect;
      return { ...req, headers: { ...headers, ...req.headers } };
    });
    // The list repeats: an unpaired grant at its end would meet itself again, granted (409).
    if (write % 2 === 1) list.push({ method: 'DELETE', path: `/api/permission/${WRITE_ROLE}/w${run}-${conn}-${write >> 1}`, headers: bearer[0] });
    return list;
  };
  const figures = (): Record<string, number> => {
    const out: Record<string, number> = {};
    if (previews.length > 0) out.dryRunGainedPairs = previews.reduce((n, b) => n + gainedPairs(ds.model, b.items).length, 0) / previews.length;
    if (timed(ds)) {
      const { through, closed } = windowReach(ds, all);
      [out.probesThroughWindowPct, out.probesClosedByWindowPct] = [(100 * through) / all.length, (100 * closed) / all.length];
    }
    return out;
  };
  return { requests, tally, recipe: { kind: 'mix', data: ds.shape, settings, keys, pages, expectation }, figures };
}

type Built = autocannon.Request & { expect?: (status: number, body: string) => string | undefined };

interface Sources extends Pools {
  pages: string[];
  ds: Dataset;
  revisionOk: (revision: number) => boolean;
}

/**
 * The model's answer to a probe when it is checked: with windows in the data set, at that instant
 * (docs/api.md §12.1: an edge counts only while its window is open), else the one drawn.
 */
const answerNow = (ds: Dataset, p: Probe): boolean => (ds.model.windows.size === 0 ? p.expected : ds.model.hasPermission(p.user, p.permission));

/** One request of `route` and how to judge its answer (status 200 and the model's data). */
function requestOf(route: Route, rand: () => number, s: Sources): Built {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  switch (route) {
    case 'has_permission': {
      const p = pick(s.probes);
      return {
        method: 'GET',
        path: `/api/has_permission/${enc(p.user)}/${enc(p.permission)}`,
        expect: expectData(`has_permission(${p.user}, ${p.permission})`, () => ({ has_permission: answerNow(s.ds, p) }), timed(s.ds)),
      };
    }
    case 'check': {
      const batch = pick(s.batches);
      const body = JSON.stringify({ checks: batch.map((p) => ({ user: p.user, permission: p.permission })) });
      const expected = (): unknown => {
        const results = batch.map((p) => ({ user: p.user, permission: p.permission, has_permission: answerNow(s.ds, p) }));
        return { results, all: results.every((r) => r.has_permission), any: results.some((r) => r.has_permission) };
      };
      return {
        method: 'POST',
        path: '/api/check',
        body,
        headers: { 'content-type': 'application/json' },
        expect: expectData(`check of ${batch.length}`, expected, timed(s.ds)),
      };
    }
    case 'dry_run': {
      const batch = pick(s.previews);
      return {
        method: 'POST',
        path: '/api/dry-run',
        body: batch.body,
        headers: { 'content-type': 'application/json' },
        expect: dryRunJudge(batch, () => gainedPairs(s.ds.model, batch.items), s.revisionOk),
      };
    }
    case 'which_users_can': {
      const page = Math.floor(rand() * s.pages.length);
      const size = pageSizeOf(s.pages[0] ?? '');
      const expected = () => s.ds.model.whichUsersCan(HOT_PERMISSION).slice(page * size, (page + 1) * size);
      return { method: 'GET', path: s.pages[page] ?? '', expect: expectData(`which_users_can page ${page}`, expected) };
    }
    case 'user_permissions': {
      const user = pick(s.users);
      return {
        method: 'GET',
        path: `/api/user_permissions/${enc(user)}`,
        expect: expectData(`user_permissions(${user})`, () => s.ds.model.userPermissions(user)),
      };
    }
    case 'write':
      return { method: 'POST' };
    default:
      return authzenRequest(route, pick, s);
  }
}

const JSON_BODY = { 'content-type': 'application/json' };

/**
 * The AuthZEN form of a probe: a data set permission `T:read` is a type-wide grant (docs/authzen.md),
 * so action `read` on any resource of type T is decided by it alone.
 */
function evaluationOf(p: Probe): { subject: object; action: object; resource: object } {
  const colon = p.permission.lastIndexOf(':');
  return {
    subject: { type: 'user', id: p.user },
    action: { name: p.permission.slice(colon + 1) },
    resource: { type: p.permission.slice(0, colon), id: 'bench' },
  };
}

/** The AuthZEN routes: a single evaluation, a batch, a page of 1,000 holders of the hot permission. */
function authzenRequest(route: Route, pick: <T>(xs: readonly T[]) => T, s: Sources): Built {
  if (route === 'authzen_evaluation') {
    const p = pick(s.probes);
    const body = JSON.stringify(evaluationOf(p));
    return {
      method: 'POST',
      path: '/access/v1/evaluation',
      body,
      headers: JSON_BODY,
      expect: expectJson(`evaluation(${p.user}, ${p.permission})`, (b) => b.decision === p.expected),
    };
  }
  if (route === 'authzen_evaluations') {
    const batch = pick(s.batches);
    const body = JSON.stringify({ evaluations: batch.map(evaluationOf) });
    const want = batch.map((p) => p.expected);
    const same = (b: Record<string, unknown>): boolean =>
      JSON.stringify((b.evaluations as Array<{ decision: boolean }> | undefined)?.map((e) => e.decision)) === JSON.stringify(want);
    return { method: 'POST', path: '/access/v1/evaluations', body, headers: JSON_BODY, expect: expectJson(`evaluations of ${batch.length}`, same) };
  }
  const colon = HOT_PERMISSION.lastIndexOf(':');
  const query = {
    subject: { type: 'user' },
    action: { name: HOT_PERMISSION.slice(colon + 1) },
    resource: { type: HOT_PERMISSION.slice(0, colon), id: 'bench' },
    page: { limit: 1000 },
  };
  const holders = s.ds.model.whichUsersCan(HOT_PERMISSION);
  const want = JSON.stringify(holders.slice(0, 1000).map(({ user }) => ({ type: 'user', id: user })));
  const same = (b: Record<string, unknown>): boolean =>
    (b.page as { total?: number } | undefined)?.total === holders.length && JSON.stringify(b.results) === want;
  return {
    method: 'POST',
    path: '/access/v1/search/subject',
    body: JSON.stringify(query),
    headers: JSON_BODY,
    expect: expectJson('search/subject page of 1000', same),
  };
}

/** A judge of an AuthZEN answer (no envelope): 200 and a body `holds` accepts. */
function expectJson(what: string, holds: (body: Record<string, unknown>) => boolean): (status: number, body: string) => string | undefined {
  return (status, body) => {
    if (status !== 200) return `${what}: status ${status} ${body.slice(0, 200)}`;
    try {
      return holds(JSON.parse(body) as Record<string, unknown>) ? undefined : `${what}: answered ${body.slice(0, 200)}, the model disagrees`;
    } catch {
      return `${what}: body is not JSON: ${body.slice(0, 200)}`;
    }
  };
}

const pageSizeOf = (url: string): number => Number(/[?&]limit=(\d+)/.exec(url)?.[1] ?? NaN);

/** Whether the model's answers depend on when they are asked (windows): then each checked answer asks it again. */
const timed = (ds: Dataset): boolean => ds.model.windows.size > 0;

/**
 * A judge: 200 and `data` equal to the model's answer, computed when a response is first checked,
 * or with `atEachAnswer` every time one is (the answer depends on the instant).
 */
function expectData(what: string, expected: () => unknown, atEachAnswer = false): (status: number, body: string) => string | undefined {
  let want: string | undefined;
  return (status, body) => {
    if (atEachAnswer) want = undefined;
    if (status !== 200) return `${what}: status ${status} ${body.slice(0, 200)}`;
    let data: unknown;
    try {
      data = (JSON.parse(body) as { data?: unknown }).data;
    } catch {
      return `${what}: body is not JSON: ${body.slice(0, 200)}`;
    }
    want ??= JSON.stringify(expected());
    const got = JSON.stringify(data);
    return got === want ? undefined : `${what}: answered ${got.slice(0, 200)}, the model says ${want.slice(0, 200)}`;
  };
}
