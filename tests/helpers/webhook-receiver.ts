/**
 * A loopback receiver of workflow webhooks (docs/api.md §16): node:http on 127.0.0.1, a port of
 * the kernel's choice. Every request is recorded as it arrived (headers, raw body, time), and
 * answered by the behaviour set for its path (default 200), so that one receiver serves several
 * schedules, each with its own URL and its own way of failing. Signatures are checked with the
 * `standardwebhooks` package, an implementation of the specification independent of the service.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Received {
  readonly path: string;
  readonly method: string;
  readonly id: string | undefined;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
  readonly contentType: string | undefined;
  /** The body exactly as it arrived (UTF-8): the signature covers these bytes. */
  readonly body: string;
  /** Epoch ms when the request was complete. */
  readonly at: number;
  /** The 1-based count of requests with this webhook-id so far, this one included. */
  readonly attempt: number;
  /** The status the receiver answered. */
  readonly answered: number;
}

/** The status to answer (a Location for redirects, a delay before answering at all) for a request, from its attempt number. */
export type Behaviour = (attempt: number, request: { path: string; id: string | undefined }) => { status: number; location?: string; delayMs?: number };

export interface Receiver {
  readonly port: number;
  /** `127.0.0.1:<port>`: what AUTH_WEBHOOK_ALLOWED_HOSTS lists for it. */
  readonly host: string;
  /** The URL of `path` on this receiver. */
  url(path: string): string;
  /** Sets how requests to `path` are answered from now on. */
  on(path: string, behaviour: Behaviour): void;
  /** Every request so far, in arrival order; only those to `path` when given. */
  received(path?: string): Received[];
  close(): Promise<void>;
}

export const answer =
  (status: number): Behaviour =>
  () => ({ status });

/** Answers `failures` times with `status`, then 200, per webhook-id. */
export const failFirst =
  (failures: number, status = 500): Behaviour =>
  (attempt) => ({ status: attempt <= failures ? status : 200 });

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export async function startReceiver(): Promise<Receiver> {
  const behaviours = new Map<string, Behaviour>();
  const log: Received[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then(
      (body) => {
        const path = (req.url ?? '/').split('?')[0] ?? '/';
        const id = first(req.headers['webhook-id']);
        const attempt = log.filter((r) => r.id !== undefined && r.id === id).length + 1;
        const decided = (behaviours.get(path) ?? answer(200))(attempt, { path, id });
        log.push({
          path,
          method: req.method ?? '',
          id,
          timestamp: first(req.headers['webhook-timestamp']),
          signature: first(req.headers['webhook-signature']),
          contentType: first(req.headers['content-type']),
          body,
          at: Date.now(),
          attempt,
          answered: decided.status,
        });
        const reply = (): void => {
          // The sender may have given up and closed the connection meanwhile.
          if (res.destroyed) return;
          res.writeHead(decided.status, { 'content-type': 'text/plain', ...(decided.location === undefined ? {} : { location: decided.location }) });
          res.end(decided.status < 300 ? 'ok' : 'no');
        };
        if (decided.delayMs === undefined) reply();
        else setTimeout(reply, decided.delayMs).unref();
      },
      () => res.destroy(),
    );
  });
  // Deliveries must not be held up by a kept-alive socket the test never reuses.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    host: `127.0.0.1:${port}`,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    on: (path, behaviour) => void behaviours.set(path, behaviour),
    received: (path) => (path === undefined ? [...log] : log.filter((r) => r.path === path)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The payload of `r` once its signature checks out against `secret` (`whsec_…` as the service
 * returned it); throws (a failed test) when it does not, or when a header is missing.
 */
export function verified(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, {
    'webhook-id': r.id ?? '',
    'webhook-timestamp': r.timestamp ?? '',
    'webhook-signature': r.signature ?? '',
  });
}
