import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { NO_TRACER, type Tracer } from './port.ts';

export { NO_TRACER, type SpanAttributes, type SpanKindName, type SpanStart, type TraceContext, type Tracer } from './port.ts';

/** Where spans go: the OTLP/HTTP traces URL, from the settings (docs/operations.md §11). */
export function tracesUrl(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * The factory of the tracer, called once per process by its composition root (`role`: `primary`
 * or `worker`). Without an endpoint, {@link NO_TRACER}: OpenTelemetry is not loaded, nothing is
 * allocated. With one, the SDK is loaded here, on this call only.
 */
export async function startTracing(config: Config, log: Logger, role: string): Promise<Tracer> {
  const url = tracesUrl(config);
  if (url === undefined) return NO_TRACER;
  const { openTelemetryTracer } = await import('./otel.ts');
  return openTelemetryTracer({ url, serviceName: config.OTEL_SERVICE_NAME, role, log });
}
