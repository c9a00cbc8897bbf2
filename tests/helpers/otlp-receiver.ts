/**
 * A loopback OTLP/HTTP trace receiver: what a Collector's `otlp` receiver does, for the spans the
 * service's official exporter sends. `POST /v1/traces` with an OTLP/JSON body (the exporter's
 * encoding: ids as hex strings, kinds as the protocol's numbers) is decoded into flat spans with
 * their resource's attributes; anything else is 404.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** OTLP's span kinds (opentelemetry-proto `Span.SpanKind`). */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** An OTLP `AnyValue` as the JSON encoding writes it. */
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  readonly resource: Readonly<Record<string, string | number | boolean>>;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT for the service. */
  readonly endpoint: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** Export requests received, and those that were not OTLP/JSON. */
  readonly requests: { total: number; malformed: number; contentTypes: Set<string> };
  close(): Promise<void>;
}

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? '';

const attributesOf = (list: KeyValue[] | undefined): Record<string, string | number | boolean> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

function decode(body: ExportRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: attributesOf(s.attributes),
        resource,
      })),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests = { total: 0, malformed: 0, contentTypes: new Set<string>() };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      requests.total++;
      requests.contentTypes.add(req.headers['content-type'] ?? '');
      try {
        spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest));
      } catch {
        requests.malformed++;
        return void res.writeHead(400).end();
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
