import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { effectivePort, type WebhookHosts } from './allowed-hosts.ts';
import type { DeliveryJob, DeliveryUpdate, RunEntry } from './records.ts';

/**
 * The webhook sender (docs/api.md §16): one signed POST per attempt, to an address checked just
 * before connecting, and the retry policy applied to its outcome.
 */

/** A 2xx within this long is a delivery; the whole exchange counts, DNS and response body included. */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** Waits before the retries: the first attempt plus one retry per entry, then the run's delivery fails. */
export const RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 25_000];

const USER_AGENT = 'rbac-gateway';

/** What to deliver: where, signed with which secret, under which `webhook-id`, and the JSON body. */
export interface WebhookTarget {
  readonly url: string;
  readonly secret: string;
  readonly webhookId: string;
  readonly body: string;
}

/** One attempt's outcome; `status` is the receiver's HTTP status, null when none came. */
export interface DeliveryResult {
  readonly delivered: boolean;
  readonly status: number | null;
  /** Why it was not delivered: no secret, body or full URL in it, so it is safe to log. */
  readonly reason?: string;
}

type Subnet = readonly [address: string, prefix: number, family: 'ipv4' | 'ipv6'];

function blockList(subnets: readonly Subnet[]): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of subnets) list.addSubnet(address, prefix, family);
  return list;
}

/**
 * Never a receiver: "this network" (Linux connects 0.x.x.x to the local host, so the whole /8,
 * not only 0.0.0.0), the unspecified IPv6 address, multicast and the broadcast address. BlockList
 * also matches IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) against the IPv4 rules.
 */
