import { context, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { BUILD } from '../config/build.ts';
import { errorFields, logSpanIdsFrom, type Logger, type SpanIds } from '../log/index.ts';
import type { SpanKindName, SpanStart, TraceContext, Tracer } from './port.ts';

/**
 * The OpenTelemetry tracer: the Node.js SDK, spans batched and sent over OTLP/HTTP (JSON) to one
 * URL. Loaded only when an endpoint is set (index.ts). The context of the active span follows
 * asynchronous work (the SDK's AsyncLocalStorage context manager), so spans made by the layers
 * below a request's span are its children without being handed it.
 */

export interface OtelSettings {
  /** The OTLP/HTTP traces URL. */
  readonly url: string;
  readonly serviceName: string;
  /** `primary` or `worker`: a resource attribute, so that a trace shows which process made a span. */
  readonly role: string;
  readonly log: Logger;
}

const KINDS: Readonly<Record<SpanKindName, SpanKind>> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

/** The tracer of this process, registered as OpenTelemetry's global one; log lines carry its active span's ids from now on. */
export function openTelemetryTracer(s: OtelSettings): Tracer {
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: s.serviceName, [ATTR_SERVICE_VERSION]: BUILD.version, 'rbac.process.role': s.role }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: s.url }))] });
  provider.register();
  reportExportFailures(s.log);
  logSpanIdsFrom(activeSpanIds);
  return new OtelTracer(provider);
}

class OtelTracer implements Tracer {
  readonly enabled = true;
  readonly #provider: NodeTracerProvider;
  readonly #tracer: ReturnType<NodeTracerProvider['getTracer']>;
  readonly #propagator = new W3CTraceContextPropagator();

  constructor(provider: NodeTracerProvider) {
    this.#provider = provider;
    this.#tracer = provider.getTracer(BUILD.name, BUILD.version);
  }

  span<T>(name: string, work: () => Promise<T>, start?: SpanStart): Promise<T> {
    if (start?.childOnly === true && trace.getSpan(context.active()) === undefined) return work();
    const parent = start?.traceparent === undefined || start.traceparent === '' ? context.active() : this.#parentOf(start.traceparent);
    const options = { kind: KINDS[start?.kind ?? 'internal'], ...(start?.attributes === undefined ? {} : { attributes: start.attributes }) };
    return this.#tracer.startActiveSpan(name, options, parent, (span) => ended(span, work));
  }

  active(): TraceContext {
    return context.active();
  }

  within<T>(captured: TraceContext | undefined, work: () => T): T {
    return captured === undefined ? work() : context.with(captured as Context, work);
  }

  async close(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    try {
      await Promise.race([this.#provider.shutdown().catch(() => undefined), late]);
    } finally {
      clearTimeout(timer);
      logSpanIdsFrom(undefined);
    }
  }

  /** The caller's span from its `traceparent` header; the active context when the header does not parse. */
  #parentOf(traceparent: string): Context {
    const extracted = this.#propagator.extract(ROOT_CONTEXT, { traceparent }, HEADER_GETTER);
    return trace.getSpanContext(extracted) === undefined ? context.active() : extracted;
  }
}

/** Reads a header from the one-header carrier {@link OtelTracer.#parentOf} makes. */
const HEADER_GETTER = {
  get: (carrier: Record<string, string>, key: string): string | undefined => carrier[key],
  keys: (carrier: Record<string, string>): string[] => Object.keys(carrier),
};

/**
 * Runs `work` as `span`'s, then ends it. A failure marks the span with the error's type or
 * catalogued code only: a message may hold names, which a trace must not carry.
 */
async function ended<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const { type, code } = errorFields(err);
    span.setAttribute(ATTR_ERROR_TYPE, code ?? type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? type });
    throw err;
  } finally {
    span.end();
  }
}

/** The ids of the active span, for log lines; none outside a span. */
function activeSpanIds(): SpanIds | undefined {
  const c = trace.getSpanContext(context.active());
  return c === undefined || !isSpanContextValid(c) ? undefined : { traceId: c.traceId, spanId: c.spanId };
}

/**
 * The SDK reports a failed export (the collector down or refusing) to its global error handler:
 * one line each time the reason changes, never an exception. Requests go on; those spans are lost.
 */
function reportExportFailures(log: Logger): void {
  let last = '';
  setGlobalErrorHandler((err) => {
    const why = err instanceof Error ? err.message : String(err);
    if (why === last) return;
    last = why;
    log.warn('traces not exported; spans dropped', { err });
  });
}
