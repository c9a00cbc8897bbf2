/**
 * Bad names in path segments (docs/api.md §4): bad percent-encoding, over-long names, non-ASCII,
 * punctuation, control characters and encoded slashes, each a 400 naming the field on every
 * route; 401, 405 and 404 come first. The seeded client is unchanged afterwards.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { afterTheBadInput, badInputServer, c, assertUnchanged, expectErr, rawRequest, asApi, auth, expectBadNameEverywhere } from '../helpers/bad-input.ts';

badInputServer();

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

describe('bad names in path segments', () => {
  test('invalid percent-encoding is 400 naming the field', async () => {
    for (const bad of ['%zz', '%', '%4', '%G1', 'a%2', 'ab%', '%%41', '%E0%A4%A', '%C3%28', '%FF', '%C0%AF', '%ED%A0%80', '%F8%88%80%80%80']) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('129 characters (and far more) are 400 naming the field; 128 is fine', async () => {
    await expectBadNameEverywhere('n'.repeat(129), '129 chars');
    await expectBadNameEverywhere('%41'.repeat(129), '129 encoded chars');
    for (const n of [1000, 3000]) {
      const res = await c.request('POST', `/api/role/${'n'.repeat(n)}`);
      expectErr(res, 400, 'role', `${n} chars`);
    }
    const ok = await c.hasPermission('u'.repeat(128), 'p'.repeat(128));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.data, { has_permission: false });
    await assertUnchanged();
  });

  test('non-ASCII (percent-encoded) is 400 naming the field', async () => {
    for (const bad of [
      '%C3%A9', // é
      'caf%C3%A9',
      '%E2%82%AC', // €
      '%F0%9F%98%80', // emoji
      '%EF%BC%A1', // fullwidth A
      '%D0%B0dmin', // Cyrillic a + dmin
      '%E2%80%8B', // zero-width space
      '%C2%A0', // no-break space
      '%EF%BB%BFadmin', // BOM + admin
      'admin%CC%81', // combining accent
    ]) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('raw non-ASCII bytes in the request line are 400 naming the field', async () => {
    for (const [path, field] of [
      ['/api/role/caf\u00e9', 'role'],
      ['/api/role/\u{1F600}', 'role'],
      ['/api/membership/j\u00fcrgen/admin', 'user'],
      ['/api/has_permission/alice@example.com/r\u00e9ad', 'permission'],
    ] as const) {
      const method = path.startsWith('/api/has_permission') ? 'GET' : 'POST';
      const res = asApi(await rawRequest(`${method} ${path} HTTP/1.1\r\n${auth()}`));
      expectErr(res, 400, field, `raw ${path}`);
    }
    await assertUnchanged();
  });

  test('spaces and punctuation outside the allowed set are 400 naming the field', async () => {
    for (const bad of [
      '%20',
      'a%20b',
      '%20admin',
      'admin%20',
      '%22',
      '%27',
      '%3C',
      '%3E',
      '%2C',
      '%3B',
      '%3D',
      '%26',
      '%3F',
      '%23',
      '%25',
      '%2541',
      '%5C',
      '%2A',
      '%21',
      '%7E',
      '%24',
      '%28',
      '%5B',
      '%7B',
      '%60',
      '%5E',
      'a~b',
      'a!b',
      'a*b',
      "a'b",
      'a(b)',
    ]) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('control characters are 400 naming the field', async () => {
    for (const bad of ['%00', 'a%00b', 'admin%00', '%01', '%08', '%09', '%0A', '%0D', '%0D%0A', 'a%0D%0AX-Evil:%201', '%1B', '%1F', '%7F', '%C2%85']) {
      await expectBadNameEverywhere(bad, bad);
    }
    await assertUnchanged();
  });

  test('an encoded slash or backslash inside a segment is 400 naming the field', async () => {
    for (const bad of ['a%2Fb', 'a%2fb', '%2F', '%2Fapi%2Froles', '..%2F..%2Fetc', 'admin%2F', '%2Fadmin', 'a%5Cb']) {
      await expectBadNameEverywhere(bad, bad);
    }
    const raw = asApi(await rawRequest(`POST /api/role/a\\b HTTP/1.1\r\n${auth()}`));
    expectErr(raw, 400, 'role', 'raw backslash');
    await assertUnchanged();
  });

  test('order: a bad name without a valid key is 401; with a wrong method 405; unknown path 404', async () => {
    expectErr(await c.withKey(undefined).request('POST', '/api/role/%zz'), 401);
    expectErr(await c.withKey('Bearer nope').request('DELETE', '/api/membership/a%2Fb/admin'), 401);
    expectErr(await c.request('PUT', '/api/role/%zz'), 405);
    expectErr(await c.withKey(undefined).request('PATCH', '/api/permission/%00/%zz'), 405);
    expectErr(await c.request('GET', '/api/rolez/%zz'), 404);
    await assertUnchanged();
  });
});

afterTheBadInput(1600);