const NEVER = blockList([
  ['0.0.0.0', 8, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['255.255.255.255', 32, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
]);

/** Link-local, where cloud metadata services answer: only when the allow-list names the literal IP. */
const LINK_LOCAL = blockList([
  ['169.254.0.0', 16, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
]);

/**
 * Why a webhook may not connect to `address`, or undefined when it may. `literal` says the URL's
 * host is this IP itself (so an allow-list entry names it), which is what lets link-local through.
 */
export function addressRefusal(address: string, literal: boolean): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'the webhook host resolved to something that is not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (NEVER.check(address, type)) return 'the webhook host resolves to an unspecified, multicast or broadcast address';
  if (!literal && LINK_LOCAL.check(address, type)) {
    return 'the webhook host resolves to a link-local address (allowed only when AUTH_WEBHOOK_ALLOWED_HOSTS lists that IP)';
  }
  return undefined;
}

/**
 * Makes one delivery attempt: re-checks the URL against `hosts`, resolves and checks the host's
 * addresses, and POSTs the signed body to exactly those addresses (no redirect followed). A 2xx
 * with its body read within `timeoutMs` is a delivery; anything else is not. Never throws, and
 * never logs (nor puts in `reason`) the secret or the body.
 */
export async function deliverOnce(target: WebhookTarget, hosts: WebhookHosts, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<DeliveryResult> {
  const deadline = Date.now() + timeoutMs;
  try {
    const checked = hosts.check(target.url);
    if (!checked.ok) return failure(null, checked.reason);
    const url = new URL(checked.url);
    const headers = signedHeaders(target);
    if (headers === undefined) return failure(null, 'the webhook secret is not a usable signing key');
    const addresses = await checkedAddresses(url, deadline);
    if (typeof addresses === 'string') return failure(null, addresses);
    return await exchange(url.protocol, requestOptions(url, addresses, headers), target.body, deadline - Date.now());
  } catch (err) {
    return failure(null, `delivery failed (${errorCode(err)})`);
  }
}

/**
 * The JSON body of a run's deliveries (docs/api.md §16), with exactly these keys in this order;
 * the same text on every retry, so its signature covers what the receiver parses.
 */
export function webhookBody(run: RunEntry): string {
  return JSON.stringify({
    type: 'workflow.run',
    workflow: run.workflow,
    run_at: run.runAt,
    revision: run.revision,
    users_count: run.usersCount,
    added: [...run.added],
    removed: [...run.removed],
  });
}

/**
 * What to record on the run after an attempt: delivered; else pending with the next attempt
 * 1 s, 5 s then 25 s later; else (after the third retry) failed. `lastStatus` is this attempt's
 * status, null when no answer came.
 */
export function afterAttempt(job: DeliveryJob, result: Pick<DeliveryResult, 'delivered' | 'status'>, nowMs: number): DeliveryUpdate {
  const attempts = job.run.delivery.attempts + 1;
  const base = { runId: job.run.id, attempts, lastStatus: result.status };
  if (result.delivered) return { ...base, status: 'delivered', nextAttemptAtMs: null };
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return { ...base, status: 'failed', nextAttemptAtMs: null };
  return { ...base, status: 'pending', nextAttemptAtMs: nowMs + delay };
}

function failure(status: number | null, reason: string): DeliveryResult {
  return { delivered: false, status, reason };
}

/** The Standard Webhooks headers, signed now; undefined when the secret is no base64 key. */
function signedHeaders(target: WebhookTarget): Record<string, string> | undefined {
  const seconds = Math.floor(Date.now() / 1000);
  let signature: string;
  try {
    signature = new Webhook(target.secret).sign(target.webhookId, new Date(seconds * 1000), target.body);
  } catch {
    return undefined;
  }
  return {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(target.body)),
    'user-agent': USER_AGENT,
    'webhook-id': target.webhookId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signature,
  };
}

/** URL.hostname keeps an IPv6 address in brackets; sockets and DNS want it bare. */
function bareHost(url: URL): string {
  const host = url.hostname;
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * The addresses to connect to, every one checked, or why not. Resolved here rather than by the
 * socket, so that what was checked is what is connected to (a second look-up could answer
 * differently). Any refused address refuses the webhook: a name that points at metadata or
 * multicast at all is a misconfiguration or an attack.
 */
async function checkedAddresses(url: URL, deadline: number): Promise<LookupAddress[] | string> {
  const host = bareHost(url);
  const family = isIP(host);
  let addresses: LookupAddress[];
  if (family !== 0) addresses = [{ address: host, family }];
  else {
    try {
      addresses = await beforeDeadline(lookup(host, { all: true }), deadline);
    } catch (err) {
      return `the webhook host did not resolve (${errorCode(err)})`;
    }
  }
  if (addresses.length === 0) return 'the webhook host did not resolve (no address)';
  for (const a of addresses) {
    const refusal = addressRefusal(a.address, family !== 0);
    if (refusal !== undefined) return refusal;
  }
  return addresses;
}

/** `work`, or a rejection when `deadline` (epoch ms) comes first. */
async function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A look-up that answers the addresses already checked, whatever it is asked: the socket
 * connects to them (trying each in turn when it asks for all) and never asks DNS again.
 */
function pinnedLookup(addresses: readonly LookupAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    const first = wanted[0];
    if (first === undefined) callback(Object.assign(new Error('no checked address of the wanted family'), { code: 'ENOTFOUND' }), '');
    else if (options.all === true)
      callback(
        null,
        wanted.map((a) => ({ ...a })),
      );
    else callback(null, first.address, first.family);
  };
}

function requestOptions(url: URL, addresses: readonly LookupAddress[], headers: Record<string, string>): RequestOptions {
  return {
    method: 'POST',
    // The name, not the address: it makes the Host header and, for https, the TLS server name.
    host: bareHost(url),
    port: effectivePort(url),
    path: `${url.pathname}${url.search}`,
    headers,
    lookup: pinnedLookup(addresses),
    // A fresh connection per attempt: a pooled socket could lead to an address checked earlier.
    agent: false,
  };
}

/**
 * Sends the request and reads the answer, all within `timeoutMs`. A 2xx counts once its body
 * (read and dropped) has ended; any other status fails at once with that status; errors and the
 * deadline fail with the status seen so far (null before the answer's head).
 */
function exchange(protocol: string, options: RequestOptions, body: string, timeoutMs: number): Promise<DeliveryResult> {
  return new Promise((resolve) => {
    const send = protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(options);
    let status: number | null = null;
    let settled = false;
    const settle = (result: DeliveryResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => settle(failure(status, 'the receiver did not answer in time')), Math.max(0, timeoutMs));
    // Kept for the request's whole life: destroying it may still report an error, which must not go unhandled.
    req.on('error', (err) => settle(failure(status, `the request failed (${errorCode(err)})`)));
    req.on('response', (res) => {
      status = res.statusCode ?? null;
      readAnswer(res, settle);
    });
    req.end(body);
  });
}

function readAnswer(res: IncomingMessage, settle: (result: DeliveryResult) => void): void {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    const why = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
    settle(failure(status, `the receiver answered ${status}${why}`));
    return;
  }
  res.on('end', () => settle({ delivered: true, status }));
  res.on('error', (err) => settle(failure(status, `the answer was cut short (${errorCode(err)})`)));
  res.on('close', () => {
    if (!res.complete) settle(failure(status, 'the answer was cut short'));
  });
  res.resume();
}

/** An error's code (ECONNREFUSED …) or name: never its message, which may quote the URL. */
function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.name : 'unknown error';
}
