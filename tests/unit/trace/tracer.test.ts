// The tracer's port and factory (docs/operations.md §11): traces off is a no-op constant that
// runs the work as is; the traces URL comes from the standard OTLP variables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.ts';
import { createLogger } from '../../../src/log/index.ts';
import { NO_TRACER, startTracing, tracesUrl } from '../../../src/trace/index.ts';

test('the traces URL: the traces endpoint as given, else the base endpoint with /v1/traces, else none', () => {
  assert.equal(tracesUrl({}), undefined);
  assert.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'http://collector:4318/v1/traces');
  assert.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }), 'http://collector:4318/v1/traces');
  assert.equal(
    tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp' }),
    'https://traces.example.com/otlp',
  );
});

test('traces off: startTracing answers the no-op tracer, which runs the work as is and captures nothing', async () => {
  const config = loadConfig({}, '/nonexistent');
  assert.equal(await startTracing(config, createLogger('silent'), 'worker'), NO_TRACER);
  assert.equal(NO_TRACER.enabled, false);
  assert.ok(Object.isFrozen(NO_TRACER));
  assert.equal(await NO_TRACER.span('x', () => Promise.resolve(42)), 42);
  await assert.rejects(
    NO_TRACER.span('x', () => Promise.reject(new Error('kept'))),
    /kept/,
  );
  assert.equal(NO_TRACER.active(), undefined);
  assert.equal(
    NO_TRACER.within(undefined, () => 'ran'),
    'ran',
  );
  await NO_TRACER.close(10);
});

test('an endpoint that is not an http(s) URL stops start-up with its name', () => {
  assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, '/nonexistent'), /OTEL_EXPORTER_OTLP_ENDPOINT/);
});
