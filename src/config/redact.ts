import { configSchema, type Config, type ConfigKey } from './schema.ts';

/** Settings that are secrets as a whole: never printed, logged or echoed in an error. */
const SECRET_KEYS: ReadonlySet<string> = new Set<ConfigKey>([
  'AUTH_JWT_SECRET_KEY',
  'AUTH_JWT_PREVIOUS_SECRET_KEYS',
  'AUTH_ENCRYPTION_KEY',
  'AUTH_NEW_ENCRYPTION_KEY',
]);
/** Settings that are URLs whose password is a secret. */
const URL_KEYS: ReadonlySet<string> = new Set<ConfigKey>([
  'AUTH_POSTGRESQL_URL',
  'AUTH_REDIS_URL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
]);

const REDACTED = '[redacted]';

/** A setting's value as it may be shown: secrets replaced, a URL's password replaced. */
export function shownValue(key: string, value: unknown): unknown {
  if (SECRET_KEYS.has(key)) return REDACTED;
  if (URL_KEYS.has(key) && typeof value === 'string') return withoutPassword(value);
  return value;
}

/** The effective configuration, in the schema's order, with every secret replaced by `[redacted]`. */
export function redactedConfig(config: Config): Record<string, unknown> {
  const values = config as unknown as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(configSchema.properties)
      .filter((k) => values[k] !== undefined)
      .map((k) => [k, shownValue(k, values[k])]),
  );
}

/** `scheme://user:secret@host` → `scheme://user:[redacted]@host`; what does not parse is hidden whole. */
function withoutPassword(url: string): string {
  const at = url.lastIndexOf('@');
  const scheme = url.indexOf('://');
  if (at < 0) return url;
  if (scheme < 0 || scheme > at) return REDACTED;
  const credentials = url.slice(scheme + 3, at);
  const colon = credentials.indexOf(':');
  if (colon < 0) return url;
  return `${url.slice(0, scheme + 3)}${credentials.slice(0, colon)}:${REDACTED}${url.slice(at)}`;
}
