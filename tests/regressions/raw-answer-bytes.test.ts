// An answer written by node:http's fallback for a request target with raw bytes outside ASCII
// (src/http/engine/node/raw-request.ts) sends its body as bytes: a byte body used to be read as
// latin1 text and written as UTF-8, so each byte from 0x80 up went out as two and the body ran
// past its Content-Length (the next bytes on the connection would have been read as an answer).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { RawResponse } from '../../src/http/engine/node/raw-request.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

/** Everything a peer receives until it closes, and the answer read from it by its Content-Length. */
interface Received {
  readonly all: Buffer;
  readonly status: string;
  readonly headers: ReadonlyMap<string, string>;
  /** The bytes after the head, all of them (not cut at Content-Length). */
  readonly body: Buffer;
}

function parse(all: Buffer): Received {
  const end = all.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no head in ${JSON.stringify(all.toString('latin1'))}`);
  const [status = '', ...lines] = all.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  return { all, status, headers, body: all.subarray(end + 4) };
}

/** Sends `request` to 127.0.0.1:`port` and resolves with all it got back before the close. */
function exchange(port: number, request: Buffer): Promise<Received> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(parse(Buffer.concat(chunks))));
  });
}

test('RawResponse sends a byte body as its bytes, Content-Length counting them', async () => {
  const text = '{"description":"café ☕ 日本"}';
  const bytes = new Uint8Array(Buffer.from(text, 'utf8'));
  const server = createServer((socket: Socket) => {
    new RawResponse(socket, Buffer.alloc(0)).writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const got = await exchange((server.address() as AddressInfo).port, Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    assert.equal(got.status, 'HTTP/1.1 200 OK');
    assert.equal(got.headers.get('content-length'), String(bytes.byteLength));
    assert.deepEqual([...got.body], [...bytes], 'the body is the bytes given, nothing more');
    assert.equal(got.body.toString('utf8'), text);
  } finally {
    server.close();
  }
});

test('RawResponse sends a text body in UTF-8, Content-Length counting its bytes', async () => {
  const text = '{"message":"naïve — ünïcödé 😀"}';
  const server = createServer((socket: Socket) => {
    new RawResponse(socket, Buffer.alloc(0)).writeStatus('200 OK').end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const got = await exchange((server.address() as AddressInfo).port, Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    assert.equal(got.headers.get('content-length'), String(Buffer.byteLength(text, 'utf8')));
    assert.equal(got.body.toString('utf8'), text);
  } finally {
    server.close();
  }
});

let server: RunningServer;
const key = randomUUID();

before(async () => {
  server = await startServer({ env: { AUTH_HTTP_ENGINE: 'node' } });
});

after(async () => {
  await server.stop();
});

test('node:http: an answer with text outside ASCII to a raw request target arrives whole', async () => {
  const description = 'café ☕ 日本 😀';
  const created = await server.client(key).createRole('barista', { description });
  assert.equal(created.status, 201);
  // A raw é (0xC3 0xA9) in the query: node:http refuses the head, the fallback reads and routes it.
  const head = Buffer.from(`GET /api/roles?note= HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`, 'latin1');
  const at = head.indexOf(' HTTP/1.1');
  const request = Buffer.concat([head.subarray(0, at), Buffer.from([0xc3, 0xa9]), head.subarray(at)]);
  const got = await exchange(server.port, request);
  assert.equal(got.status, 'HTTP/1.1 200 OK', got.all.toString('utf8'));
  assert.equal(got.headers.get('connection'), 'close', 'answered by the fallback, which closes');
  assert.equal(got.headers.get('content-length'), String(got.body.length), 'Content-Length counts the bytes sent');
  const answer = JSON.parse(got.body.toString('utf8')) as { data: Array<{ role: string; description: string }> };
  assert.deepEqual(answer.data, [{ role: 'barista', description }]);
});
