import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { appError } from '../../../errors/index.ts';
import {
  HEAD_TOO_LARGE,
  LENGTH_CONFLICT,
  MAX_HEAD_BYTES,
  MAX_URL_BYTES,
  NOT_HTTP,
  REQUEST_TIMEOUT_MS,
  Refusals,
  TOO_SLOW,
  URL_TOO_LONG,
  type Refusal,
} from '../limits.ts';
import type { EngineApp, Listener } from '../port.ts';
import { lowerMethod, NodeRequest, NodeResponse, queryValue } from './exchange.ts';
import { rawHeadProblem, RawRequest, RawResponse, readRawHead } from './raw-request.ts';
import { Router } from './router.ts';

/** uWS closes a connection idle for 10 s; so does this adapter. */
const IDLE_TIMEOUT_MS = 10_000;

/**
 * The node:http adapter: the same routes, answers and connection handling as the uWS adapter,
 * on any Node.js. Where Node.js has `reusePort` (22.12 and later) every worker process binds the
 * port itself and the kernel spreads connections, as with uWS; on older ones the cluster module
 * shares one listening socket among the workers.
 */
export function nodeApp(): EngineApp {
  const router = new Router();
  const refusals = new Refusals();
  const server = createServer({
    keepAliveTimeout: IDLE_TIMEOUT_MS,
    // Both counted from the first byte of the request; checked every second, so 10 to 11 s.
    requestTimeout: REQUEST_TIMEOUT_MS,
    headersTimeout: REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: 1000,
    // Set, not left to the default (the same today), which --max-http-header-size would change.
    maxHeaderSize: MAX_HEAD_BYTES,
    requireHostHeader: false, // uWS answers requests without Host too
    noDelay: true,
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const response = new NodeResponse(res, req);
    if (url.length > MAX_URL_BYTES) return refusals.refuse(response, URL_TOO_LONG, sentRequestId(req));
    const match = router.find(lowerMethod(req.method ?? 'GET'), path);
    if (match === undefined) return refusals.refuse(response, appError('ERR_HTTP_NOT_FOUND', { method: req.method ?? '', url: path }), sentRequestId(req));
    match.handler(response, new NodeRequest(req, path, q < 0 ? undefined : url.slice(q + 1), match.params));
  });
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    const head = err.code === 'HPE_INVALID_URL' ? readRawHead(err.rawPacket) : undefined;
    const problem = head === undefined ? undefined : rawHeadProblem(head);
    const match = head === undefined || problem !== undefined ? undefined : router.find(head.method, head.path);
    if (head === undefined || match === undefined || !socket.writable)
      return answerClientError(refusals, err, socket, problem, head?.headers.get('x-request-id'));
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
        stopAccepting: () => closeOnceAccepted(server),
        closeConnections: () => server.closeAllConnections(),
      });
    });
  });
}

/** Connections may still be waiting in the kernel's queue this long after the last one was taken. */
const ACCEPT_QUIET_MS = 50;
/** ...but the listener closes this long after shutdown began, however busy. */
const ACCEPT_AT_MOST_MS = 500;

/**
 * Closes the listening socket once the connections already queued by the kernel are taken:
 * closing it at once resets them (ECONNRESET for requests sent before the signal), so it closes
 * when no connection came for {@link ACCEPT_QUIET_MS}, at most {@link ACCEPT_AT_MOST_MS} after
 * the call. Those taken meanwhile are served like any other during the drain. net's close, not
 * http's: since Node.js 19 http's also drops idle keep-alive connections at once, where uWS (and
 * the contract's drain) still answers what arrives on them.
 */
function closeOnceAccepted(server: Server): void {
  const began = performance.now();
  let last = began;
  const taken = (): void => {
    last = performance.now();
  };
  server.on('connection', taken);
  const check = (): void => {
    const now = performance.now();
    if (now - last < ACCEPT_QUIET_MS && now - began < ACCEPT_AT_MOST_MS) {
      setTimeout(check, ACCEPT_QUIET_MS).unref();
      return;
    }
    server.off('connection', taken);
    NetServer.prototype.close.call(server);
  };
  setTimeout(check, ACCEPT_QUIET_MS).unref();
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

function sentRequestId(req: IncomingMessage): string {
  const id = req.headers['x-request-id'];
  return typeof id === 'string' ? id : '';
}

/** node:http's parse errors that are the contract's transport limits (llhttp's codes). */
const CLIENT_ERRORS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: HEAD_TOO_LARGE,
  HPE_UNEXPECTED_CONTENT_LENGTH: LENGTH_CONFLICT, // a repeated Content-Length
  HPE_INVALID_TRANSFER_ENCODING: LENGTH_CONFLICT, // with Content-Length, or not ending in chunked
  ERR_HTTP_REQUEST_TIMEOUT: TOO_SLOW,
};

/**
 * A request node:http could not parse (or `problem`, found in a head read by hand): answered
 * where possible, and the connection closed.
 */
function answerClientError(refusals: Refusals, err: NodeJS.ErrnoException, socket: Socket, problem?: Refusal, sentRequestId?: string): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  socket.end(refusals.raw(problem ?? CLIENT_ERRORS[err.code ?? ''] ?? NOT_HTTP, sentRequestId));
}
