import type { Handler, Method } from '../port.ts';

/** A pattern's segments: a string is static, null is a parameter. */
type Segments = ReadonlyArray<string | null>;

interface Entry {
  readonly segments: Segments;
  readonly handlers: Map<string, Handler>;
  other: Handler | undefined;
}

/** What a path and method resolve to; `params` are raw (still percent-encoded) segments. */
export interface Match {
  readonly handler: Handler;
  readonly params: string[];
}

const NO_PARAMS: string[] = [];

/**
 * The routing uWS does natively, for node:http: a pattern's parameter matches one non-empty
 * segment, a static segment wins over a parameter, and a path without a route for its method
 * goes to its pattern's other-methods handler, or else to the fallback.
 */
export class Router {
  readonly #bySize = new Map<number, Entry[]>();
  #fallback: Handler | undefined;

  on(method: Method, pattern: string, handler: Handler): void {
    this.#entry(pattern).handlers.set(method.toLowerCase(), handler);
  }

  otherMethods(pattern: string, handler: Handler): void {
    this.#entry(pattern).other = handler;
  }

  fallback(handler: Handler): void {
    this.#fallback = handler;
  }

  /** `method` in lower case; `path` raw, without the query. Undefined only without a fallback. */
  find(method: string, path: string): Match | undefined {
    const parts = path.split('/');
    const candidates = parts[0] === '' ? this.#bySize.get(parts.length - 1) : undefined;
    if (candidates !== undefined) {
      for (const entry of candidates) {
        const params = matchParts(entry.segments, parts);
        if (params === undefined) continue;
        const handler = entry.handlers.get(method) ?? entry.other;
        if (handler !== undefined) return { handler, params };
      }
    }
    return this.#fallback === undefined ? undefined : { handler: this.#fallback, params: NO_PARAMS };
  }

  #entry(pattern: string): Entry {
    const segments = pattern
      .split('/')
      .slice(1)
      .map((s) => (/^\{\w+\}$/.test(s) ? null : s));
    const list = this.#bySize.get(segments.length) ?? [];
    let entry = list.find((e) => e.segments.join('/') === segments.join('/'));
    if (entry === undefined) {
      entry = { segments, handlers: new Map(), other: undefined };
      list.push(entry);
      list.sort((a, b) => specificity(b.segments) - specificity(a.segments));
      this.#bySize.set(segments.length, list);
    }
    return entry;
  }
}

/** Parameters of `parts` (a split path with its leading '') under `segments`, or undefined. */
function matchParts(segments: Segments, parts: readonly string[]): string[] | undefined {
  let params: string[] | undefined;
  for (let i = 0; i < segments.length; i++) {
    const want = segments[i];
    const got = parts[i + 1] as string;
    if (want === null) {
      if (got === '') return undefined;
      (params ??= []).push(got);
    } else if (want !== got) {
      return undefined;
    }
  }
  return params ?? NO_PARAMS;
}

/** Static segments earlier in the path weigh more, so `/a/b` is tried before `/a/{x}`. */
function specificity(segments: Segments): number {
  return segments.reduce((sum: number, s, i) => sum + (s === null ? 0 : 2 ** (segments.length - i)), 0);
}
