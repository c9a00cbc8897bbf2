/**
 * The transport limits of docs/api.md §4, on each HTTP engine in turn (whatever
 * AUTH_TEST_HTTP_ENGINE says): a head over 16 KiB is 431 or closed, a URL over 8 KiB 414 or
 * closed, a repeated Content-Length or Content-Length with Transfer-Encoding 400 (or closed) and
 * nothing written, a request that does not arrive within 10 s closed (408 where an answer can
 * still go out), and none of it a 500, a crash or a change to what is stored. Also the peer
 * address of the engine port (docs/api.md §11), from an engine app started directly.
 *
 * The slow-client cases take 10 to 12 s each: every case of both engines runs concurrently.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { chooseEngine, type EngineName } from '../../src/http/engine/index.ts';
import { canonicalAddress, peerAddress } from '../../src/http/engine/peer-address.ts';
import type { EngineResponse } from '../../src/http/engine/port.ts';
import { loadUws } from '../../src/http/engine/uws/index.ts';
import { exchange, type Exchange } from '../helpers/raw-socket.ts';
import { ROOT, startServer, type RunningServer } from '../helpers/server.ts';
import { sleep } from '../helpers/wait.ts';

const uwsMissing = 'uws' in loadUws() ? undefined : 'uWebSockets.js has no native build here';
/** The installed release: the bundled 20.30 build, or a 20.5x release swapped in (CI's Debian 13 run). */
const uwsRelease = (JSON.parse(readFileSync(`${ROOT}/node_modules/uWebSockets.js/package.json`, 'utf8')) as { version: string }).version;
const uws5x = /^20\.[5-9]\d\./.test(uwsRelease);
/** How long a test waits for the server to cut a stalled request: it does after about 10 s, and a wait is no place to time it. */
const SERVER_CUT_WAIT_MS = 30_000;

/**
 * What uWebSockets.js decides before the service sees the request, and so cannot be made to
 * match node:http's answer (src/http/engine/uws/guard.ts): `todo` on uws, a failure on node.
 */
const libraryLimits = {
  http10: `uWebSockets.js ${uwsRelease} refuses HTTP/1.0 in its own parser (20.5x: its HTML 505; 20.30: no answer)`,
  shortChunk: `uWebSockets.js ${uwsRelease} skips the two bytes after each chunk's data without checking them, so a short chunk is never seen`,
  splitHead: `uWebSockets.js ${uwsRelease} closes a head over 4 KiB that spans several reads (it reads no UWS_HTTP_MAX_HEADERS_SIZE)`,
  slowHead: `uWebSockets.js ${uwsRelease} resets its head timer on every byte and cuts a trickled head after about 30 s; no connection-level hook reaches JavaScript`,
};
const onUws = (engine: EngineName, limit: string, applies = true): { todo?: string } => (engine === 'uws' && applies ? { todo: limit } : {});

const ENGINES: ReadonlyArray<{ name: EngineName; skip: string | undefined }> = [
  { name: 'uws', skip: uwsMissing },
  { name: 'node', skip: undefined },
];

/**
 * GET and HEAD on uWS run bare, with nothing in front of the handler (the hot path), and uWS
 * itself does not limit a head or URL that reaches it in one read: see src/http/engine/uws/guard.ts.
 */
/** The request line and headers, ending with the blank line. */
function head(requestLine: string, ...fields: string[]): string {
  return `${requestLine}\r\nHost: 127.0.0.1\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n`;
}

/** The engine answered with the contract's error envelope of `status`, or closed without answering. */
function refusedOrClosed(x: Exchange, status: number, what: string): void {
  if (x.answer === undefined) {
    assert.ok(x.closedByServer, `${what}: neither an answer nor a close (${Math.round(x.elapsedMs)} ms)`);
    return;
  }
  assert.equal(x.answer.status, status, `${what}: ${x.answer.status} ${x.answer.body}`);
  const body = x.answer.json as { success?: unknown; code?: unknown; error?: unknown };
  assert.equal(body.success, false, what);
  assert.equal(body.code, status, what);
  assert.equal(typeof body.error, 'string', what);
  assert.match(x.answer.headers.get('content-type') ?? '', /^application\/json/, what);
  assert.ok((x.answer.headers.get('x-request-id') ?? '') !== '', `${what}: X-Request-Id`);
}

/** The tenant of `key` has no roles and revision 0: nothing was written for it. */
async function nothingStored(server: RunningServer, key: string): Promise<void> {
  const roles = await server.client(key).listRoles();
  assert.equal(roles.status, 200);
  assert.deepEqual(roles.data, []);
  assert.equal(roles.revision, 0);
}

