// The node:http adapter's router: the matching rules uWS applies natively (docs/api.md §4, §2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../../../src/http/engine/node/router.ts';
import type { Handler } from '../../../src/http/engine/port.ts';

/** A handler that is only compared by identity. */
const named = (name: string): Handler => Object.assign(() => undefined, { displayName: name });

function router(): { r: Router; h: Record<string, Handler> } {
  const h = {
    roles: named('roles'),
    role: named('role'),
    permission: named('permission'),
    other: named('other'),
    fallback: named('fallback'),
    static: named('static'),
  };
  const r = new Router();
  r.on('GET', '/api/roles', h.roles);
  r.on('POST', '/api/role/{role}', h.role);
  r.on('GET', '/api/permission/{role}/{permission}', h.permission);
  r.on('GET', '/api/permission/fixed/{permission}', h.static);
  r.otherMethods('/api/role/{role}', h.other);
  r.fallback(h.fallback);
  return { r, h };
}

test('parameters are the raw segments, in order', () => {
  const { r, h } = router();
  const m = r.find('get', '/api/permission/admin/users%2Ewrite');
  assert.equal(m?.handler, h.permission);
  assert.deepEqual(m?.params, ['admin', 'users%2Ewrite']);
});

test('a static segment wins over a parameter in the same place', () => {
  const { r, h } = router();
  assert.equal(r.find('get', '/api/permission/fixed/x')?.handler, h.static);
  assert.deepEqual(r.find('get', '/api/permission/fixed/x')?.params, ['x']);
  assert.equal(r.find('get', '/api/permission/other/x')?.handler, h.permission);
});

test('an empty segment, a trailing slash or a different depth matches nothing', () => {
  const { r, h } = router();
  for (const path of ['/api/role/', '/api//x', '/api/roles/', '/api/permission/a', '/api/permission/a/b/c', 'api/roles', '']) {
    assert.equal(r.find('post', path)?.handler, h.fallback, `POST ${path}`);
    assert.equal(r.find('get', path)?.handler, h.fallback, `GET ${path}`);
  }
});

test('another method on a known pattern goes to its other-methods handler; unknown paths to the fallback', () => {
  const { r, h } = router();
  assert.equal(r.find('post', '/api/role/admin')?.handler, h.role);
  assert.equal(r.find('delete', '/api/role/admin')?.handler, h.other);
  assert.equal(r.find('options', '/api/role/admin')?.handler, h.other);
  // A pattern without an other-methods handler: the fallback.
  assert.equal(r.find('post', '/api/roles')?.handler, h.fallback);
  assert.equal(r.find('get', '/nowhere')?.handler, h.fallback);
});
