// The Reply is per server: what one server's replies depend on (its drain, its metrics, its access
// log, its CORS policy) is its own, never state of the module shared by every server in the process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AccessLog } from '../../../src/log/access.ts';
import type { Logger } from '../../../src/log/index.ts';
import { textOf, type EngineResponse, type WireText } from '../../../src/http/engine/port.ts';
import { corsPolicy } from '../../../src/http/reply/cors.ts';
import { Reply } from '../../../src/http/reply/reply.ts';
import { NO_REQUEST_METRICS, type RequestMetrics } from '../../../src/metrics/requests.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, enabled: () => false };

/** A response that records what is written to it. */
function recorder(): EngineResponse & { status: string; headers: Array<[string, string]>; body: string | undefined; closed: boolean | undefined } {
  const r = {
    status: '',
    headers: [] as Array<[string, string]>,
    body: undefined as string | undefined,
    closed: undefined as boolean | undefined,
    writeStatus: (s: WireText) => void (r.status = textOf(s)),
    writeHeader: (k: WireText, v: WireText) => void r.headers.push([textOf(k), textOf(v)]),
    end: (body: string | Uint8Array, close?: boolean) => {
      r.body = typeof body === 'string' ? body : Buffer.from(body).toString('latin1');
      r.closed = close === true;
    },
    endWithoutBody: () => void (r.body = ''),
    cork: (fn: () => void) => fn(),
    onAborted: () => undefined,
    onData: () => undefined,
    getRemoteAddressAsText: () => new ArrayBuffer(0),
  };
  return r;
}

function reply(metrics: RequestMetrics = NO_REQUEST_METRICS): Reply {
  return new Reply({ cors: corsPolicy(false, '*'), log: quiet, metrics, access: new AccessLog(0, [], quiet) });
}

const target = (res: EngineResponse, series = -1) => ({ res, requestId: 'r', origin: '', series, startedAt: performance.now() });

test("a server's drain closes its own connections, not another server's", () => {
  const a = reply();
  const b = reply();
  a.drain.begin();
  const ra = recorder();
  const rb = recorder();
  a.send(target(ra), 200, '{}', undefined);
  b.send(target(rb), 200, '{}', undefined);
  assert.equal(ra.closed, true, 'draining: the answer closes its connection');
  assert.equal(rb.closed, false, 'the other server is not draining');
  assert.equal(b.drain.draining, false);
});

test('answers are counted in the metrics of their own server', () => {
  const counted: number[] = [];
  const a = reply({ ...NO_REQUEST_METRICS, answered: (_series, status) => void counted.push(status) });
  const b = reply();
  a.send(target(recorder(), 0), 201, '{}', 3);
  b.send(target(recorder(), 0), 404, '{}', undefined);
  a.send(target(recorder()), 200, '{}', undefined); // outside /api: not counted
  assert.deepEqual(counted, [201]);
});

test('HEAD answers carry the headers of a GET answer and no body', () => {
  const res = recorder();
  reply().head(target(res), [['Cache-Control', 'public, max-age=300']]);
  assert.equal(res.status, '200 OK');
  assert.equal(res.body, '');
  assert.deepEqual(res.headers.slice(0, 3), [
    ['Content-Type', 'application/json'],
    ['X-Request-Id', 'r'],
    ['Cache-Control', 'public, max-age=300'],
  ]);
});
