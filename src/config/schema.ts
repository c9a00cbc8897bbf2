/**
 * The one JSON Schema of the service's settings (docs/operations.md §1). Property names are the
 * environment variables themselves, so a message can name exactly what to fix.
 */
export const configSchema = {
  $id: 'rbac-gateway/config',
  type: 'object',
  additionalProperties: false,
  properties: {
    AUTH_DATABASE_TYPE: { type: 'string', enum: ['sqlite', 'postgresql'], default: 'sqlite' },
    AUTH_SQLITE_PATH: { type: 'string', minLength: 1, default: './data/rbac.sqlite3' },
    AUTH_POSTGRESQL_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    AUTH_POSTGRESQL_POOL_MAX: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: 'Connections per worker process, shared by its pool threads.',
    },
    AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 100,
      maximum: 600000,
      default: 5000,
      description: 'How long opening a connection (or waiting for a free one in the pool) may take.',
    },
    AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 100,
      maximum: 3600000,
      default: 10000,
      description: 'Server-side statement_timeout of every connection; lock waits count.',
    },
    AUTH_REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    AUTH_SERVER_HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    AUTH_SERVER_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 5000 },
    AUTH_WORKERS: { type: 'integer', minimum: 1, maximum: 256, description: 'HTTP worker processes; unset: the CPUs this process may use.' },
    AUTH_JWT_SECRET_KEY: { type: 'string', minLength: 1 },
    AUTH_JWT_PREVIOUS_SECRET_KEYS: {
      type: 'string',
      minLength: 1,
      description: 'Older HS256 secrets, comma-separated, each at least 32 bytes: they verify tokens but sign none (key rotation).',
    },
    AUTH_JWT_TTL_SECONDS: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
    AUTH_ENABLE_ENCRYPTION: { type: 'boolean', default: false },
    AUTH_ENCRYPTION_KEY: { type: 'string', minLength: 1 },
    AUTH_NEW_ENCRYPTION_KEY: {
      type: 'string',
      minLength: 1,
      description: "The command line's target key of rotate-encryption-key and --encrypt; the service ignores it.",
    },
    AUTH_ALLOW_CORS: { type: 'boolean', default: true },
    AUTH_CORS_ORIGINS: { type: 'string', minLength: 1, default: '*' },
    AUTH_AUDIT_CHECKS: { type: 'boolean', default: false },
    AUTH_CACHE_MAX_MB: { type: 'integer', minimum: 1, maximum: 1048576, default: 256 },
    AUTH_METRICS_HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    AUTH_METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 9464 },
    AUTH_MAX_BODY_BYTES: { type: 'integer', minimum: 64, maximum: 1073741824, default: 1048576 },
    AUTH_IMPORT_MAX_BYTES: {
      type: 'integer',
      minimum: 1024,
      maximum: 1099511627776,
      default: 1073741824,
      description: 'The largest POST /api/import body; AUTH_MAX_BODY_BYTES does not apply to it.',
    },
    AUTH_WEBHOOK_ALLOWED_HOSTS: {
      type: 'string',
      minLength: 1,
      description: 'Hosts (or host:port) workflow webhooks may call, comma-separated; none: webhooks are refused.',
    },
    AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 86400,
      default: 10,
      description: 'The smallest interval_seconds a workflow schedule may ask for.',
    },
    AUTH_LOG_LEVEL: { type: 'string', enum: ['debug', 'info', 'warn', 'error', 'silent'], default: 'info' },
    AUTH_DB_RETRY_ATTEMPTS: {
      type: 'integer',
      minimum: 1,
      maximum: 10,
      default: 3,
      description: 'Attempts per database call when it fails before committing (1: no retry).',
    },
    AUTH_DB_BREAKER_THRESHOLD: { type: 'integer', minimum: 1, maximum: 1000, default: 5, description: 'Consecutive database failures that open the circuit.' },
    AUTH_DB_BREAKER_COOLDOWN_MS: {
      type: 'integer',
      minimum: 100,
      maximum: 600000,
      default: 5000,
      description: 'How long an open circuit refuses before one probe is let through.',
    },
    AUTH_REVALIDATE_MS: {
      type: 'integer',
      minimum: 100,
      maximum: 3600000,
      default: 2000,
      description: 'How often each worker asks the database which tenants changed since its last look (the backstop for a lost change message).',
    },
    AUTH_HTTP_ENGINE: {
      type: 'string',
      enum: ['auto', 'uws', 'node'],
      default: 'auto',
      description: 'uws (uWebSockets.js, native only), node (node:http) or auto: uws where it loads, else node.',
    },
    AUTH_AUDIT_RETENTION_DAYS: {
      type: 'integer',
      minimum: 0,
      maximum: 36500,
      default: 90,
      description: 'Audit rows older than this many days are deleted; 0 keeps them forever.',
    },
    AUTH_SHUTDOWN_DELAY_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 600000,
      default: 0,
      description: 'After SIGTERM/SIGINT, how long the instance keeps serving (/ready answering 503 draining) before it stops accepting connections.',
    },
    AUTH_ACCESS_LOG_SAMPLE: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      default: 0,
      description: 'Share of /api requests written to the access log (0 to 1; 0: none).',
    },
    AUTH_AUTHZEN_BASE_URL: {
      type: 'string',
      minLength: 1,
      description: 'The PDP identifier published at /.well-known/authzen-configuration (https, or http on a loopback host); none: that route is 404.',
    },
    AUTH_AUTHZEN_SUBJECT_TYPES: {
      type: 'string',
      minLength: 1,
      default: 'user,identity',
      description: 'Comma-separated AuthZEN subject types that name users (`identity` is what gateway plug-ins send).',
    },
    AUTH_CONSOLE: {
      type: 'boolean',
      default: true,
      description: 'Whether the read-only web console is served at /console; false: every path under /console is 404.',
    },
    AUTH_AUTHZEN_DENY_REASONS: {
      type: 'boolean',
      default: false,
      description: 'Whether denies carry `context.reason`; off, a deny is exactly `{"decision":false}` (interop clients compare exact JSON).',
    },
    // Traces (docs/operations.md §11): OpenTelemetry's own variables, so that a platform that sets them for every service sets them here too.
    OTEL_EXPORTER_OTLP_ENDPOINT: {
      type: 'string',
      pattern: '^https?://',
      description: 'OTLP/HTTP base URL of a trace collector; traces go to <it>/v1/traces. Unset (and no traces endpoint): no traces, nothing loaded for them.',
    },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
      type: 'string',
      pattern: '^https?://',
      description: 'The full OTLP/HTTP URL traces are sent to (wins over OTEL_EXPORTER_OTLP_ENDPOINT).',
    },
    OTEL_SERVICE_NAME: { type: 'string', minLength: 1, default: 'rbac-gateway', description: "The traces' service.name." },
  },
} as const;

