/**
 * The token path of `npm run bench`. The gateways run with a random AUTH_JWT_SECRET_KEY; once the
 * data set is seeded, a read token is minted for the bench's client key, the sample of answers is
 * checked with it as strictly as with the key, and the uws gateway is loaded once more with the
 * token as its bearer credential (`uws+token`): the same process, with the same data and the same
 * warm state. A token is verified once, then remembered per header like a key, so a request with
 * it should cost what one with the key costs: the figure is their ratio of CPU per request, taken
 * within each round. It is informative; only wrong answers fail the run.
 */
import { randomBytes } from 'node:crypto';
import { RbacClient } from '../src/client/index.ts';
import type { BenchConfig } from './config.ts';
import type { Probe } from './dataset.ts';
import { tokenLabel } from './engines.ts';
import type { Tool } from './phases.ts';
import { checkAnswers } from './prepare.ts';
import type { Server } from './servers.ts';
import type { Tally } from './verify.ts';

/** The engine whose gateway is loaded with a token too. */
export const TOKEN_ENGINE = 'uws';
export const TOKEN_TTL_S = 86_400;
/** Token over key CPU per request that the service means to stay under (informative). */
export const TOKEN_CPU_BUDGET = 1.1;

export interface TokenRatio {
  /** Median of the per-round ratios: token CPU per request over the key's. */
  median: number;
  byRound: number[];
}

export interface TokenReport {
  /** `uws+token`: how its runs are labelled. */
  label: string;
  engine: string;
  scope: string;
  tokenType: string;
  expiresIn: number;
  /** Characters of the token (a key has 36): each request carries the longer header. */
  tokenChars: number;
  /** The sample of answers checked with the token before timing. */
  correctness?: Tally & { seconds: number };
  cpuPerRequestBudget: number;
  cpuPerRequest: Partial<Record<Tool, TokenRatio | { skipped: string }>>;
}

export type TokenSection = TokenReport | { skipped: string };

export type TokenPlan = { engine: string; secret: string } | { skipped: string };

/** Whether this run loads a gateway with a token, and the secret its gateways get. */
export function tokenPlan(cfg: BenchConfig): TokenPlan {
  if (!cfg.token) return { skipped: 'BENCH_TOKEN=0' };
  if (!cfg.engines.includes(TOKEN_ENGINE)) return { skipped: `BENCH_ENGINES has no ${TOKEN_ENGINE}` };
  // 36 random bytes: 48 base64url characters, above the 32 bytes the service requires.
  return { engine: TOKEN_ENGINE, secret: randomBytes(36).toString('base64url') };
}

/** The gateways' settings for `plan`. */
export const tokenEnv = (plan: TokenPlan): Record<string, string> => ('secret' in plan ? { AUTH_JWT_SECRET_KEY: plan.secret } : {});

interface Minted {
  token: string;
  tokenType: string;
  expiresIn: number;
  scope: string;
}

/** POST /api/token with the client key: a read token for TOKEN_TTL_S; throws on any other answer. */
export async function mintToken(baseUrl: string, key: string): Promise<Minted> {
  const res = await fetch(`${baseUrl}/api/token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ scope: 'read', ttl_seconds: TOKEN_TTL_S }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /api/token answered ${res.status}: ${text.slice(0, 200)}`);
  const d = (JSON.parse(text) as { data?: Record<string, unknown> }).data ?? {};
  const { token, token_type: tokenType, expires_in: expiresIn, scope } = d;
  if (typeof token !== 'string' || tokenType !== 'Bearer' || expiresIn !== TOKEN_TTL_S || scope !== 'read') {
    // The token itself stays out of the message.
    const seen = `token_type ${String(tokenType)}, expires_in ${String(expiresIn)}, scope ${String(scope)}, token ${typeof token}`;
    throw new Error(`POST /api/token: expected a Bearer read token for ${TOKEN_TTL_S} s, got ${seen}`);
  }
  return { token, tokenType, expiresIn, scope };
}

/** `gateway` once more, loaded with `token`: the same process, which its own entry stops. */
export function tokenServer(gateway: Server, token: string): Server {
  return { ...gateway, label: tokenLabel(gateway.label), token, stop: () => Promise.resolve() };
}

/**
 * Mints a token on `gateway` and checks `sample` with it, strictly (answer, envelope, revision,
 * headers). The server to load with it and its report; a failure goes to `failures`.
 */
export async function prepareToken(
  gateway: Server,
  key: string,
  sample: Probe[],
  revision: number,
  failures: string[],
): Promise<{ server?: Server; report?: TokenReport }> {
  let minted: Minted;
  try {
    minted = await mintToken(gateway.baseUrl, key);
  } catch (err) {
    failures.push(`token: ${err instanceof Error ? err.message : String(err)}`);
    return {};
  }
  const server = tokenServer(gateway, minted.token);
  console.log(`token: minted a ${minted.scope} token (${minted.token.length} characters, expires in ${minted.expiresIn} s) for ${server.label}`);
  const client = new RbacClient({ baseUrl: gateway.baseUrl, key: minted.token });
  const correctness = await checkAnswers(client, sample, { strict: true, revision }, `correctness (${server.label})`);
  const { token, ...described } = minted;
  const report: TokenReport = {
    label: server.label,
    engine: gateway.engine ?? TOKEN_ENGINE,
    ...described,
    tokenChars: token.length,
    correctness,
    cpuPerRequestBudget: TOKEN_CPU_BUDGET,
    cpuPerRequest: {},
  };
  if (correctness.wrong === 0) return { server, report };
  failures.push(`${server.label}: ${correctness.wrong} wrong answers of ${correctness.checked} before timing (${correctness.examples[0] ?? ''})`);
  return { report };
}

const fix = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');

/** The summary's `token/key cpu per request` line(s). */
export function printToken(section: TokenSection | undefined): void {
  if (section === undefined) return;
  if ('skipped' in section) {
    console.log(`token/key cpu per request: skipped (${section.skipped})`);
    return;
  }
  const budget = `${Math.round((section.cpuPerRequestBudget - 1) * 100)} %`;
  console.log(`token/key cpu per request (${section.label} over ${section.engine}, median of rounds; aim: at most ${budget} extra, informative):`);
  for (const [tool, r] of Object.entries(section.cpuPerRequest)) {
    if ('skipped' in r) {
      console.log(`  ${tool.padEnd(10)} skipped (${r.skipped})`);
      continue;
    }
    const verdict = !Number.isFinite(r.median) ? '' : r.median <= section.cpuPerRequestBudget ? 'within' : `above the ${budget} aim`;
    console.log(`  ${tool.padEnd(10)} ${fix(r.median)}  by round ${r.byRound.map(fix).join(' ')}  ${verdict}`);
  }
}
