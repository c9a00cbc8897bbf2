import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addCumulative, withCompliantNames } from '../../../src/metrics/retained.ts';
import type { MetricJson } from '../../../src/metrics/requests.ts';

const counter = (value: number, status = '200'): MetricJson => ({
  name: 'rbac_http_requests_total',
  help: 'h',
  type: 'counter',
  aggregator: 'sum',
  values: [{ value, labels: { route: 'has_permission', method: 'GET', status } }],
});
const histogram = (count: number): MetricJson => ({
  name: 'rbac_hydration_duration_seconds',
  help: 'h',
  type: 'histogram',
  aggregator: 'sum',
  values: [
    { value: count, labels: { le: 0.1 }, metricName: 'rbac_hydration_duration_seconds_bucket' },
    { value: count, labels: {}, metricName: 'rbac_hydration_duration_seconds_count' },
  ],
});
const gauge = (value: number): MetricJson => ({ name: 'rbac_cache_clients', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ value, labels: {} }] });

test('an exited worker: counters and histograms add up series by series, gauges are dropped', () => {
  const first = addCumulative([], [counter(5), counter(1, '404'), histogram(2), gauge(7)]);
  const both = addCumulative(first, [counter(3), histogram(4), gauge(9)]);
  const byName = new Map(both.map((m) => [m.name, m]));
  assert.equal(byName.has('rbac_cache_clients'), false);
  const requests = byName.get('rbac_http_requests_total')?.values.map((v) => [v.labels.status, v.value]);
  assert.deepEqual(requests, [
    ['200', 8],
    ['404', 1],
  ]);
  const hydration = byName.get('rbac_hydration_duration_seconds')?.values.map((v) => [v.metricName, v.value]);
  assert.deepEqual(hydration, [
    ['rbac_hydration_duration_seconds_bucket', 6],
    ['rbac_hydration_duration_seconds_count', 6],
  ]);
  assert.deepEqual(first.find((m) => m.name === 'rbac_http_requests_total')?.values[0]?.value, 5, 'the inputs are not changed');
});

test("prom-client's *_total gauges get names the exposition format allows; nothing else is renamed", () => {
  const handles: MetricJson = { name: 'nodejs_active_handles_total', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ value: 3, labels: {} }] };
  const renamed = withCompliantNames([handles, counter(1), gauge(2)]);
  assert.deepEqual(
    renamed.map((m) => m.name),
    ['nodejs_active_handles_all', 'rbac_http_requests_total', 'rbac_cache_clients'],
  );
});