export type ConfigKey = keyof typeof configSchema.properties;

type Props = typeof configSchema.properties;
/** The value a property's schema admits: one of its enum, a number, a boolean or a string. */
type ValueOf<P> = P extends { readonly enum: ReadonlyArray<infer E> }
  ? E
  : P extends { readonly type: 'integer' | 'number' }
    ? number
    : P extends { readonly type: 'boolean' }
      ? boolean
      : string;
/** The settings the schema gives a default: always present once validated. */
type Defaulted = { [K in ConfigKey]: Props[K] extends { readonly default: unknown } ? K : never }[ConfigKey];

/** The settings as the schema alone makes them (ajv fills in the defaults): read from the schema, never written by hand. */
export type SchemaValues = { readonly [K in Defaulted]: ValueOf<Props[K]> } & { readonly [K in Exclude<ConfigKey, Defaulted>]?: ValueOf<Props[K]> };

/** The database's settings, a union: with AUTH_DATABASE_TYPE=postgresql the URL is there. */
type DatabaseChoice = { readonly AUTH_DATABASE_TYPE: 'sqlite' } | { readonly AUTH_DATABASE_TYPE: 'postgresql'; readonly AUTH_POSTGRESQL_URL: string };

/**
 * The settings: {@link SchemaValues}, with AUTH_WORKERS filled in (the usable CPUs when unset)
 * and the database's union settled (checked once, when the configuration is loaded), so the
 * store settings need no check of their own. What each setting means is its `description` above.
 */
export type Config = Omit<SchemaValues, 'AUTH_WORKERS' | 'AUTH_DATABASE_TYPE'> & { readonly AUTH_WORKERS: number } & DatabaseChoice;
