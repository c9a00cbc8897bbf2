/**
 * One HTTP/1.1 exchange over a bare TCP socket, byte for byte as the test writes it: for requests
 * node:http and fetch would refuse to send (repeated Content-Length, oversized heads), and for
 * clients that send slowly. It reports what the server answered, and whether and when the server
 * closed the connection.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  /** Lower-case names; the first value of each. */
  headers: Map<string, string>;
  body: string;
  /** The body parsed as JSON, when it is. */
  json: unknown;
}

export interface Exchange {
  /** The first response, when a complete one arrived (with a Content-Length). */
  answer: RawAnswer | undefined;
  /** The server ended or reset the connection (before the client gave up). */
  closedByServer: boolean;
  /** From connecting to the server's close, or to giving up. */
  elapsedMs: number;
  /** Whether every part was written before the server closed. */
  sentAll: boolean;
}

export interface ExchangeOptions {
  /** Pause between two parts (ms); 0 writes them back to back. */
  gapMs?: number;
  /** Give up (and close from this side) after this long; default 5000 ms. */
  timeoutMs?: number;
}

/** Writes `parts` to 127.0.0.1:`port` and waits until the server closes the connection or `timeoutMs` passes. */
export function exchange(port: number, parts: ReadonlyArray<string | Buffer>, options: ExchangeOptions = {}): Promise<Exchange> {
  const { gapMs = 0, timeoutMs = 5000 } = options;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const started = performance.now();
    const chunks: Buffer[] = [];
    let next = 0;
    let done = false;
    const finish = (closedByServer: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(giveUp);
      clearTimeout(pacing);
      socket.destroy();
      resolve({ answer: parseAnswer(Buffer.concat(chunks)), closedByServer, elapsedMs: performance.now() - started, sentAll: next >= parts.length });
    };
    const giveUp = setTimeout(() => finish(false), timeoutMs);
    let pacing: NodeJS.Timeout | undefined;
    const writeNext = (): void => {
      while (!done && next < parts.length) {
        socket.write(parts[next++] as string | Buffer);
        if (gapMs > 0) {
          pacing = setTimeout(writeNext, gapMs);
          return;
        }
      }
    };
    socket.on('connect', writeNext);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true)); // ECONNRESET, EPIPE: the server closed
  });
}

/** The first response in `bytes`, if it is complete and framed by Content-Length. */
function parseAnswer(bytes: Buffer): RawAnswer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (colon > 0 && !headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  const length = Number(headers.get('content-length') ?? 'NaN');
  const rest = bytes.subarray(end + 4);
  if (!Number.isSafeInteger(length) || rest.length < length) return undefined;
  const body = rest.subarray(0, length).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body, json };
}
