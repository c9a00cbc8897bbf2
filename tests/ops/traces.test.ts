// Traces (docs/operations.md §11), black-box: the real service, started with the standard
// OpenTelemetry variables, sends its spans with the official OTLP/HTTP exporter to a receiver
// of the test's own (tests/helpers/otlp-receiver.ts). A write carrying a `traceparent` is traced
// under the caller's span down to the database; a hydration too; the request's log lines name
// the trace. With no endpoint, no process of the service loads an OpenTelemetry module at all;
// with a collector that is down, the service answers as ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, SPAN_KIND, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { logLines } from '../helpers/cluster.ts';
import { freePort, ROOT, startServer, tempDir, type RunningServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

const MODULE_WATCH = join(ROOT, 'tests/helpers/module-watch.mjs');

/** A W3C traceparent of a sampled caller span, with its ids. */
function callerSpan(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** The env that records every @opentelemetry module the service's processes load into `file`. */
function watched(t: { after(fn: () => void): void }): { env: Record<string, string>; loaded: () => string[] } {
  const dir = tempDir('rbac-watch-');
  t.after(() => dir.cleanup());
  const file = join(dir.dir, 'modules.txt');
  writeFileSync(file, '');
  return {
    env: { NODE_OPTIONS: `--import ${MODULE_WATCH}`, MODULE_WATCH_FILE: file },
    loaded: () =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

/** A write (a new client's role) and a read that hydrates that client, each with its caller's `traceparent`. */
async function writeThenRead(server: RunningServer, write: string, read: string): Promise<{ key: string; ids: string[] }> {
  const key = randomUUID();
  const ids = [`write-${randomBytes(8).toString('hex')}`, `read-${randomBytes(8).toString('hex')}`];
  const created = await rawRequest({
    port: server.port,
    method: 'POST',
    path: '/api/role/admins',
    key,
    headers: { traceparent: write, 'x-request-id': ids[0] as string },
  });
  assert.equal(created.status, 201, created.text);
  const roles = await rawRequest({ port: server.port, path: '/api/roles', key, headers: { traceparent: read, 'x-request-id': ids[1] as string } });
  assert.equal(roles.status, 200, roles.text);
  return { key, ids };
}

const named = (spans: readonly ReceivedSpan[], name: string): ReceivedSpan[] => spans.filter((s) => s.name === name);

test(
  "with OTEL_EXPORTER_OTLP_ENDPOINT, spans reach an OTLP receiver under the caller's trace, and the request's log lines carry it",
  { timeout: 120_000 },
  async (t) => {
    const receiver = await startOtlpReceiver();
    t.after(() => receiver.close());
    const watch = watched(t);
    const server = await startServer({
      env: {
        ...watch.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: 'rbac-traces-test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        AUTH_ACCESS_LOG_SAMPLE: '1',
        AUTH_WORKERS: '1',
      },
    });
    t.after(() => server.kill());
    const write = callerSpan();
    const read = callerSpan();
    const { ids } = await writeThenRead(server, write.header, read.header);

    const inTrace = (traceId: string): ReceivedSpan[] => receiver.spans().filter((s) => s.traceId === traceId);
    const written = await waitUntil(
      "the write's spans: the request's, the commit's, the database call's",
      () => {
        const spans = inTrace(write.traceId);
        const complete = spans.some((s) => s.kind === SPAN_KIND.server) && named(spans, 'write.commit').length > 0 && named(spans, 'db writeMany').length > 0;
        return complete ? spans : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const request = written.find((s) => s.kind === SPAN_KIND.server);
    assert.ok(request !== undefined, 'a server span for the request');
    assert.equal(request.parentSpanId, write.spanId, "the request's span is the caller's span's child");
    assert.equal(request.attributes['rbac.route'], 'role.create');
    assert.equal(request.attributes['http.request.method'], 'POST');
    assert.ok(!JSON.stringify(written).includes('admins'), 'no name in a span');
    const commit = named(written, 'write.commit')[0];
    const db = named(written, 'db writeMany')[0];
    assert.equal(commit?.parentSpanId, request.spanId, "the batch's commit is the request's child");
    assert.equal(db?.parentSpanId, commit?.spanId, "the database call is the commit's child");
    assert.equal(db?.kind, SPAN_KIND.client);
    assert.equal(db?.attributes['db.system.name'], 'sqlite');
    assert.equal(request.resource['service.name'], 'rbac-traces-test');
    assert.equal(request.resource['rbac.process.role'], 'worker');

    const hydrated = await waitUntil(
      "the read's hydration spans",
      () => {
        const spans = inTrace(read.traceId);
        return named(spans, 'cache.hydrate').length > 0 && named(spans, 'db loadGraph').length > 0 ? spans : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const hydrate = named(hydrated, 'cache.hydrate')[0];
    assert.equal(named(hydrated, 'db loadGraph')[0]?.parentSpanId, hydrate?.spanId, "the database read is the hydration's child");

    const access = logLines(server).filter((l) => l.event === 'http.access');
    const lineOf = (id: string | undefined): Record<string, unknown> | undefined => access.find((l) => l.request_id === id);
    assert.equal(lineOf(ids[0])?.trace_id, write.traceId, `the write's access line names its trace:\n${server.output()}`);
    assert.equal(lineOf(ids[0])?.span_id, request.spanId, "and the request's span");
    assert.equal(lineOf(ids[1])?.trace_id, read.traceId);

    assert.equal(await server.stop(), 0);
    assert.equal(receiver.requests.malformed, 0, 'every export was OTLP/JSON');
    assert.ok(
      watch.loaded().some((m) => m.startsWith('@opentelemetry/')),
      'the module watch sees OpenTelemetry when traces are on',
    );
  },
);

test('without an endpoint, no process of the service loads an OpenTelemetry module, and log lines name no trace', { timeout: 120_000 }, async (t) => {
  const watch = watched(t);
  const server = await startServer({ env: { ...watch.env, AUTH_ACCESS_LOG_SAMPLE: '1', AUTH_WORKERS: '2' } });
  t.after(() => server.kill());
  await writeThenRead(server, callerSpan().header, callerSpan().header);
  assert.equal(await server.stop(), 0);
  assert.deepEqual(watch.loaded(), [], 'no @opentelemetry module resolved');
  assert.ok(logLines(server).length > 0);
  assert.ok(
    logLines(server).every((l) => !('trace_id' in l)),
    'no trace ids',
  );
});

test(
  'a collector that is down breaks nothing: requests are answered, the failure is one log line, the service stops on time',
  { timeout: 120_000 },
  async (t) => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const server = await startServer({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: nobody, OTEL_BSP_SCHEDULE_DELAY: '50', AUTH_WORKERS: '1' } });
    t.after(() => server.kill());
    for (let i = 0; i < 3; i++) await writeThenRead(server, callerSpan().header, callerSpan().header);
    await waitUntil('the export failure logged', () => (logLines(server).some((l) => l.event === 'trace.export_failed') ? true : undefined), {
      timeoutMs: 30_000,
    });
    const failures = logLines(server).filter((l) => l.event === 'trace.export_failed');
    assert.equal(failures[0]?.level, 40);
    const started = Date.now();
    assert.equal(await server.stop(), 0);
    assert.ok(Date.now() - started < 10_000, `stopped in ${Date.now() - started} ms`);
  },
);
