/**
 * The one place the credential lives: a variable of this module, inside the typed client. It is
 * never written to storage, a cookie, the URL or the browser console, and is sent only as the
 * Authorization header of /api calls to the page's own origin; a reload forgets it.
 */
import { RbacClient, type ApiResult } from '../client/index.ts';

let client: RbacClient | undefined;

/** Opens the console on `key` (a client key or a token); the caller checks it with a first call. */
export function openSession(key: string): RbacClient {
  // The page's own origin: a relative URL, so no request can leave it.
  client = new RbacClient({ baseUrl: '', key });
  return client;
}

export function closeSession(): void {
  client = undefined;
}

/** The open client; views render only once a key is open. */
export function api(): RbacClient {
  if (client === undefined) throw new Error('no client key is open');
  return client;
}

/** Thrown by {@link must}: the API's refusal, as the API words it. */
export class ApiFailure extends Error {
  readonly status: number;
  constructor(status: number, detail: string) {
    super(`${status}: ${detail}`);
    this.name = 'ApiFailure';
    this.status = status;
  }
}

/** The data of a successful answer; an error answer throws its status and the API's `error`. */
export function must<T>(res: ApiResult<T>): T {
  if (res.ok && res.data !== undefined) return res.data;
  throw new ApiFailure(res.status, res.error ?? (res.status === 0 ? 'no answer' : 'unexpected answer'));
}

/** Words any failure for the live region. */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiFailure && err.status === 401) return `The key was refused (${err.message}).`;
  if (err instanceof ApiFailure) return `The API answered ${err.message}`;
  return `The request failed: ${err instanceof Error ? err.message : String(err)}`;
}

/** Runs `fn` over `items` with at most `width` calls in flight, keeping the order of `items`. */
export async function mapLimited<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}
