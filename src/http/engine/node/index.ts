import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { STATUS_TEXT } from '../../../errors/index.ts';
import { errorBody } from '../../reply.ts';
import type { EngineApp, Listener } from '../port.ts';
import { lowerMethod, NodeRequest, NodeResponse, queryValue } from './exchange.ts';
import { RawRequest, RawResponse, readRawHead } from './raw-request.ts';
import { Router } from './router.ts';

/** uWS closes a connection idle for 10 s; so does this adapter. */
const IDLE_TIMEOUT_MS = 10_000;
/** CONTRACT.md §4: headers and body must arrive within 10 s. */
const REQUEST_TIMEOUT_MS = 10_000;
/** CONTRACT.md §4: a URL over 8 KiB is 414. */
const MAX_URL_BYTES = 8192;

/**
 * The node:http adapter: the same routes, answers and connection handling as the uWS adapter,
 * on any Node.js. Where Node.js has `reusePort` (22.12 and later) every worker process binds the
 * port itself and the kernel spreads connections, as with uWS; on older ones the cluster module
 * shares one listening socket among the workers.
 */
export function nodeApp(): EngineApp {
  const router = new Router();
  const server = createServer({
    keepAliveTimeout: IDLE_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    headersTimeout: REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: 1000,
    requireHostHeader: false, // uWS answers requests without Host too
    noDelay: true,
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (url.length > MAX_URL_BYTES) return refuse(res, 414, `the URL must be at most ${MAX_URL_BYTES} bytes`);
    const match = router.find(lowerMethod(req.method ?? 'GET'), path);
    if (match === undefined) return refuse(res, 404, `no route ${req.method ?? ''} ${path}`);
    match.handler(new NodeResponse(res, req), new NodeRequest(req, path, q < 0 ? undefined : url.slice(q + 1), match.params));
  });
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    const head = err.code === 'HPE_INVALID_URL' ? readRawHead(err.rawPacket) : undefined;
    const match = head === undefined ? undefined : router.find(head.method, head.path);
    if (head === undefined || match === undefined || !socket.writable) return answerClientError(err, socket);
    match.handler(new RawResponse(socket, head.body), new RawRequest(head, match.params, queryValue));
  });
  return {
    on: (method, pattern, handler) => router.on(method, pattern, handler),
    otherMethods: (pattern, handler) => router.otherMethods(pattern, handler),
    fallback: (handler) => router.fallback(handler),
    listen: (host, port) => listen(server, host, port),
  };
}

function listen(server: Server, host: string, port: number): Promise<Listener> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new Error(`cannot listen on ${host}:${port} (${err.code ?? err.message})`)));
    const own = cluster.isWorker && hasReusePort();
    server.listen({ host, port, ...(own ? { exclusive: true, reusePort: true } : {}) }, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : port,
        // net's close, not http's: since Node.js 19 http's also drops idle keep-alive connections
        // at once, where uWS (and the contract's drain) still answers what arrives on them.
        stopAccepting: () => void NetServer.prototype.close.call(server),
        closeConnections: () => server.closeAllConnections(),
      });
    });
  });
}

/**
 * Without `reusePort`, workers share the primary's listening socket. Each accepts from it itself
 * (SCHED_NONE), as each uWS worker accepts from its own: with the cluster module's default
 * round-robin the primary accepts and hands connections over, and one it accepted just as
 * shutdown began reached workers that had stopped listening and was reset.
 */
export function prepareNodeCluster(): void {
  if (!hasReusePort()) cluster.schedulingPolicy = cluster.SCHED_NONE;
}

/** `reusePort` came with Node.js 22.12 and 23.1. */
function hasReusePort(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

/** For what node:http refuses before routing: the contract's envelope instead of a bare status. */
function refuse(res: ServerResponse, status: number, error: string): void {
  const body = errorBody(status, error);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  res.end(body);
}

const CLIENT_ERRORS: Record<string, readonly [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'the request headers must be at most 16 KiB in all'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request did not arrive within 10 s'],
};

/** A request node:http could not parse: answered where possible, and the connection closed. */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, error] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'the request is not valid HTTP/1.1'];
  const body = errorBody(status, error);
  socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
