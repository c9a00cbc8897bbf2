import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { WebhookHosts } from '../workflow/allowed-hosts.ts';
import { usableCpus } from './cpus.ts';
import { shownValue } from './redact.ts';
import { configSchema, type Config, type ConfigKey, type SchemaValues } from './schema.ts';

export type { Config } from './schema.ts';
export { redactedConfig } from './redact.ts';

/** A setting that cannot be used; `message` is the one line printed before exit code 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type PropSchema = {
  readonly type: string;
  readonly enum?: readonly string[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly pattern?: string;
};

/** Every property's schema, as the messages read it. */
const PROPS: { readonly [K in ConfigKey]: PropSchema } = configSchema.properties;

/** What a property allows, in words, for the error line. */
function allowed(p: PropSchema): string {
  if (p.enum) return `one of ${p.enum.join(', ')}`;
  if (p.type === 'boolean') return 'true or false';
  if (p.type === 'integer') return `an integer from ${p.minimum} to ${p.maximum}`;
  if (p.type === 'number') return `a number from ${p.minimum} to ${p.maximum}`;
  if (p.pattern) return `a string matching ${p.pattern}`;
  if (p.minLength !== undefined && p.minLength > 1) return `a string of at least ${p.minLength} characters`;
  return 'a non-empty string';
}

function parseValue(raw: unknown, p: PropSchema): unknown {
  if (typeof raw !== 'string') return raw; // from a JSON config file: typed already
  if (p.type === 'integer') return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (p.type === 'number') return /^-?(\d+\.?\d*|\.\d+)$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (p.type === 'boolean') {
    const v = raw.trim().toLowerCase();
    return v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : raw;
  }
  return raw;
}

/**
 * AUTH_WEBHOOK_ALLOWED_HOSTS, read by the rule the webhooks are checked with
 * (workflow/allowed-hosts.ts). That rule lets an entry that is no host allow nothing; here, where
 * a typo would silently refuse every webhook, such an entry stops the start.
 */
function checkWebhookHosts(cfg: Config): void {
  const list = cfg.AUTH_WEBHOOK_ALLOWED_HOSTS;
  if (list === undefined || WebhookHosts.parse(list).rejected.length === 0) return;
  throw new ConfigError(
    `AUTH_WEBHOOK_ALLOWED_HOSTS=${JSON.stringify(list)} is invalid: allowed is a comma-separated list of host names or addresses, each optionally with :port (like hooks.example.com,10.0.0.7:8443)`,
  );
}

/**
 * The AuthZEN settings (docs/authzen.md): the PDP identifier is `https://host[:port][/path]`
 * (`http://` too on a loopback host, for development) without userinfo, query, fragment or
 * trailing slash, since clients compare it to what they asked for; each subject type follows the
 * name rule.
 */
function checkAuthzen(cfg: Config): void {
  const base = cfg.AUTH_AUTHZEN_BASE_URL;
  if (base !== undefined && !isPdpIdentifier(base)) {
    throw new ConfigError(
      `AUTH_AUTHZEN_BASE_URL=${JSON.stringify(base)} is invalid: allowed is https://host[:port][/path] (or http:// on localhost, 127.0.0.1 or [::1]) without userinfo, query, fragment or trailing /`,
    );
  }
  for (const type of cfg.AUTH_AUTHZEN_SUBJECT_TYPES.split(',')) {
    if (!/^[A-Za-z0-9_.:@+|-]{1,128}$/.test(type)) {
      throw new ConfigError(
        `AUTH_AUTHZEN_SUBJECT_TYPES=${JSON.stringify(cfg.AUTH_AUTHZEN_SUBJECT_TYPES)} is invalid: allowed is a comma-separated list of types, each 1 to 128 characters of A-Z a-z 0-9 _ - . : @ + |`,
      );
    }
  }
}

/** Hosts on which a plain-http identifier is accepted: a developer's own machine, never the network. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function isPdpIdentifier(base: string): boolean {
  const shape = /^(https?):\/\/([^/?#@\s]+)(\/[^?#\s]*)?$/.exec(base);
  if (shape === null || base.endsWith('/')) return false;
  // The host as written (`127.1` is not `127.0.0.1` here): the identifier is compared as a string.
  const host = (shape[2] ?? '').replace(/:\d+$/, '').toLowerCase();
  try {
    const url = new URL(base);
    if (url.hostname === '') return false;
    return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(host));
  } catch {
    return false;
  }
}

/**
 * AUTH_JWT_PREVIOUS_SECRET_KEYS: every entry a secret of at least 32 bytes, like the signing one.
 * The line names the variable and the entry's position, never a value: they are secrets.
 */
