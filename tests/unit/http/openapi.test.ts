/**
 * The OpenAPI document (docs/api.md §13) as generators and validators read it: Redocly CLI's
 * recommended rules find nothing, and it names every parameter, header, scheme and server a
 * client needs. That each answer matches it is held by the route and bad-input suites.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '../../../src/http/api/openapi.ts';
import { ROUTES } from '../../../src/http/api/routes.ts';
import { ROOT, tempDir } from '../../helpers/server.ts';

interface Operation {
  operationId: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  responses: Record<string, { headers?: Record<string, unknown> }>;
}
interface Doc {
  info: { license?: { name: string } };
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
}

const doc = buildOpenApi(ROUTES) as Doc;
const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

test('Redocly CLI, recommended rules: no error and no warning', (t) => {
  const dir = tempDir('rbac-openapi-');
  t.after(dir.cleanup);
  const file = join(dir.dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', '--extends', 'recommended', '--format', 'json', file], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const report = JSON.parse(r.stdout) as {
    totals: { errors: number; warnings: number };
    problems: Array<{ ruleId: string; message: string; location?: Array<{ pointer: string }> }>;
  };
  const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer ?? '?'}`);
  assert.deepEqual(problems, []);
  assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  assert.equal(r.status, 0, r.stderr);
});

test('servers, a license, and security: bearer on /api, none on the public routes', () => {
  assert.ok((doc.servers ?? []).length > 0);
  assert.equal(doc.info.license?.name, 'MIT');
  for (const { path, method, op } of operations) {
    const expected = /^\/(api|access)\//.test(path) ? [{ bearer: [] }] : [];
    assert.deepEqual(op.security, expected, `${method} ${path}`);
  }
  for (const path of ['/ping', '/health', '/ready', '/version', '/openapi.json', '/console', '/console/{file}']) assert.ok(path in doc.paths, path);
});

test('every query parameter and request header a route reads', () => {
  const names = (path: string, method = 'get'): string[] => (doc.paths[path]?.[method]?.parameters ?? []).map((p) => `${p.in}:${p.name}`);
  assert.deepEqual(
    names('/api/changes').filter((n) => n.startsWith('query:')),
    ['query:since', 'query:limit', 'query:cursor'],
  );
  assert.ok(names('/ready').includes('query:strict'));
  for (const { path, method, op } of operations.filter((o) => o.path.startsWith('/api/'))) {
    const params = (op.parameters ?? []).map((p) => `${p.in}:${p.name}`);
    for (const header of ['header:X-Authz-Min-Revision', 'header:X-Request-Id']) assert.ok(params.includes(header), `${method} ${path}: ${header}`);
  }
});

test('every response header, where it is sent', () => {
  const headersOf = (op: Operation, status: string): string[] => Object.keys(op.responses[status]?.headers ?? {});
  for (const { path, method, op } of operations) {
    for (const status of Object.keys(op.responses)) assert.ok(headersOf(op, status).includes('X-Request-Id'), `${method} ${path} ${status}: X-Request-Id`);
    assert.ok(headersOf(op, '405').includes('Allow'), `${method} ${path}: 405 with Allow`);
    if (!/^\/(api|access)\//.test(path)) continue;
    assert.ok(headersOf(op, '401').includes('WWW-Authenticate'), `${method} ${path}: 401 with WWW-Authenticate`);
    assert.ok(headersOf(op, '503').includes('Retry-After'), `${method} ${path}: 503 with Retry-After`);
    const success = Object.keys(op.responses).find((s) => s.startsWith('2')) ?? '';
    assert.ok(headersOf(op, success).includes('X-Authz-Revision'), `${method} ${path} ${success}: X-Authz-Revision`);
  }
});

/** The shapes a generated client names its types after (docs/clients.md). */
const NAMED = [
  'Role',
  'Grant',
  'Membership',
  'Window',
  'Change',
  'AuditRow',
  'Decision',
  'ErrorEnvelope',
  'RoleList',
  'RoleListPage',
  'IssuedToken',
  'WriteItem',
  'WritesRequest',
  'WritesDone',
  'DryRunResult',
  'ExportLine',
  'ImportResult',
  'ImportPreview',
  'EvaluationRequest',
  'EvaluationsResponse',
];

/** Every `$ref` under `value`, with where it is. */
function refsOf(value: unknown, at = '#'): Array<{ ref: string; at: string }> {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => (k === '$ref' && typeof v === 'string' ? [{ ref: v, at }] : refsOf(v, `${at}/${k}`)));
}

test('components.schemas names the recurring shapes, and every $ref leads to one of them', () => {
  const schemas = (doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  for (const name of NAMED) assert.ok(name in schemas, `components.schemas lacks ${name}`);
  const refs = refsOf(doc);
  assert.ok(refs.length > 100, `only ${refs.length} $refs`);
  const unresolved = refs.filter(({ ref }) => !(ref.startsWith('#/components/schemas/') && ref.slice('#/components/schemas/'.length) in schemas));
  assert.deepEqual(unresolved, []);
  const used = new Set(refs.map(({ ref }) => ref.slice('#/components/schemas/'.length)));
  assert.deepEqual(
    Object.keys(schemas).filter((n) => !used.has(n)),
    [],
    'a component nothing refers to',
  );
  // A named shape is written once: no component holds a copy of another inline.
  const texts = new Map(Object.entries(schemas).map(([n, s]) => [JSON.stringify(s), n]));
  assert.equal(texts.size, Object.keys(schemas).length, 'two components with the same schema');
});

test('the success answers and the errors refer to their components', () => {
  const json = (op: Operation | undefined, status: string): unknown =>
    (op?.responses[status] as { content?: Record<string, { schema: unknown }> } | undefined)?.content?.['application/json']?.schema;
  assert.deepEqual(json(doc.paths['/api/roles']?.get, '200'), { $ref: '#/components/schemas/RoleListPage' });
  assert.deepEqual(json(doc.paths['/api/role/{role}']?.post, '201'), { $ref: '#/components/schemas/RoleCreatedEnvelope' });
  assert.deepEqual(json(doc.paths['/access/v1/evaluation']?.post, '200'), { $ref: '#/components/schemas/Decision' });
  for (const { path, method, op } of operations)
    for (const status of Object.keys(op.responses).filter((s) => /^[45]/.test(s) && path !== '/ready'))
      assert.deepEqual(json(op, status), { $ref: '#/components/schemas/ErrorEnvelope' }, `${method} ${path} ${status}`);
});
