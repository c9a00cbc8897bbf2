// The import rules of DESIGN.md ("Import rules"). Every module reference under src/ is read with
// the TypeScript parser (a regular expression misses multi-line, dynamic and require() imports)
// and checked against one allow-table, so that a new arrow between folders is a deliberate edit
// of ALLOW below. Type-only imports count: an arrow is an arrow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const HERE = 'tests/unit/imports.test.ts';
const OUTSIDE = '(outside src/)';

/**
 * Folder under src/ (its first path segment; '.' is src/main.ts) → the other folders it may
 * import. Imports inside a folder are always allowed. Kept equal to what src/ does today: a row
 * for every folder, and no arrow that nothing uses (both are tested).
 */
const ALLOW: Readonly<Record<string, readonly string[]>> = {
  '.': ['config', 'log', 'primary', 'worker'],
  audit: ['authz', 'log', 'time'], // time: the trail's batching and retention wait on a clock
  authz: ['errors'], // pure domain (DESIGN): errors only, and no node:* (NO_BUILTINS)
  authzen: ['authz', 'errors'], // the AuthZEN PDP over the domain: no I/O (NO_BUILTINS)
  cache: ['authz', 'time'], // time: the gap and revision waits and the revalidation run on a clock
  cli: ['client', 'config', 'crypto', 'http', 'store'], // the operator's commands: settings, keys, the store's maintenance; client: the routes' paths of export and import; http: the engine's name only (NARROW)
  client: [],
  console: ['client'], // the browser's console speaks to the API through the typed client only
  config: ['workflow'], // the webhook-host rule only (NARROW): checked at start-up as the webhooks are
  crypto: ['authz'], // the tenant id's shape, for a token's subject
  errors: [],
  http: ['audit', 'authz', 'authzen', 'cache', 'config', 'crypto', 'errors', 'log', 'metrics', 'time', 'trace', 'workflow'], // never store: reads via cache
  invalidation: ['authz', 'log', 'trace'],
  log: [],
  metrics: ['log'],
  pool: ['crypto', 'errors', 'log', 'store', 'trace'], // the thread hop names no domain type: tasks are store methods by name
  ipc: ['invalidation', 'metrics'], // the primary ↔ worker messages, owned by neither side: see NARROW
  primary: ['config', 'http', 'invalidation', 'ipc', 'log', 'metrics', 'pool', 'store', 'time', 'trace', 'workflow'], // pool, store: the scheduler's own store; time: its clock
  store: ['audit', 'authz', 'config', 'crypto', 'errors', 'time', 'workflow'],
  time: [],
  trace: ['config', 'log'], // the tracer port, and OpenTelemetry behind it (loaded only when traces are on); log: span ids on log lines
  workflow: ['audit', 'authz', 'log', 'time'], // time: the scheduler runs on an injected clock
  worker: ['audit', 'authz', 'cache', 'config', 'errors', 'http', 'invalidation', 'ipc', 'log', 'metrics', 'pool', 'store', 'trace'],
};

/**
 * Arrows of the table that may reach only some files of their target folder: `from → to` → those
 * files. The IPC protocol names the messages it carries and loads no adapter or recorder, so both
 * the primary and a worker can import it without loading the other side's code.
 */
const NARROW: Readonly<Record<string, readonly string[]>> = {
  'ipc → invalidation': ['invalidation/messages.ts'],
  'ipc → metrics': ['metrics/requests.ts'],
  'config → workflow': ['workflow/allowed-hosts.ts'],
  'cli → http': ['http/engine/index.ts'],
};

