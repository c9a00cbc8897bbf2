/**
 * The loopback receiver of the workflow webhooks (CONTRACT.md §10) in `npm run bench:workflows`:
 * node:http on 127.0.0.1, answering 204 at once. Every delivery is checked as it arrives: a POST
 * of `application/json` to the schedule's path, a Standard Webhooks signature that verifies (with
 * the `standardwebhooks` package, independent of the service) against a secret the bench was
 * given, and a body of exactly the contract's seven fields. What it carried is kept, so that the
 * bench can compare it with the run it announces; a problem is kept as a failure of the run.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { WORKFLOW } from './workflow-model.ts';

export const HOOK_PATH = '/hook';
const FIELDS = ['type', 'workflow', 'run_at', 'revision', 'users_count', 'added', 'removed'].sort().join(',');

export interface Delivery {
  /** `webhook-id`: one per run, the same on retries. */
  id: string;
  /** Epoch ms when the body was complete. */
  at: number;
  bytes: number;
  runAt: string;
  revision: number;
  usersCount: number;
  added: string[];
  removed: string[];
}

export interface Receiver {
  /** The webhook URL of the schedule. */
  url: string;
  /** `127.0.0.1:<port>`: what AUTH_WEBHOOK_ALLOWED_HOSTS lists. */
  host: string;
  /** Accepts signatures made with `secret` (`whsec_…`) from now on; a replaced schedule's keep verifying (retries in flight). */
  trust(secret: string): void;
  /** Every verified delivery so far, in arrival order. */
  deliveries(): readonly Delivery[];
  /** What was wrong with a delivery: each is a failure of the run. */
  problems(): readonly string[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const header = (req: IncomingMessage, name: string): string => {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
};

const isNames = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The payload of a delivery whose signature verified, as a Delivery; throws what is wrong with it. */
function judge(secrets: readonly Webhook[], req: IncomingMessage, body: Buffer): Delivery {
  if (req.method !== 'POST' || (req.url ?? '') !== HOOK_PATH) throw new Error(`${req.method ?? ''} ${req.url ?? ''}: not a POST to ${HOOK_PATH}`);
  if (!/^application\/json\b/i.test(header(req, 'content-type'))) throw new Error(`Content-Type ${header(req, 'content-type') || 'missing'}`);
  const headers = { 'webhook-id': header(req, 'webhook-id'), 'webhook-timestamp': header(req, 'webhook-timestamp'), 'webhook-signature': header(req, 'webhook-signature') };
  let payload: unknown;
  for (const hook of secrets) {
    try {
      payload = hook.verify(body, headers);
      break;
    } catch {
      // another secret may have signed it
    }
  }
  if (payload === undefined) throw new Error(`webhook-id ${headers['webhook-id'] || 'missing'}: the signature verifies with no secret the bench was given`);
  const p = payload as Record<string, unknown>;
  const fields = Object.keys(p).sort().join(',');
  if (fields !== FIELDS) throw new Error(`body fields ${fields}, expected ${FIELDS}`);
  if (p.type !== 'workflow.run' || p.workflow !== WORKFLOW) throw new Error(`type ${String(p.type)}, workflow ${String(p.workflow)}`);
  if (typeof p.run_at !== 'string' || !Number.isInteger(p.revision) || !Number.isInteger(p.users_count) || !isNames(p.added) || !isNames(p.removed)) {
    throw new Error(`body of the wrong shape: ${body.toString('utf8').slice(0, 200)}`);
  }
  return { id: headers['webhook-id'], at: Date.now(), bytes: body.length, runAt: p.run_at, revision: p.revision as number, usersCount: p.users_count as number, added: p.added, removed: p.removed };
}

export async function startReceiver(): Promise<Receiver> {
  const secrets: Webhook[] = [];
  const received: Delivery[] = [];
  const problems: string[] = [];
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        try {
          received.push(judge(secrets, req, body));
        } catch (err) {
          problems.push(`webhook delivery: ${err instanceof Error ? err.message : String(err)}`);
        }
        res.writeHead(204).end();
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}${HOOK_PATH}`,
    host: `127.0.0.1:${port}`,
    trust: (secret) => void secrets.unshift(new Webhook(secret)),
    deliveries: () => received,
    problems: () => problems,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
