// The settings are read from their one schema: every default the schema gives is there, nothing
// else is made up, and the type follows the schema. The webhook-host allow-list is read at
// start-up by the rule the webhooks are checked with (it used to be an ASCII copy of its own that
// refused host names the webhooks accept).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, loadConfig, type Config } from '../../../src/config/index.ts';
import { configSchema } from '../../../src/config/schema.ts';
import { WebhookHosts } from '../../../src/workflow/allowed-hosts.ts';

const dir = mkdtempSync(join(tmpdir(), 'rbac-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// The type is the schema's: an enum's values, numbers, booleans (a compile-time check).
const LEVEL: Config['AUTH_LOG_LEVEL'] extends 'debug' | 'info' | 'warn' | 'error' | 'silent' ? true : never = true;
const PORT: Config['AUTH_SERVER_PORT'] extends number ? true : never = true;
const CORS: Config['AUTH_ALLOW_CORS'] extends boolean ? true : never = true;
void [LEVEL, PORT, CORS];

test('with nothing set, every setting the schema gives a default has it, and no other is made up but AUTH_WORKERS', () => {
  const cfg = loadConfig({}, dir);
  const props: Record<string, { type: string; default?: unknown }> = configSchema.properties;
  for (const [key, p] of Object.entries(props)) {
    if (key === 'AUTH_WORKERS') assert.ok(Number.isInteger(cfg.AUTH_WORKERS) && cfg.AUTH_WORKERS >= 1);
    else assert.deepEqual((cfg as unknown as Record<string, unknown>)[key], p.default, key);
  }
  assert.deepEqual(
    Object.keys(cfg).sort(),
    Object.keys(props)
      .filter((k) => k === 'AUTH_WORKERS' || props[k]?.default !== undefined)
      .sort(),
  );
  assert.ok(Object.isFrozen(cfg));
});

test('PostgreSQL without its URL stops the start; with it, the URL is there', () => {
  assert.throws(
    () => loadConfig({ AUTH_DATABASE_TYPE: 'postgresql' }, dir),
    (err: unknown) => err instanceof ConfigError && /AUTH_POSTGRESQL_URL is required/.test(err.message),
  );
  const cfg = loadConfig({ AUTH_DATABASE_TYPE: 'postgresql', AUTH_POSTGRESQL_URL: 'postgresql://db/x' }, dir);
  assert.equal(cfg.AUTH_DATABASE_TYPE === 'postgresql' ? cfg.AUTH_POSTGRESQL_URL : undefined, 'postgresql://db/x');
});

test('the allow-list starts exactly when the webhooks would accept every entry of it', () => {
  const lists = [
    'hooks.example.com',
    'hooks.example.com:8443,10.0.0.7',
    '[::1]:9000',
    'bücher.example',
    'ハッシュ.example:443',
    'https://hooks.example.com',
    'hooks.example.com:99999',
    'hooks.example.com:0',
    'a b.example',
    'hooks.example.com/path',
  ];
  for (const list of lists) {
    const accepted = WebhookHosts.parse(list).rejected.length === 0;
    const started = (() => {
      try {
        loadConfig({ AUTH_WEBHOOK_ALLOWED_HOSTS: list }, dir);
        return true;
      } catch (err) {
        assert.ok(err instanceof ConfigError && err.message.startsWith('AUTH_WEBHOOK_ALLOWED_HOSTS='), String(err));
        return false;
      }
    })();
    assert.equal(started, accepted, list);
  }
  assert.doesNotThrow(() => loadConfig({ AUTH_WEBHOOK_ALLOWED_HOSTS: 'bücher.example' }, dir), 'a host name in another script, as the webhooks accept it');
});
