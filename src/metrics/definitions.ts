/**
 * Every metric of the service (docs/operations.md §2), in one place: names, types, labels and buckets are
 * fixed, because dashboards and alert rules depend on them (deploy/ uses exactly these; a test
 * pins both against this table). prom-client's default process and Node.js metrics come on top.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** How the primary merges the workers' values of a metric. */
export type Aggregation = 'sum' | 'max' | 'first';

export interface MetricSpec {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly labels: readonly string[];
  /** Histograms: upper bounds in seconds (prom-client's defaults when absent). */
  readonly buckets?: readonly number[];
  readonly aggregation: Aggregation;
}

/** Request durations: from 100 µs (a cached check) to 5 s (a write behind a slow database). */
export const REQUEST_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5] as const;
/** Hydrations and invalidation delays: milliseconds to seconds. */
const SLOW_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const spec = (name: string, type: MetricType, help: string, labels: readonly string[] = [], extra: Partial<MetricSpec> = {}): MetricSpec => ({
  name,
  type,
  help,
  labels,
  aggregation: 'sum',
  ...extra,
});

export const METRICS = {
  httpRequests: spec('rbac_http_requests_total', 'counter', 'Requests to /api by route (OpenAPI operationId), method and status', [
    'route',
    'method',
    'status',
  ]),
  httpDuration: spec('rbac_http_request_duration_seconds', 'histogram', 'Time from reading a /api request to its answer', ['route', 'method'], {
    buckets: REQUEST_BUCKETS,
  }),
  checkDecisions: spec(
    'rbac_check_decisions_total',
    'counter',
    'Permission and membership decisions (has_permission, permission, membership, batch items, AuthZEN evaluations and their batch items)',
    ['result'],
  ),
  cacheHits: spec('rbac_cache_hits_total', 'counter', 'Requests answered from a cached client graph'),
  cacheMisses: spec('rbac_cache_misses_total', 'counter', 'Requests that had to hydrate a client graph first'),
  cacheEvictions: spec('rbac_cache_evictions_total', 'counter', 'Client graphs evicted to stay within AUTH_CACHE_MAX_MB'),
  cacheClients: spec('rbac_cache_clients', 'gauge', 'Client graphs cached (summed over workers)'),
  cacheBytes: spec('rbac_cache_bytes', 'gauge', 'Estimated bytes of cached client graphs (summed over workers)'),
  unknownClients: spec(
    'rbac_unknown_client_requests_total',
    'counter',
    'Requests answered as a client that never wrote, from the client index (no database query, no cache entry)',
  ),
  indexedClients: spec('rbac_client_index_clients', 'gauge', "Clients in the client index (each worker holds them all: the largest worker's count)", [], {
    aggregation: 'max',
  }),
  hydration: spec('rbac_hydration_duration_seconds', 'histogram', 'Time to load and build a client graph', [], { buckets: SLOW_BUCKETS }),
  invalidationDelay: spec('rbac_invalidation_delay_seconds', 'histogram', 'From a change committed elsewhere to it being applied here', ['source'], {
    buckets: SLOW_BUCKETS,
  }),
  revisionGaps: spec('rbac_revision_gaps_total', 'counter', 'Changes that arrived out of order, by how the gap was closed', ['resolution']),
  writes: spec('rbac_writes_total', 'counter', 'Writes by op and result (ok or the error code)', ['op', 'result']),
  dbPool: spec('rbac_db_pool_connections', 'gauge', 'Database connections of the store threads', ['state']),
  dbRetries: spec('rbac_db_retries_total', 'counter', 'Database calls tried again after a failure before committing'),
  dbCircuit: spec('rbac_db_circuit_state', 'gauge', 'Database circuit: 0 closed, 1 half-open, 2 open (the worst worker)', [], { aggregation: 'max' }),
  workerRestarts: spec('rbac_worker_restarts_total', 'counter', 'HTTP workers replaced after they died'),
  workflowRuns: spec('rbac_workflow_runs_total', 'counter', 'Workflow schedule runs made by this instance (ok) or failed (error)', ['result']),
  workflowRunDuration: spec('rbac_workflow_run_duration_seconds', 'histogram', 'Time to make one workflow run (holders, diff, record)', [], {
    buckets: SLOW_BUCKETS,
  }),
  webhookDeliveries: spec(
    'rbac_webhook_deliveries_total',
    'counter',
    'Webhook delivery attempts by outcome: delivered, pending (a retry follows) or failed (no retry left)',
    ['result'],
  ),
  boundaryChanges: spec(
    'rbac_boundary_changes_total',
    'counter',
    'Window boundaries of grants and memberships committed by this instance as changes (docs/api.md §12.1), by op',
    ['op'],
  ),
  schedulerLeader: spec('rbac_workflow_scheduler_leader', 'gauge', '1 while this instance holds the workflow scheduler lease', [], { aggregation: 'first' }),
  buildInfo: spec('rbac_build_info', 'gauge', 'Always 1: the version, Node.js and HTTP engine running', ['version', 'node', 'engine'], {
    aggregation: 'first',
  }),
} as const satisfies Record<string, MetricSpec>;

export type MetricKey = keyof typeof METRICS;
