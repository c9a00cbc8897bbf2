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
    AUTH_POSTGRESQL_POOL_MAX: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
    AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 5000 },
    AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 3600000, default: 10000 },
    AUTH_REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    AUTH_SERVER_HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    AUTH_SERVER_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 5000 },
    AUTH_WORKERS: { type: 'integer', minimum: 1, maximum: 256 },
    AUTH_JWT_SECRET_KEY: { type: 'string', minLength: 1 },
    AUTH_JWT_TTL_SECONDS: { type: 'integer', minimum: 1, maximum: 86400, default: 900 },
    AUTH_ENABLE_ENCRYPTION: { type: 'boolean', default: false },
    AUTH_ENCRYPTION_KEY: { type: 'string', minLength: 1 },
    AUTH_ALLOW_CORS: { type: 'boolean', default: true },
    AUTH_CORS_ORIGINS: { type: 'string', minLength: 1, default: '*' },
    AUTH_AUDIT_CHECKS: { type: 'boolean', default: false },
    AUTH_CACHE_MAX_MB: { type: 'integer', minimum: 1, maximum: 1048576, default: 256 },
    AUTH_METRICS_HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    AUTH_METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 9464 },
    AUTH_MAX_BODY_BYTES: { type: 'integer', minimum: 64, maximum: 1073741824, default: 1048576 },
    AUTH_WEBHOOK_ALLOWED_HOSTS: { type: 'string', minLength: 1 },
    AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: { type: 'integer', minimum: 1, maximum: 86400, default: 10 },
    AUTH_LOG_LEVEL: { type: 'string', enum: ['debug', 'info', 'warn', 'error', 'silent'], default: 'info' },
    AUTH_DB_RETRY_ATTEMPTS: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
    AUTH_DB_BREAKER_THRESHOLD: { type: 'integer', minimum: 1, maximum: 1000, default: 5 },
    AUTH_DB_BREAKER_COOLDOWN_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 5000 },
    AUTH_REVALIDATE_MS: { type: 'integer', minimum: 100, maximum: 3600000, default: 2000 },
    AUTH_HTTP_ENGINE: { type: 'string', enum: ['auto', 'uws', 'node'], default: 'auto' },
    AUTH_AUDIT_RETENTION_DAYS: { type: 'integer', minimum: 0, maximum: 36500, default: 90 },
    AUTH_SHUTDOWN_DELAY_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 0 },
    AUTH_ACCESS_LOG_SAMPLE: { type: 'number', minimum: 0, maximum: 1, default: 0 },
    AUTH_AUTHZEN_BASE_URL: { type: 'string', minLength: 1 },
    AUTH_AUTHZEN_SUBJECT_TYPES: { type: 'string', minLength: 1, default: 'user,identity' },
    AUTH_AUTHZEN_DENY_REASONS: { type: 'boolean', default: false },
  },
} as const;

export type ConfigKey = keyof typeof configSchema.properties;

/**
 * The settings. The database's are a union: with AUTH_DATABASE_TYPE=postgresql the URL is there
 * (checked once, when the configuration is loaded), so the store settings need no check of their own.
 */
export type Config = ConfigFields &
  ({ readonly AUTH_DATABASE_TYPE: 'sqlite' } | { readonly AUTH_DATABASE_TYPE: 'postgresql'; readonly AUTH_POSTGRESQL_URL: string });

interface ConfigFields {
  readonly AUTH_DATABASE_TYPE: 'sqlite' | 'postgresql';
  readonly AUTH_SQLITE_PATH: string;
  readonly AUTH_POSTGRESQL_URL?: string;
  /** Connections per worker process, shared by its pool threads. */
  readonly AUTH_POSTGRESQL_POOL_MAX: number;
  /** How long opening a connection (or waiting for a free one in the pool) may take. */
  readonly AUTH_POSTGRESQL_CONNECT_TIMEOUT_MS: number;
  /** Server-side statement_timeout of every connection; lock waits count. */
  readonly AUTH_POSTGRESQL_STATEMENT_TIMEOUT_MS: number;
  readonly AUTH_REDIS_URL?: string;
  readonly AUTH_SERVER_HOST: string;
  readonly AUTH_SERVER_PORT: number;
  readonly AUTH_WORKERS: number;
  readonly AUTH_JWT_SECRET_KEY?: string;
  readonly AUTH_JWT_TTL_SECONDS: number;
  readonly AUTH_ENABLE_ENCRYPTION: boolean;
  readonly AUTH_ENCRYPTION_KEY?: string;
  readonly AUTH_ALLOW_CORS: boolean;
  readonly AUTH_CORS_ORIGINS: string;
  readonly AUTH_AUDIT_CHECKS: boolean;
  readonly AUTH_CACHE_MAX_MB: number;
  readonly AUTH_METRICS_HOST: string;
  readonly AUTH_METRICS_PORT: number;
  readonly AUTH_MAX_BODY_BYTES: number;
  /** Hosts (or host:port) workflow webhooks may call, comma-separated; none: webhooks are refused. */
  readonly AUTH_WEBHOOK_ALLOWED_HOSTS?: string;
  /** The smallest `interval_seconds` a workflow schedule may ask for. */
  readonly AUTH_WORKFLOW_MIN_INTERVAL_SECONDS: number;
  readonly AUTH_LOG_LEVEL: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Attempts per database call when it fails before committing (1: no retry). */
  readonly AUTH_DB_RETRY_ATTEMPTS: number;
  /** Consecutive database failures that open the circuit. */
  readonly AUTH_DB_BREAKER_THRESHOLD: number;
  /** How long an open circuit refuses before one probe is let through. */
  readonly AUTH_DB_BREAKER_COOLDOWN_MS: number;
  /** With Redis: how often cached tenants' revisions are compared with the database. */
  readonly AUTH_REVALIDATE_MS: number;
  /** `uws` (uWebSockets.js, native only), `node` (node:http) or `auto`: uws where it loads, else node. */
  readonly AUTH_HTTP_ENGINE: 'auto' | 'uws' | 'node';
  /** Audit rows older than this many days are deleted; 0 keeps them forever. */
  readonly AUTH_AUDIT_RETENTION_DAYS: number;
  /**
   * After SIGTERM/SIGINT, how long the instance keeps serving (with `/ready` answering 503
   * `draining`) before it stops accepting connections: time for load balancers to take it out.
   */
  readonly AUTH_SHUTDOWN_DELAY_MS: number;
  /** Share of `/api` requests written to the access log (0 to 1; 0: none). */
  readonly AUTH_ACCESS_LOG_SAMPLE: number;
  /**
   * The PDP identifier published at /.well-known/authzen-configuration (https, or http on a
   * loopback host); none: that route is 404.
   */
  readonly AUTH_AUTHZEN_BASE_URL?: string;
  /** Comma-separated AuthZEN subject types that name users (`identity` is what gateway plug-ins send). */
  readonly AUTH_AUTHZEN_SUBJECT_TYPES: string;
  /** Whether denies carry `context.reason`; off, a deny is exactly `{"decision":false}` (interop clients compare exact JSON). */
  readonly AUTH_AUTHZEN_DENY_REASONS: boolean;
}
