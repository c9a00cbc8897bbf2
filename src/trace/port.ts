/**
 * The traces' port: spans around the service's slow work (writes, hydrations, database calls,
 * Redis messages, webhook deliveries, token issuance, export and import). The port names no
 * OpenTelemetry type: with traces off the service runs {@link NO_TRACER}, and no OpenTelemetry
 * module is ever loaded (index.ts loads otel.ts only when an endpoint is set).
 */

/** What a span stands for, in OpenTelemetry's terms: an answer to a request, a call out, a message sent or received, or work inside. */
export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';

/** Attribute values a span carries: never a name, a key or a token (the paths' templates, ids, counts). */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

export interface SpanStart {
  readonly kind?: SpanKindName;
  readonly attributes?: SpanAttributes;
  /**
   * A W3C `traceparent` header: the span is its child (a request's span, whose caller traces it).
   * Without it, or when it does not parse, the span is a child of the active one, if any.
   */
  readonly traceparent?: string;
  /**
   * Made only inside a span: a database call of a traced request or hydration is, the periodic
   * background calls (revalidation, leases) alone are not, so that they do not flood the collector.
   */
  readonly childOnly?: boolean;
}

/** Where a span was, to continue in it later (a write batch commits in its first write's trace); opaque. */
export type TraceContext = object;

/** Spans, or nothing at all. */
export interface Tracer {
  /** False for {@link NO_TRACER}: callers skip building what only a span would use. */
  readonly enabled: boolean;
  /**
   * Runs `work` in a span named `name`, the active one while it runs (the spans and log lines made
   * inside are its children); the span ends when `work` settles, marked failed if it rejects.
   */
  span<T>(name: string, work: () => Promise<T>, start?: SpanStart): Promise<T>;
  /** The active context, to run later work in it with {@link within}; undefined with traces off. */
  active(): TraceContext | undefined;
  /** Runs `work` with `context` active (as it was when captured); `work` as is when undefined. */
  within<T>(context: TraceContext | undefined, work: () => T): T;
  /** Sends the spans not sent yet and stops; resolves within `timeoutMs` even when the collector does not answer. */
  close(timeoutMs: number): Promise<void>;
}

/** Traces off: every span is the work alone. */
export const NO_TRACER: Tracer = Object.freeze({
  enabled: false,
  span: <T>(_name: string, work: () => Promise<T>): Promise<T> => work(),
  active: (): undefined => undefined,
  within: <T>(_context: TraceContext | undefined, work: () => T): T => work(),
  close: (): Promise<void> => Promise.resolve(),
});
