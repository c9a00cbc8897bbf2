import type { EngineRequest } from '../engine/port.ts';

/**
 * The headers and query keys the /api handlers read. A request answered after an await (a token
 * seen for the first time is verified asynchronously) is read through a {@link CapturedRequest},
 * so a handler that starts reading another header or key must add it here.
 */
const HEADERS = ['authorization', 'x-request-id', 'origin', 'content-type', 'content-length', 'x-authz-min-revision', 'if-match', 'traceparent'] as const;
const QUERY_KEYS = ['limit', 'cursor', 'since'] as const;

/**
 * What the handlers read from a request, copied while the engine's request object is alive (it
 * dies when the engine's callback returns). Values are the engine's own answers, so a captured
 * request reads exactly like the live one did.
 */
export class CapturedRequest implements EngineRequest {
  readonly #headers = new Map<string, string>();
  readonly #params: Array<string | undefined> = [];
  readonly #query: string | undefined;
  readonly #queryValues = new Map<string, string | undefined>();
  readonly #method: string;
  readonly #url: string;

  constructor(req: EngineRequest, paramCount: number) {
    for (const h of HEADERS) this.#headers.set(h, req.getHeader(h));
    for (let i = 0; i < paramCount; i++) this.#params.push(req.getParameter(i));
    this.#query = req.getQuery();
    if (this.#query !== undefined) for (const k of QUERY_KEYS) this.#queryValues.set(k, req.getQuery(k));
    this.#method = req.getMethod();
    this.#url = req.getUrl();
  }

  getHeader(lowerCaseName: string): string {
    return this.#headers.get(lowerCaseName) ?? '';
  }
  getParameter(index: number): string | undefined {
    return this.#params[index];
  }
  getQuery(key?: string): string | undefined {
    return key === undefined ? this.#query : this.#queryValues.get(key);
  }
  getMethod(): string {
    return this.#method;
  }
  getUrl(): string {
    return this.#url;
  }
}