function checkPreviousSecrets(list: string | undefined): void {
  if (list === undefined) return;
  list.split(',').forEach((secret, i) => {
    if (Buffer.byteLength(secret.trim(), 'utf8') < 32) {
      throw new ConfigError(
        `AUTH_JWT_PREVIOUS_SECRET_KEYS is invalid: entry ${i + 1} is too short; allowed is a comma-separated list of secrets, each of at least 32 bytes`,
      );
    }
  });
}

function isConfigKey(key: string): key is ConfigKey {
  return Object.hasOwn(PROPS, key);
}

/** The settings of `config/<NODE_ENV>.json`, or none when the file does not exist. */
function readConfigFile(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  let fromFile: unknown;
  try {
    fromFile = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
    throw new ConfigError(`${file} must hold a JSON object of settings (AUTH_* and OTEL_* variables)`);
  }
  for (const k of Object.keys(fromFile)) {
    if (!isConfigKey(k)) throw new ConfigError(`${file}: unknown setting ${k}`);
  }
  return fromFile as Record<string, unknown>;
}

/** The settings with the database's union settled: PostgreSQL needs its URL. */
function withDatabase(values: SchemaValues & { readonly AUTH_WORKERS: number }): Config {
  if (values.AUTH_DATABASE_TYPE === 'sqlite') return { ...values, AUTH_DATABASE_TYPE: 'sqlite' };
  const url = values.AUTH_POSTGRESQL_URL;
  if (url === undefined) throw new ConfigError('AUTH_POSTGRESQL_URL is required when AUTH_DATABASE_TYPE=postgresql');
  return { ...values, AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: url };
}

/**
 * Reads the settings: defaults, then `config/<NODE_ENV>.json` when present, then the environment.
 * Validates every value against {@link configSchema} and the rules between them, and freezes the
 * result. Throws {@link ConfigError} naming the first bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const merged: Record<string, unknown> = {};
  const file = join(cwd, 'config', `${env.NODE_ENV ?? 'production'}.json`);
  for (const [k, v] of Object.entries(readConfigFile(file))) {
    merged[k] = v;
  }
  for (const key of Object.keys(PROPS)) {
    const raw = env[key];
    if (raw === undefined || raw === '') continue;
    merged[key] = raw;
  }
  for (const [key, value] of Object.entries(merged)) {
    if (isConfigKey(key)) merged[key] = parseValue(value, PROPS[key]);
  }

  const ajv = new Ajv({ useDefaults: true, allErrors: false });
  // The type is read from the schema itself (schema.ts): what ajv accepts is what it says.
  const validate = ajv.compile<SchemaValues>(configSchema);
  if (!validate(merged)) {
    const first = validate.errors?.[0];
    const key = (first?.instancePath ?? '').replace(/^\//, '');
    const p = isConfigKey(key) ? PROPS[key] : undefined;
    const shown = JSON.stringify(shownValue(key, merged[key]));
    throw new ConfigError(`${key}=${shown} is invalid: allowed is ${p ? allowed(p) : first?.message}`);
  }
  const cfg = withDatabase({ ...merged, AUTH_WORKERS: merged.AUTH_WORKERS ?? usableCpus() });
  // Bytes, not characters: HS256 wants a key of at least its hash's size (RFC 7518 §3.2).
  if (cfg.AUTH_JWT_SECRET_KEY !== undefined && Buffer.byteLength(cfg.AUTH_JWT_SECRET_KEY, 'utf8') < 32) {
    throw new ConfigError('AUTH_JWT_SECRET_KEY is too short: allowed is a secret of at least 32 bytes');
  }
  checkPreviousSecrets(cfg.AUTH_JWT_PREVIOUS_SECRET_KEYS);
  if (cfg.AUTH_ENABLE_ENCRYPTION && cfg.AUTH_ENCRYPTION_KEY === undefined) {
    throw new ConfigError('AUTH_ENCRYPTION_KEY is required when AUTH_ENABLE_ENCRYPTION=true');
  }
  if (cfg.AUTH_ALLOW_CORS && cfg.AUTH_CORS_ORIGINS !== '*') {
    for (const origin of cfg.AUTH_CORS_ORIGINS.split(',')) {
      if (!/^https?:\/\/[^\s/,]+$/.test(origin.trim())) {
        throw new ConfigError(
          `AUTH_CORS_ORIGINS=${JSON.stringify(cfg.AUTH_CORS_ORIGINS)} is invalid: allowed is * or a comma-separated list of origins like https://app.example.com`,
        );
      }
    }
  }
  checkWebhookHosts(cfg);
  checkAuthzen(cfg);
  return Object.freeze(cfg);
}
