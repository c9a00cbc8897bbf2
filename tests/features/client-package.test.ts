/**
 * The typed client as a package of its own (docs/clients.md): built by support/client-package.ts,
 * packed by npm, installed from the tarball into an empty project without the registry (it has no
 * dependency), then imported by name from plain Node.js and from a strict TypeScript program, and
 * used against a real server. Nothing of the service is loaded at run time: the project sees only
 * what the tarball holds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildClientPackage, CLIENT_PACKAGE_NAME } from '../../support/client-package.ts';
import { compileStrict, npmOffline, runNode } from '../helpers/client-builds.ts';
import { startServer, tempDir } from '../helpers/server.ts';

/** A consumer's program: the same calls typed by the package's own declarations; its findings printed as JSON. */
const PROGRAM = `
import { RbacClient, type ErrorEnvelope, type Grant, type Schemas } from '${CLIENT_PACKAGE_NAME}';

const [baseUrl, key] = process.argv.slice(2);
if (baseUrl === undefined || key === undefined) throw new Error('usage: use <baseUrl> <key>');
const rbac = new RbacClient({ baseUrl, key });

const created = await rbac.createRole('editor', { description: 'Edits articles' });
const granted = await rbac.grant('editor', 'article.edit', { expiresAt: new Date(Date.now() + 3_600_000) });
const added = await rbac.addMember('alice', 'editor');
const allowed = await rbac.hasPermission('alice', 'article.edit');
const listed = await rbac.listRoles({ limit: 10 });
const checked = await rbac.check([{ user: 'alice', permission: 'article.edit' }, { user: 'bob', permission: 'article.edit' }]);
const batch = await rbac.writes([{ op: 'role.create', role: 'viewer' }, { op: 'membership.add', user: 'bob', role: 'viewer', expires_at: new Date(Date.now() + 60_000) }]);
const missing = await rbac.deleteRole('nobody');

const grant: Grant | undefined = granted.data;
const roles: Array<Schemas['Role']> = listed.data ?? [];
const envelope = missing.body as ErrorEnvelope | undefined;
console.log(JSON.stringify({
  created: [created.status, created.data?.role, created.revision],
  granted: [granted.status, grant?.permission, typeof grant?.expires_at],
  added: [added.status, added.data?.user],
  allowed: allowed.data?.has_permission,
  roles: roles.map((r) => r.role),
  checked: [checked.data?.results.map((r) => r.has_permission), checked.data?.all],
  batch: [batch.status, batch.data?.results.length],
  missing: [missing.status, envelope?.success, missing.error],
}));
`;

test('the client package packs, installs from its tarball offline, and works from plain Node.js and strict TypeScript', async (t) => {
  const work = tempDir('rbac-client-package-');
  t.after(work.cleanup);
  const built = buildClientPackage(join(work.dir, 'package'));
  const [packed] = JSON.parse(npmOffline(built, ['pack', '--json', '--pack-destination', work.dir], join(work.dir, 'cache'))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  assert.ok(packed !== undefined);
  const shipped = packed.files.map((f) => f.path).sort();
  assert.ok(shipped.includes('index.js') && shipped.includes('index.d.ts') && shipped.includes('openapi.generated.d.ts'), shipped.join(' '));
  assert.deepEqual(
    shipped.filter((f) => !/\.(js|d\.ts)$/.test(f)),
    ['README.md', 'package.json'],
  );

  const app = join(work.dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  npmOffline(app, ['install', '--no-package-lock', join(work.dir, packed.filename)], join(work.dir, 'cache'));
  const installed = JSON.parse(readFileSync(join(app, 'node_modules', CLIENT_PACKAGE_NAME, 'package.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(installed.dependencies, undefined, 'the client depends on nothing');

  writeFileSync(join(app, 'use.ts'), PROGRAM);
  compileStrict(app, ['use.ts'], 'out');
  const server = await startServer();
  t.after(() => server.stop());
  const r = JSON.parse(runNode(join(app, 'out/use.js'), [server.baseUrl, server.client().key ?? ''], app)) as Record<string, unknown>;
  assert.deepEqual(r.created, [201, 'editor', 1]);
  assert.deepEqual(r.granted, [201, 'article.edit', 'string']);
  assert.deepEqual(r.added, [201, 'alice']);
  assert.equal(r.allowed, true);
  assert.deepEqual(r.roles, ['editor']);
  assert.deepEqual(r.checked, [[true, false], false]);
  assert.deepEqual(r.batch, [200, 2]);
  assert.deepEqual(r.missing, [404, false, "Role 'nobody' does not exist"]);
});