/** Driver → the one place (a src/ path prefix) that may load it; DESIGN: ports never do. */
const DRIVERS: Readonly<Record<string, string>> = {
  'uWebSockets.js': 'http/engine/uws/',
  'better-sqlite3': 'store/sqlite/',
  pg: 'store/postgres/',
  ioredis: 'invalidation/redis.ts',
  piscina: 'pool/',
  'prom-client': 'metrics/',
  jose: 'crypto/',
  standardwebhooks: 'workflow/webhook.ts',
  // OpenTelemetry: one file, loaded by a dynamic import only when traces are on (RESTRICTED below).
  '@opentelemetry/api': 'trace/otel.ts',
  '@opentelemetry/core': 'trace/otel.ts',
  '@opentelemetry/exporter-trace-otlp-http': 'trace/otel.ts',
  '@opentelemetry/resources': 'trace/otel.ts',
  '@opentelemetry/sdk-trace-base': 'trace/otel.ts',
  '@opentelemetry/sdk-trace-node': 'trace/otel.ts',
  '@opentelemetry/semantic-conventions': 'trace/otel.ts',
};

/** Folders with no I/O, or run in a browser: no Node.js built-in, with or without the node: prefix. */
const NO_BUILTINS = ['authz', 'authzen', 'console'];

/**
 * Adapters (src/ path prefixes) and the only files outside them that may import them: each port
 * has one factory, and a pool thread's task file loads the one adapter (so one driver) it runs.
 */
const RESTRICTED: ReadonlyArray<{ readonly target: string; readonly from: readonly string[] }> = [
  { target: 'http/engine/node/', from: ['http/engine/index.ts'] },
  { target: 'http/engine/uws/', from: ['http/engine/index.ts'] },
  { target: 'store/sqlite/', from: ['store/index.ts', 'pool/tasks/sqlite-task.ts'] },
  { target: 'store/postgres/', from: ['store/index.ts', 'pool/tasks/postgres-task.ts'] },
  { target: 'invalidation/ipc.ts', from: ['invalidation/index.ts'] },
  { target: 'invalidation/redis.ts', from: ['invalidation/index.ts'] },
  { target: 'trace/otel.ts', from: ['trace/index.ts'] },
];

type Target =
  | { readonly kind: 'src'; readonly path: string; readonly folder: string }
  | { readonly kind: 'builtin' }
  | { readonly kind: 'package'; readonly name: string }
  | { readonly kind: 'computed' };

/** One module reference: `file` is relative to src/, with forward slashes. */
interface Arrow {
  readonly file: string;
  readonly line: number;
  readonly kind: string;
  readonly spec: string;
  readonly target: Target;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? tsFiles(p) : /\.[cm]?tsx?$/.test(e.name) ? [p] : [];
  });
}

function folderOf(path: string): string {
  if (path === '..' || path.startsWith('../')) return OUTSIDE;
  return path.includes('/') ? (path.split('/')[0] as string) : '.';
}

function resolveTarget(file: string, spec: string | undefined): Target {
  if (spec === undefined) return { kind: 'computed' };
  if (spec.startsWith('.')) {
    const path = posix.normalize(posix.join(posix.dirname(file), spec));
    return { kind: 'src', path, folder: folderOf(path) };
  }
  if (isBuiltin(spec)) return { kind: 'builtin' };
  const parts = spec.split('/');
  return { kind: 'package', name: (spec.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/') };
}

function literal(node: ts.Node | undefined): string | undefined {
  return node !== undefined && ts.isStringLiteralLike(node) ? node.text : undefined;
}

/** True for `createRequire(...)` and `module.createRequire(...)`. */
function isCreateRequire(node: ts.Node): boolean {
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression;
  const name = ts.isPropertyAccessExpression(callee) ? callee.name : callee;
  return ts.isIdentifier(name) && name.text === 'createRequire';
}

/** Names bound to a require function: `require`, and `const r = createRequire(...)`. */
function requireNames(sf: ts.SourceFile): Set<string> {
  const names = new Set(['require']);
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer !== undefined && isCreateRequire(node.initializer)) {
      names.add(node.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return names;
}

/** `import(x)`, `require(x)`, `createRequire(...)(x)`; the specifier is undefined when computed. */
function callRef(call: ts.CallExpression, requires: Set<string>): { kind: string; spec: string | undefined } | undefined {
  const callee = call.expression;
  const isRequire = (ts.isIdentifier(callee) && requires.has(callee.text)) || isCreateRequire(callee);
  const kind = callee.kind === ts.SyntaxKind.ImportKeyword ? 'dynamic import' : isRequire ? 'require' : undefined;
  return kind === undefined ? undefined : { kind, spec: literal(call.arguments[0]) };
}

/** The module a node refers to, if it is an import, a re-export or a loading call. */
function moduleRef(node: ts.Node, requires: Set<string>): { kind: string; spec: string | undefined } | undefined {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause;
    const kind = clause === undefined ? 'side-effect import' : clause.isTypeOnly ? 'import type' : 'import';
    return { kind, spec: literal(node.moduleSpecifier) };
  }
  if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) return { kind: 're-export', spec: literal(node.moduleSpecifier) };
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    return { kind: 'import =', spec: literal(node.moduleReference.expression) };
  }
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) return { kind: 'import() type', spec: literal(node.argument.literal) };
  return ts.isCallExpression(node) ? callRef(node, requires) : undefined;
}

