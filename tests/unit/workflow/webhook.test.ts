import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WebhookHosts } from '../../../src/workflow/allowed-hosts.ts';
import type { DeliveryJob, RunEntry } from '../../../src/workflow/records.ts';
import { newWebhookId, newWebhookSecret } from '../../../src/workflow/secrets.ts';
import { addressRefusal, afterAttempt, deliverOnce, webhookBody, type DeliveryResult, type WebhookTarget } from '../../../src/workflow/webhook.ts';
import { sleep } from '../../helpers/wait.ts';

interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

interface Receiver {
  readonly port: number;
  readonly received: Received[];
  /** TCP connections accepted, requests or not. */
  connections: number;
}

type Answer = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A loopback HTTP receiver that records what reaches it, closed (connections included) after the test. */
async function receiver(t: TestContext, answer: Answer, host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      answer(req, res, body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const r: Receiver = { port: (server.address() as AddressInfo).port, received, connections: 0 };
  server.on('connection', () => r.connections++);
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return r;
}

/** A port with nothing listening: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const ok: Answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');

function stringHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

const RUN: RunEntry = {
  id: 7,
  workflow: 'deploy',
  runAt: '2025-01-02T03:04:05.123456Z',
  revision: 42,
  usersCount: 3,
  added: ['alice', 'bob'],
  removed: ['carol'],
  delivery: { status: 'pending', attempts: 0, lastStatus: null },
};

function targetFor(port: number, path = '/hook?src=rbac'): WebhookTarget {
  return { url: `http://127.0.0.1:${port}${path}`, secret: newWebhookSecret(), webhookId: newWebhookId(), body: webhookBody(RUN) };
}

function assertNotLeaking(result: DeliveryResult, target: WebhookTarget): void {
  const text = JSON.stringify(result);
  assert.ok(!text.includes(target.secret.slice(6)), 'the secret is in the result');
  assert.ok(!text.includes(target.body), 'the body is in the result');
}

test('a delivery is a signed POST that the standardwebhooks library verifies', async (t) => {
  const r = await receiver(t, ok);
  const target = targetFor(r.port);
  const before = Math.floor(Date.now() / 1000);
  const result = await deliverOnce(target, WebhookHosts.parse(`127.0.0.1:${r.port}`));
  assert.deepEqual(result, { delivered: true, status: 200 });
  assert.equal(r.received.length, 1);
  const got = r.received[0] as Received;
  assert.equal(got.method, 'POST');
  assert.equal(got.path, '/hook?src=rbac');
  assert.equal(got.body, target.body);
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.headers['user-agent'], 'rbac-gateway');
  assert.equal(got.headers['webhook-id'], target.webhookId);
  assert.equal(got.headers['host'], `127.0.0.1:${r.port}`);
  const timestamp = Number(got.headers['webhook-timestamp']);
  assert.ok(Number.isInteger(timestamp) && timestamp >= before && timestamp <= Math.floor(Date.now() / 1000), String(timestamp));
  // The receiver's side, with the library a client would use: it throws on any mismatch.
  assert.deepEqual(new Webhook(target.secret).verify(got.body, stringHeaders(got.headers)), JSON.parse(target.body));
  // And the contract's definition, independently of the library.
  const key = Buffer.from(target.secret.slice('whsec_'.length), 'base64');
  const mac = createHmac('sha256', key).update(`${target.webhookId}.${timestamp}.${target.body}`).digest('base64');
  assert.equal(got.headers['webhook-signature'], `v1,${mac}`);
  assert.throws(() => new Webhook(newWebhookSecret()).verify(got.body, stringHeaders(got.headers)), 'another secret does not verify');
});

test('any 2xx is a delivery; the host name is resolved and its address checked', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(204).end());
  const target = { ...targetFor(r.port), url: `http://localhost:${r.port}/` };
  assert.deepEqual(await deliverOnce(target, WebhookHosts.parse('LOCALHOST')), { delivered: true, status: 204 });
  assert.equal(r.received[0]?.headers['host'], `localhost:${r.port}`);
});

test('a 500 is not a delivery, with its status', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(500).end('oops'));
  const target = targetFor(r.port);
  const result = await deliverOnce(target, WebhookHosts.parse('127.0.0.1'));
  assert.equal(result.delivered, false);
  assert.equal(result.status, 500);
  assert.equal(r.received.length, 1);
  assertNotLeaking(result, target);
});

test('a redirect is not followed: the status is the 302', async (t) => {
  const elsewhere = await receiver(t, ok);
  const r = await receiver(t, (_req, res) => res.writeHead(302, { location: `http://127.0.0.1:${elsewhere.port}/stolen` }).end());
  const result = await deliverOnce(targetFor(r.port), WebhookHosts.parse('127.0.0.1'));
  assert.equal(result.delivered, false);
  assert.equal(result.status, 302);
  assert.match(result.reason ?? '', /redirect/);
  await sleep(100);
  assert.equal(elsewhere.connections, 0);
  assert.equal(elsewhere.received.length, 0);
});

test('a receiver that never answers: not delivered once the timeout has passed, status null', { timeout: 30_000 }, async (t) => {
  const r = await receiver(t, () => undefined);
  const started = Date.now();
  const result = await deliverOnce(targetFor(r.port), WebhookHosts.parse('127.0.0.1'), 300);
  const took = Date.now() - started;
  assert.equal(result.delivered, false);
  assert.equal(result.status, null);
  // Not given up before the timeout; that it is given up at all is the answer coming (the test would time out).
  assert.ok(took >= 250, `gave up after ${took} ms, before the 300 ms timeout`);
  assert.equal(r.received.length, 1);
});

test('a 200 whose body never ends is not a delivery: reading it is bounded too', async (t) => {
  const r = await receiver(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
  });
  const started = Date.now();
  const result = await deliverOnce(targetFor(r.port), WebhookHosts.parse('127.0.0.1'), 300);
  assert.equal(result.delivered, false);
  assert.equal(result.status, 200);
  assert.ok(Date.now() - started < 2000);
});

test('a 200 cut short by the receiver is not a delivery', async (t) => {
  const r = await receiver(t, (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('only part', () => res.destroy());
  });
  const result = await deliverOnce(targetFor(r.port), WebhookHosts.parse('127.0.0.1'), 2000);
  assert.equal(result.delivered, false);
  assert.equal(result.status, 200);
});

test('connection refused and a reset: not delivered, status null', async (t) => {
  const port = await closedPort();
  const refused = await deliverOnce(targetFor(port), WebhookHosts.parse('127.0.0.1'));
  assert.equal(refused.delivered, false);
  assert.equal(refused.status, null);
  assert.match(refused.reason ?? '', /ECONNREFUSED/);
  const r = await receiver(t, (req) => req.socket.destroy());
  const reset = await deliverOnce(targetFor(r.port), WebhookHosts.parse('127.0.0.1'));
  assert.deepEqual([reset.delivered, reset.status], [false, null]);
});

test('an https URL speaks TLS: a plain-HTTP receiver there is no delivery', async (t) => {
  const r = await receiver(t, ok);
  const target = { ...targetFor(r.port), url: `https://127.0.0.1:${r.port}/` };
  const result = await deliverOnce(target, WebhookHosts.parse('127.0.0.1'), 2000);
  assert.deepEqual([result.delivered, result.status], [false, null]);
  assert.equal(r.received.length, 0);
});

test('a host that does not resolve: not delivered, status null', async () => {
  const target = { ...targetFor(1), url: 'http://no-such-host.invalid/hook' };
  const result = await deliverOnce(target, WebhookHosts.parse('no-such-host.invalid'), 3000);
  assert.deepEqual([result.delivered, result.status], [false, null]);
  assert.match(result.reason ?? '', /did not resolve/);
});

test('a host not (or no longer) allowed: not delivered, and no connection is made', async (t) => {
  const r = await receiver(t, ok);
  const target = targetFor(r.port);
  const then = WebhookHosts.parse(`127.0.0.1:${r.port}`);
  assert.equal(then.check(target.url).ok, true);
  for (const now of [
    WebhookHosts.parse(`127.0.0.1:${r.port + 1}`),
    WebhookHosts.parse('hooks.example.com'),
    WebhookHosts.parse(undefined),
    WebhookHosts.parse('localhost'),
  ]) {
    const result = await deliverOnce(target, now);
    assert.deepEqual([result.delivered, result.status], [false, null]);
    assert.match(result.reason ?? '', /AUTH_WEBHOOK_ALLOWED_HOSTS/);
  }
  const bad = await deliverOnce({ ...target, url: `http://user:pw@127.0.0.1:${r.port}/` }, then);
  assert.deepEqual([bad.delivered, bad.status], [false, null]);
  await sleep(50);
  assert.equal(r.connections, 0);
});

test('an unspecified address is refused even when listed (0.0.0.0 reaches the local host on Linux)', async (t) => {
  const r = await receiver(t, ok);
  for (const host of ['0.0.0.0', '0.1.2.3', '[::]']) {
    const result = await deliverOnce({ ...targetFor(r.port), url: `http://${host}:${r.port}/` }, WebhookHosts.parse(host));
    assert.deepEqual([result.delivered, result.status], [false, null], host);
    assert.match(result.reason ?? '', /unspecified/);
  }
  assert.equal(r.connections, 0);
});

test('an unusable secret is not a delivery, and it is not repeated', async (t) => {
  const r = await receiver(t, ok);
  const target = { ...targetFor(r.port), secret: 'whsec_not*base64!' };
  const result = await deliverOnce(target, WebhookHosts.parse('127.0.0.1'));
  assert.deepEqual([result.delivered, result.status], [false, null]);
  assert.ok(!(result.reason ?? '').includes('not*base64'));
  assert.equal(r.connections, 0);
});

test('resolved addresses: never unspecified, multicast or broadcast; link-local only as a listed literal', () => {
  for (const address of ['0.0.0.0', '0.9.9.9', '::', '224.0.0.1', '239.255.255.250', '255.255.255.255', 'ff02::1', '::ffff:0.0.0.0', '::ffff:224.0.0.1']) {
    assert.notEqual(addressRefusal(address, false), undefined, address);
    assert.notEqual(addressRefusal(address, true), undefined, `${address} (literal)`);
  }
  for (const address of ['169.254.169.254', '169.254.0.1', 'fe80::1', 'febf::1', '::ffff:169.254.169.254']) {
    assert.match(addressRefusal(address, false) ?? '', /link-local/, address);
    assert.equal(addressRefusal(address, true), undefined, `${address} (literal)`);
  }
  for (const address of ['127.0.0.1', '10.0.0.7', '192.168.1.1', '93.184.216.34', '::1', '2001:db8::1', 'fec0::1']) {
    assert.equal(addressRefusal(address, false), undefined, address);
  }
  assert.notEqual(addressRefusal('not-an-ip', false), undefined);
});

test('a bracketed IPv6 host is called at that address', async (t) => {
  let r: Receiver;
  try {
    r = await receiver(t, ok, '::1');
  } catch {
    t.skip('no IPv6 loopback here');
    return;
  }
  const target = { ...targetFor(r.port), url: `http://[::1]:${r.port}/v6` };
  assert.deepEqual(await deliverOnce(target, WebhookHosts.parse(`[::1]:${r.port}`)), { delivered: true, status: 200 });
  assert.equal(r.received[0]?.headers['host'], `[::1]:${r.port}`);
});

test('webhookBody: exactly the contract keys, in order', () => {
  const body = webhookBody(RUN);
  assert.equal(
    body,
    '{"type":"workflow.run","workflow":"deploy","run_at":"2025-01-02T03:04:05.123456Z","revision":42,"users_count":3,"added":["alice","bob"],"removed":["carol"]}',
  );
  assert.deepEqual(Object.keys(JSON.parse(body) as object), ['type', 'workflow', 'run_at', 'revision', 'users_count', 'added', 'removed']);
  const empty = webhookBody({ ...RUN, added: [], removed: [], usersCount: 0 });
  assert.deepEqual(JSON.parse(empty), { type: 'workflow.run', workflow: 'deploy', run_at: RUN.runAt, revision: 42, users_count: 0, added: [], removed: [] });
});

function jobAfter(attempts: number, lastStatus: number | null = null): DeliveryJob {
  return {
    run: { ...RUN, delivery: { status: 'pending', attempts, lastStatus } },
    tenant: 'tenant-1' as DeliveryJob['tenant'],
    webhookUrl: 'http://127.0.0.1/',
    webhookSecret: newWebhookSecret(),
    webhookId: newWebhookId(),
  };
}

test('afterAttempt: retries after 1 s, 5 s and 25 s, then fails', () => {
  const now = 1_700_000_000_000;
  const failed = { delivered: false, status: 503 };
  assert.deepEqual(afterAttempt(jobAfter(0), failed, now), { runId: 7, status: 'pending', attempts: 1, lastStatus: 503, nextAttemptAtMs: now + 1_000 });
  assert.deepEqual(afterAttempt(jobAfter(1), failed, now), { runId: 7, status: 'pending', attempts: 2, lastStatus: 503, nextAttemptAtMs: now + 5_000 });
  assert.deepEqual(afterAttempt(jobAfter(2), { delivered: false, status: null }, now), {
    runId: 7,
    status: 'pending',
    attempts: 3,
    lastStatus: null,
    nextAttemptAtMs: now + 25_000,
  });
  assert.deepEqual(afterAttempt(jobAfter(3, 503), { delivered: false, status: null }, now), {
    runId: 7,
    status: 'failed',
    attempts: 4,
    lastStatus: null,
    nextAttemptAtMs: null,
  });
  assert.equal(afterAttempt(jobAfter(9), failed, now).status, 'failed');
});

test('afterAttempt: a delivery on any attempt is final', () => {
  for (const attempts of [0, 1, 3]) {
    assert.deepEqual(afterAttempt(jobAfter(attempts, 500), { delivered: true, status: 202 }, 5), {
      runId: 7,
      status: 'delivered',
      attempts: attempts + 1,
      lastStatus: 202,
      nextAttemptAtMs: null,
    });
  }
});

test('secrets are whsec_ and 32 random bytes; ids are unique and not shaped like a UUID', () => {
  const secrets = new Set<string>();
  const ids = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const secret = newWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    const key = Buffer.from(secret.slice(6), 'base64');
    assert.equal(key.length, 32);
    assert.equal(key.toString('base64'), secret.slice(6));
    secrets.add(secret);
    const id = newWebhookId();
    assert.match(id, /^msg_[0-9a-f]{32}$/);
    assert.doesNotMatch(id, /[0-9a-f]{8}-[0-9a-f]{4}-/i);
    ids.add(id);
  }
  assert.equal(secrets.size, 200);
  assert.equal(ids.size, 200);
});
