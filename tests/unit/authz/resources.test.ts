import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ComposedName } from '../../../src/authz/composed-name.ts';
import { TenantGraph } from '../../../src/authz/graph.ts';
import { readPermission } from '../../../src/authz/resources.ts';
import type { Change } from '../../../src/authz/changes.ts';

/** A graph fed `changes` one revision at a time, as the cache does. */
function feed(g: TenantGraph, changes: Change[]): void {
  for (const c of changes) assert.equal(g.apply([c], g.revision + 1), 'applied');
}

test('a permission name reads as global, type-wide or one resource whose id spans the inner colons', () => {
  assert.deepEqual(readPermission('read'), { type: undefined, id: undefined, action: 'read' });
  assert.deepEqual(readPermission('doc:read'), { type: 'doc', id: undefined, action: 'read' });
  assert.deepEqual(readPermission('doc:42:read'), { type: 'doc', id: '42', action: 'read' });
  assert.deepEqual(readPermission('doc:2026:q1:read'), { type: 'doc', id: '2026:q1', action: 'read' });
  assert.deepEqual(readPermission('doc::read'), { type: 'doc', id: '', action: 'read' });
});

test('known resources follow grants, revokes and role deletes, and only the last grant naming one forgets it', () => {
  const g = new TenantGraph();
  feed(g, [
    { op: 'role.create', role: 'a', description: '' },
    { op: 'role.create', role: 'b', description: '' },
    { op: 'permission.grant', role: 'a', permission: 'doc:d1:read' },
    { op: 'permission.grant', role: 'b', permission: 'doc:d1:read' },
    { op: 'permission.grant', role: 'b', permission: 'doc:d1:write' },
    { op: 'permission.grant', role: 'a', permission: 'doc:x:y:read' },
    { op: 'permission.grant', role: 'a', permission: 'doc:read' },
    { op: 'permission.grant', role: 'a', permission: 'img:i1:view' },
    { op: 'permission.grant', role: 'a', permission: 'img::view' },
  ]);
  assert.deepEqual(g.knownResources('doc'), ['d1', 'x:y']);
  assert.deepEqual(g.knownResources('img'), ['i1'], 'an empty id is no resource');
  assert.deepEqual(g.knownResources('none'), []);
  feed(g, [{ op: 'permission.revoke', role: 'b', permission: 'doc:d1:write' }]);
  assert.deepEqual(g.knownResources('doc'), ['d1', 'x:y'], 'still granted as doc:d1:read');
  feed(g, [{ op: 'permission.revoke', role: 'a', permission: 'doc:d1:read' }]);
  assert.deepEqual(g.knownResources('doc'), ['d1', 'x:y'], 'still granted to role b');
  feed(g, [{ op: 'role.delete', role: 'b' }]);
  assert.deepEqual(g.knownResources('doc'), ['x:y']);
  feed(g, [{ op: 'role.delete', role: 'a' }]);
  assert.deepEqual(g.knownResources('doc'), []);
  assert.deepEqual(g.knownResources('img'), []);
});

test('checkAny: one of up to three permissions, `/` in an action spelled `.`; remember keeps non-empty lists until the next change', () => {
  const g = new TenantGraph();
  feed(g, [
    { op: 'role.create', role: 'a', description: '' },
    { op: 'permission.grant', role: 'a', permission: 'doc:read' },
    { op: 'membership.add', user: 'alice', role: 'a' },
  ]);
  const spelled = (type: string, action: string, id?: string): ComposedName => {
    const name = new ComposedName();
    assert.equal(id === undefined ? name.compose(type, action) : name.compose(type, id, action), true);
    return name;
  };
  assert.equal(g.checkAny('alice', 'read', spelled('doc', 'read'), undefined), true);
  assert.equal(g.checkAny('alice', 'read', undefined, spelled('doc', 'read')), true);
  assert.equal(g.checkAny('alice', 'read', spelled('img', 'read'), undefined), false);
  assert.equal(g.checkAny('alice', 'read', undefined, spelled('doc', 'read', 'd1')), false);
  assert.equal(new ComposedName().compose('doc', 'r\u00e9ad'), false, 'a name is ASCII: nothing to look up');
  assert.equal(new ComposedName().compose('d'.repeat(120), 'read'), true);
  assert.equal(new ComposedName().compose('d'.repeat(124), 'read'), false, 'longer than a name can be');
  assert.equal(g.checkAny('bob', 'doc:read', undefined, undefined), false);
  // An action's `/` is spelled `.` (MCP's tools/call), in the action part only; the global candidate may be spelled too.
  feed(g, [
    { op: 'permission.grant', role: 'a', permission: 'tool:search_web:tools.call' },
    { op: 'permission.grant', role: 'a', permission: 'resources.read' },
  ]);
  assert.equal(g.checkAny('alice', 'tools/call', undefined, spelled('tool', 'tools/call', 'search_web')), true);
  assert.equal(g.checkAny('alice', 'tools/call', undefined, spelled('tool', 'tools/call', 'search/web')), false, 'an id keeps its /');
  const global = new ComposedName();
  assert.equal(global.action('resources/read'), true);
  assert.equal(g.checkAny('alice', global, undefined, undefined), true);
  assert.equal(g.checkAny('alice', 'resources/read', undefined, undefined), false, 'a string is looked up as it is');
  assert.equal(g.checkAny('alice', undefined, undefined, undefined), false);
  let builds = 0;
  const list = (): readonly string[] => g.remember('k', () => (builds++, ['b', 'a']));
  assert.deepEqual(list(), ['a', 'b']);
  list();
  assert.equal(builds, 1);
  feed(g, [{ op: 'membership.add', user: 'bob', role: 'a' }]);
  list();
  assert.equal(builds, 2, 'rebuilt after a change');
  g.remember('empty', () => (builds++, []));
  g.remember('empty', () => (builds++, []));
  assert.equal(builds, 4, 'empty lists are not kept');
});