function arrowsOf(root: string, path: string): Arrow[] {
  const file = relative(root, path).split(sep).join('/');
  const kind = path.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, kind);
  const requires = requireNames(sf);
  const found: Arrow[] = [];
  const visit = (node: ts.Node): void => {
    const ref = moduleRef(node, requires);
    if (ref !== undefined) {
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      found.push({ file, line, kind: ref.kind, spec: ref.spec ?? '<computed>', target: resolveTarget(file, ref.spec) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every module reference in the .ts files under `root` (a src/ tree). */
function scan(root: string): Arrow[] {
  return tsFiles(root).flatMap((path) => arrowsOf(root, path));
}

const where = (a: Arrow): string => `src/${a.file}:${a.line} (${a.kind} '${a.spec}')`;

function checkTable(a: Arrow): string | undefined {
  if (a.target.kind !== 'src') return undefined;
  const from = folderOf(a.file);
  const to = a.target.folder;
  if (to === OUTSIDE) return `${where(a)} leaves src/: the build (rootDir src) cannot ship it`;
  const row = ALLOW[from];
  if (row === undefined) return `${where(a)}: folder '${from}' has no row; add ALLOW['${from}'] in ${HERE}`;
  if (to === from || row.includes(to)) return undefined;
  return (
    `${where(a)} crosses ${from}/ → ${to}/, not in the allow-table: if deliberate, add '${to}' to ` +
    `ALLOW['${from}'] in ${HERE} (and to DESIGN.md), else go through a folder ALLOW['${from}'] lists`
  );
}

function checkDriver(a: Arrow): string | undefined {
  if (a.target.kind !== 'package') return undefined;
  const owner = DRIVERS[a.target.name];
  if (owner === undefined || a.file.startsWith(owner)) return undefined;
  return `${where(a)} loads a driver only src/${owner} may load (DRIVERS['${a.target.name}'] in ${HERE}); go through its port`;
}

function checkBuiltin(a: Arrow): string | undefined {
  const folder = folderOf(a.file);
  if (a.target.kind !== 'builtin' || !NO_BUILTINS.includes(folder)) return undefined;
  return `${where(a)}: ${folder}/ is pure domain (DESIGN: no I/O, no node:*), see NO_BUILTINS in ${HERE}`;
}

function checkRestricted(a: Arrow): string | undefined {
  const { target } = a;
  if (target.kind !== 'src') return undefined;
  const rule = RESTRICTED.find((r) => target.path.startsWith(r.target) && !a.file.startsWith(r.target));
  if (rule === undefined || rule.from.includes(a.file)) return undefined;
  const only = rule.from.join(', ');
  return `${where(a)} picks adapter src/${rule.target}, which only ${only} may import (RESTRICTED in ${HERE}); use the port's factory`;
}

function checkNarrow(a: Arrow): string | undefined {
  if (a.target.kind !== 'src') return undefined;
  const files = NARROW[`${folderOf(a.file)} → ${a.target.folder}`];
  if (files === undefined || files.includes(a.target.path)) return undefined;
  return `${where(a)} may reach ${a.target.folder}/ only through ${files.join(', ')} (NARROW in ${HERE})`;
}

function checkComputed(a: Arrow): string | undefined {
  return a.target.kind === 'computed' ? `${where(a)}: a computed specifier cannot be checked; use a string literal` : undefined;
}

/** The HTTP engine port and its adapters sit below the rest of http/ (DESIGN): they never import it. */
const BELOW_PORT = 'http/engine/';

function checkBelowPort(a: Arrow): string | undefined {
  const { target } = a;
  if (target.kind !== 'src' || !a.file.startsWith(BELOW_PORT)) return undefined;
  if (!target.path.startsWith('http/') || target.path.startsWith(BELOW_PORT)) return undefined;
  return `${where(a)}: src/${BELOW_PORT} is below the layers of http/ that use it (BELOW_PORT in ${HERE}); pass what it needs through the port`;
}

const CHECKS = [checkTable, checkDriver, checkBuiltin, checkRestricted, checkNarrow, checkBelowPort, checkComputed];

function violations(arrows: readonly Arrow[]): string[] {
  return arrows.flatMap((a) => CHECKS.map((check) => check(a)).filter((v): v is string => v !== undefined));
}

const real = scan(SRC);

test('the parser sees the imports of src/, dynamic and require() ones included', () => {
  assert.ok(real.length >= 150, `only ${real.length} module references found under src/`);
  const seen = (file: string, kind: string, spec: string): boolean => real.some((a) => a.file === file && a.kind === kind && a.spec === spec);
  assert.ok(seen('main.ts', 'dynamic import', './primary/index.ts'), 'the dynamic import of primary/ in src/main.ts');
  assert.ok(seen('http/engine/uws/index.ts', 'require', 'uWebSockets.js'), 'createRequire(...)(uWebSockets.js)');
  assert.ok(seen('config/index.ts', 're-export', './redact.ts'), 'a re-export');
  assert.ok(seen('http/server.ts', 'import', './reply/reply.ts'), 'a named import of a sibling');
});

test('every import under src/ follows the import rules', () => {
  assert.deepEqual(violations(real), []);
});

test('the allow-table has one row per folder under src/, and no stale arrow', () => {
  const folders = [
    '.',
    ...readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name),
  ].sort();
  assert.deepEqual(Object.keys(ALLOW).sort(), folders, `ALLOW in ${HERE} must have exactly one row per folder under src/`);
  const used = new Set(real.flatMap((a) => (a.target.kind === 'src' ? [`${folderOf(a.file)} → ${a.target.folder}`] : [])));
  const stale = Object.entries(ALLOW).flatMap(([from, row]) => row.filter((to) => !used.has(`${from} → ${to}`)).map((to) => `ALLOW['${from}'] lists '${to}'`));
  assert.deepEqual(stale, [], 'nothing imports along these arrows any more: remove them from the table');
});

test('the allow-table itself keeps the rules DESIGN.md states', () => {
  assert.deepEqual(ALLOW['authz'], ['errors'], 'authz imports only errors');
  assert.ok(!ALLOW['http']?.includes('store'), 'http never imports store (reads through cache, writes through the worker)');
  for (const [from, row] of Object.entries(ALLOW)) {
    for (const to of row) assert.ok(to !== from && ALLOW[to] !== undefined, `ALLOW['${from}'] names '${to}', which is no other row`);
  }
});

/** A synthetic src/ tree: path → source. Each line marked `// BAD` must be reported, once. */
const SYNTHETIC: Readonly<Record<string, string>> = {
  'authz/a.ts': "import type { Store } from '../store/port.ts'; // BAD\nexport type S = Store;\n",
  'authz/b.ts': "import '../cache/index.ts'; // BAD\nimport { AppError } from '../errors/index.ts';\nexport { AppError };\n",
  'authz/c.ts': "export * from '../http/server.ts'; // BAD\nexport { x } from './b.ts';\n",
  // An import over several lines is reported at its first line.
  'cache/m.ts': "import { // BAD\n  type Store,\n} from '../store/port.ts';\nexport type S = Store;\n",
  'authz/d.ts': [
    "export const p = await import('../pool/index.ts'); // BAD",
    "import { readFileSync } from 'node:fs'; // BAD",
    "import 'fs'; // BAD",
    "export type T = typeof import('../worker/index.ts'); // BAD",
    'export { readFileSync };',
  ].join('\n'),
  'http/x.ts': [
    "import { createRequire } from 'node:module';",
    "import type { Store } from '../store/port.ts'; // BAD",
    "export const pg = createRequire(import.meta.url)('pg'); // BAD",
    'const load = createRequire(import.meta.url);',
    "export const pool = load('piscina'); // BAD",
    "export const redis = require('ioredis'); // BAD",
    'export type S = Store;',
  ].join('\n'),
  'http/engine/index.ts': "export { uwsApp } from './uws/index.ts';\n",
  'http/engine/limits.ts': "import { send } from '../reply/reply.ts'; // BAD\nimport type { Handler } from './port.ts';\nexport { send, type Handler };\n",
  'http/engine/uws/index.ts': "import { createRequire } from 'node:module';\nexport const uws = createRequire(import.meta.url)('uWebSockets.js');\n",
  'worker/index.ts': [
    "import { uwsApp } from '../http/engine/uws/index.ts'; // BAD",
    "import { SqliteStore } from '../store/sqlite/index.ts'; // BAD",
    "import { chooseEngine } from '../http/engine/index.ts';",
    "import '../primary/hub.ts'; // BAD",
    "import type { ToWorker } from '../ipc/protocol.ts';",
    'const name = process.env.X ?? "";',
    'export const m = await import(name); // BAD',
    'export { uwsApp, SqliteStore, chooseEngine };',
  ].join('\n'),
  'pool/tasks/sqlite-task.ts': "import '../../store/postgres/index.ts'; // BAD\nimport '../../store/sqlite/index.ts';\n",
  'store/index.ts': "export * from './sqlite/index.ts';\nexport * from './postgres/index.ts';\n",
  'primary/relay.ts': "import '../invalidation/redis.ts'; // BAD\nimport '../invalidation/index.ts';\n",
  'cache/index.ts': "import type { G } from '../authz/graph.ts';\nexport type C = G;\n",
  'main.ts': "import '../outside.ts'; // BAD\nimport './worker/index.ts';\n",
  'ipc/protocol.ts':
    "import type { ChangeMessage } from '../invalidation/messages.ts';\nimport type { Bus } from '../invalidation/port.ts'; // BAD\nexport type M = ChangeMessage | Bus;\n",
};

function expectedBad(): string[] {
  return Object.entries(SYNTHETIC).flatMap(([file, text]) => text.split('\n').flatMap((line, i) => (line.includes('// BAD') ? [`src/${file}:${i + 1} `] : [])));
}

test('self-test: the checker reports each forbidden arrow of a synthetic tree, and nothing else', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'imports-test-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(SYNTHETIC)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  const found = violations(scan(root));
  const expected = expectedBad();
  for (const at of expected) assert.equal(found.filter((v) => v.startsWith(at)).length, 1, `expected one report at ${at}, got:\n${found.join('\n')}`);
  assert.equal(found.length, expected.length, `unexpected reports:\n${found.join('\n')}`);
});
