// The import rules of DESIGN.md, checked by reading the sources (no dependency needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** folder under src/ → the modules it imports (relative ones resolved to their src/ folder). */
const imports = files(SRC).map((file) => {
  const rel = relative(SRC, file);
  const folder = rel.includes(sep) ? (rel.split(sep)[0] as string) : '.';
  const specs = [...readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1] as string);
  const targets = specs.map((s) => (s.startsWith('.') ? `src:${relative(SRC, join(file, '..', s)).split(sep)[0]}` : s));
  return { rel, folder, targets };
});

const DRIVERS: Record<string, string> = {
  'uWebSockets.js': 'http',
  'better-sqlite3': 'store',
  pg: 'store',
  ioredis: 'invalidation',
  piscina: 'pool',
  'prom-client': 'metrics',
};

test('authz imports only errors (and itself)', () => {
  for (const { rel, folder, targets } of imports) {
    if (folder !== 'authz') continue;
    for (const t of targets) assert.ok(t === 'src:authz' || t === 'src:errors', `${rel} imports ${t}`);
  }
});

test('http never imports store', () => {
  for (const { rel, folder, targets } of imports) {
    if (folder === 'http') assert.ok(!targets.includes('src:store'), `${rel} imports the store`);
  }
});

test('each driver is imported by exactly one folder', () => {
  for (const { rel, folder, targets } of imports) {
    for (const t of targets) {
      const owner = DRIVERS[t];
      if (owner !== undefined) assert.equal(folder, owner, `${rel} imports ${t}, which belongs to ${owner}/`);
    }
  }
});

test('only worker/ and primary/ choose adapters', () => {
  for (const { rel, folder, targets } of imports) {
    if (folder === 'worker' || folder === 'primary' || folder === 'store') continue;
    for (const t of targets) assert.ok(!/store\/(sqlite|postgres)/.test(t), `${rel} imports adapter ${t}`);
  }
  const adapterUsers = files(SRC)
    .filter((f) => /from '\.\.\/store\/(sqlite|postgres)/.test(readFileSync(f, 'utf8')))
    .map((f) => relative(SRC, f).split(sep)[0]);
  for (const user of adapterUsers) assert.ok(user === 'worker' || user === 'primary' || user === 'pool', `${user}/ picks a store adapter`);
});