describe('transport limits', { concurrency: true }, () => {
  for (const { name: engine, skip } of ENGINES)
    describe(`on ${engine}`, { concurrency: true, skip }, () => {
      let server: RunningServer;
      before(async () => {
        server = await startServer({ env: { AUTH_HTTP_ENGINE: engine } });
      });
      after(async () => {
        assert.equal(server.proc.exitCode, null, `the server is still running:\n${server.output()}`);
        assert.equal(await server.stop(), 0, server.output());
        assert.doesNotMatch(server.output(), /"level":50[,}]/);
      });
      test('a head over 16 KiB is 431 or closed, on a write route and on an unknown path; 15 KiB is fine', async () => {
        const key = randomUUID();
        const pad = `X-Pad: ${'p'.repeat(64 * 1024)}`;
        const write = await exchange(server.port, [head('POST /api/role/big HTTP/1.1', `Authorization: Bearer ${key}`, pad, 'Content-Length: 0')]);
        refusedOrClosed(write, 431, 'POST');
        const whole = head('POST /api/role/big HTTP/1.1', `Authorization: Bearer ${key}`, pad);
        const split = await exchange(server.port, [whole.slice(0, 9000), whole.slice(9000)], { gapMs: 50 });
        refusedOrClosed(split, 431, 'POST, head in two writes');
        refusedOrClosed(await exchange(server.port, [head('GET /nowhere HTTP/1.1', pad)]), 431, 'unknown path');
        await nothingStored(server, key);
        const fine = await exchange(server.port, [
          head('POST /api/role/fine HTTP/1.1', `Authorization: Bearer ${key}`, `X-Pad: ${'p'.repeat(15 * 1024)}`, 'Connection: close'),
        ]);
        assert.equal(fine.answer?.status, 201, fine.answer?.body);
      });

      test('a head over 16 KiB on a read route is 431 or closed', async () => {
        const pad = `X-Pad: ${'p'.repeat(64 * 1024)}`;
        refusedOrClosed(await exchange(server.port, [head('GET /ping HTTP/1.1', pad, 'Connection: close')]), 431, 'GET /ping');
        const list = head('GET /api/roles HTTP/1.1', `Authorization: Bearer ${randomUUID()}`, pad, 'Connection: close');
        refusedOrClosed(await exchange(server.port, [list]), 431, 'GET /api/roles');
      });

      test('a URL over 8 KiB is 414 or closed on a write route and an unknown path; 7 KiB is fine', async () => {
        const key = randomUUID();
        const query = `?pad=${'q'.repeat(9 * 1024)}`;
        refusedOrClosed(await exchange(server.port, [head(`POST /api/role/long${query} HTTP/1.1`, `Authorization: Bearer ${key}`)]), 414, 'POST');
        refusedOrClosed(
          await exchange(server.port, [head(`DELETE /api/role/${'r'.repeat(9 * 1024)} HTTP/1.1`, `Authorization: Bearer ${key}`)]),
          414,
          'DELETE',
        );
        refusedOrClosed(await exchange(server.port, [head(`GET /nowhere/${'n'.repeat(9 * 1024)} HTTP/1.1`)]), 414, 'unknown path');
        await nothingStored(server, key);
        const fine = await exchange(server.port, [
          head(`POST /api/role/fine?pad=${'q'.repeat(7 * 1024)} HTTP/1.1`, `Authorization: Bearer ${key}`, 'Connection: close'),
        ]);
        assert.equal(fine.answer?.status, 201, fine.answer?.body);
      });

      test('a URL over 8 KiB on a read route is 414 or closed', async () => {
        const query = `?pad=${'q'.repeat(9 * 1024)}`;
        const list = head(`GET /api/roles${query} HTTP/1.1`, `Authorization: Bearer ${randomUUID()}`, 'Connection: close');
        refusedOrClosed(await exchange(server.port, [list]), 414, 'GET');
      });

      test('two Content-Length headers (different or equal) are 400, the connection closes, nothing is written', async () => {
        const key = randomUUID();
        const body = '{"description":"smuggled"}';
        for (const lengths of [
          ['0', String(body.length)],
          [String(body.length), '0'],
          [String(body.length), String(body.length)],
        ]) {
          const x = await exchange(server.port, [
            head(
              'POST /api/role/smuggled HTTP/1.1',
              `Authorization: Bearer ${key}`,
              'Content-Type: application/json',
              ...lengths.map((n) => `Content-Length: ${n}`),
            ),
            body,
          ]);
          refusedOrClosed(x, 400, `Content-Length ${lengths.join(' and ')}`);
          assert.ok(x.closedByServer, `Content-Length ${lengths.join(' and ')}: the connection stays open`);
        }
        await nothingStored(server, key);
      });

      test('Content-Length with Transfer-Encoding is 400 or closed, the connection closes, nothing is written', async () => {
        const key = randomUUID();
        const body = '{"description":"smuggled"}';
        const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
        for (const fields of [
          ['Content-Length: 0', 'Transfer-Encoding: chunked'],
          ['Transfer-Encoding: chunked', `Content-Length: ${chunked.length}`],
        ]) {
          const x = await exchange(server.port, [
            head('POST /api/role/smuggled HTTP/1.1', `Authorization: Bearer ${key}`, 'Content-Type: application/json', ...fields),
            chunked,
          ]);
          refusedOrClosed(x, 400, fields.join(', '));
          assert.ok(x.closedByServer, `${fields.join(', ')}: the connection stays open`);
        }
        await nothingStored(server, key);
      });

      test('a head just over 16 KiB gets the JSON 431 envelope and the connection closes', async () => {
        const x = await exchange(server.port, [head('GET /ping HTTP/1.1', `X-Pad: ${'p'.repeat(17 * 1024)}`)]);
        assert.ok(x.answer !== undefined, `no answer (closed: ${x.closedByServer})`);
        refusedOrClosed(x, 431, 'a 17 KiB head');
        assert.ok(x.closedByServer, 'the connection stays open');
      });

      test('a 15 KiB head sent in two writes is served', onUws(engine, libraryLimits.splitHead, !uws5x), async () => {
        const whole = head('GET /ping HTTP/1.1', `X-Pad: ${'p'.repeat(15 * 1024)}`, 'Connection: close');
        const x = await exchange(server.port, [whole.slice(0, 6000), whole.slice(6000)], { gapMs: 50 });
        assert.equal(x.answer?.status, 200, x.answer?.body ?? `no answer (closed: ${x.closedByServer})`);
      });

      test('answers to HEAD carry no body: a keep-alive client reads the next answer on the same connection', async (t) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        t.after(() => agent.destroy());
        const sockets = new Set<unknown>();
        const ask = (method: string, path: string): Promise<{ status: number; length: string | undefined; body: string }> =>
          new Promise((resolve, reject) => {
            const req = request({ host: '127.0.0.1', port: server.port, method, path, agent }, (res) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => (body += c));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, length: res.headers['content-length'], body }));
            });
            req.on('socket', (socket) => sockets.add(socket));
            req.on('error', reject);
            req.end();
          });
        for (const [path, status] of [
          ['/nowhere', 404],
          ['/api/role/some-role', 405],
          ['/nowhere/either', 404],
        ] as const) {
          const answer = await ask('HEAD', path);
          assert.equal(answer.status, status, path);
          assert.equal(answer.body, '', path);
          assert.ok(Number(answer.length) > 0, `${path}: the Content-Length its body would have, not ${answer.length}`);
        }
        const ping = await ask('GET', '/ping');
        assert.equal(ping.status, 200);
        assert.equal((JSON.parse(ping.body) as { status: string }).status, 'ok');
        assert.equal(sockets.size, 1, 'every request went over one connection');
      });

      test('an HTTP/1.0 request is answered like an HTTP/1.1 one, and the connection closes', onUws(engine, libraryLimits.http10), async () => {
        const x = await exchange(server.port, ['GET /ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n']);
        assert.equal(x.answer?.status, 200, x.answer?.body ?? `no answer (closed: ${x.closedByServer})`);
        assert.equal((x.answer?.json as { status?: string } | undefined)?.status, 'ok');
        assert.ok(x.closedByServer, 'the connection stays open');
      });

      test('a chunk shorter than its declared size is 400, and nothing is written', onUws(engine, libraryLimits.shortChunk), async () => {
        const key = randomUUID();
        const data = '{"description":"short"}';
        const body = `${(data.length + 1).toString(16)}\r\n${data}\r\n0\r\n\r\n`;
        const start = head('POST /api/role/short HTTP/1.1', `Authorization: Bearer ${key}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked');
        const x = await exchange(server.port, [start + body]);
        refusedOrClosed(x, 400, 'a short chunk');
        assert.ok(x.answer !== undefined, `no answer (closed: ${x.closedByServer})`);
        await nothingStored(server, key);
      });

      test(
        'a head sent a byte a second is cut off after about 10 s, and holds nothing up meanwhile',
        onUws(engine, libraryLimits.slowHead, uws5x),
        async () => {
          const bytes = [...head('GET /ping HTTP/1.1', 'X-Slow: slowly-slowly-slowly-slowly-slowly')];
          const slow = exchange(server.port, bytes, { gapMs: 1000, timeoutMs: SERVER_CUT_WAIT_MS });
          await sleep(2000);
          const ping = await server.client().ping();
          assert.equal(ping.status, 200, 'another request is answered meanwhile');
          const x = await slow;
          assert.ok(!x.sentAll, 'the whole head got through');
          assert.ok(x.closedByServer && x.elapsedMs > 7000, `closed by the server, not before its timeout: after ${Math.round(x.elapsedMs)} ms`);
          if (x.answer !== undefined) refusedOrClosed(x, 408, 'slow head');
        },
      );

      test('a body sent a byte a second is answered 408 or closed after about 10 s; nothing is written', async () => {
        const key = randomUUID();
        const body = '{"description":"slowly"}';
        const start = head('POST /api/role/slow HTTP/1.1', `Authorization: Bearer ${key}`, 'Content-Type: application/json', `Content-Length: ${body.length}`);
        const x = await exchange(server.port, [start, ...body], { gapMs: 1000, timeoutMs: SERVER_CUT_WAIT_MS });
        assert.ok(!x.sentAll, 'the whole body got through');
        assert.ok(x.closedByServer && x.elapsedMs > 7000, `closed by the server, not before its timeout: after ${Math.round(x.elapsedMs)} ms`);
        refusedOrClosed(x, 408, 'slow body');
        await nothingStored(server, key);
      });

      test('a body that stops half-way is answered 408 or closed after about 10 s; nothing is written', async () => {
        const key = randomUUID();
        const body = '{"description":"never finished"}';
        const start = head(
          'POST /api/role/stalled HTTP/1.1',
          `Authorization: Bearer ${key}`,
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
        );
        const x = await exchange(server.port, [start + body.slice(0, 10)], { timeoutMs: SERVER_CUT_WAIT_MS });
        assert.ok(x.closedByServer && x.elapsedMs > 7000, `closed by the server, not before its timeout: after ${Math.round(x.elapsedMs)} ms`);
        refusedOrClosed(x, 408, 'stalled body');
        await nothingStored(server, key);
      });
    });
});

describe('the peer address of the engine port', { concurrency: true }, () => {
  test('IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 compressed (RFC 5952)', () => {
    const cases: Array<[string, string]> = [
      ['127.0.0.1', '127.0.0.1'],
      ['0000:0000:0000:0000:0000:ffff:7f00:0001', '127.0.0.1'],
      ['::ffff:10.1.2.3', '10.1.2.3'],
      ['0000:0000:0000:0000:0000:0000:0000:0001', '::1'],
      ['::1', '::1'],
      ['2001:0DB8:0000:0000:0000:0000:0002:0001', '2001:db8::2:1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      ['fe80::1%eth0', 'fe80::1%eth0'],
    ];
    for (const [text, want] of cases) assert.equal(canonicalAddress(text), want, text);
  });

  for (const { name: engine, skip } of ENGINES) {
    test(`${engine}: a loopback client is 127.0.0.1, or ::1 over IPv6, on GET and POST handlers`, { skip }, async (t) => {
      const app = chooseEngine(engine).createApp();
      const seen = (res: EngineResponse): void => void res.end(peerAddress(res));
      app.on('GET', '/ip', seen);
      app.on('POST', '/ip', seen);
      app.fallback((res) => void res.end('none'));
      const listener = await app.listen('::', 0).catch(() => app.listen('127.0.0.1', 0));
      t.after(() => {
        listener.stopAccepting();
        listener.closeConnections();
      });
      const ask = async (host: string, method: string): Promise<string> => (await fetch(`http://${host}:${listener.port}/ip`, { method })).text();
      assert.equal(await ask('127.0.0.1', 'GET'), '127.0.0.1');
      assert.equal(await ask('127.0.0.1', 'POST'), '127.0.0.1');
      const v6 = await ask('[::1]', 'GET').catch(() => undefined); // where this host has IPv6
      if (v6 !== undefined) assert.equal(v6, '::1');
    });
  }
});
