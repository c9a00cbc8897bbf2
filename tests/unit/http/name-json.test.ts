// The JSON that list pages and POST /api/check write straight from names (src/http/reply/name-json.ts)
// is the JSON a serialiser makes of the same items, for any names the name rule allows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NAME_PATTERN } from '../../../src/authz/names.ts';
import { checkResultsJson, nameItemsJson } from '../../../src/http/reply/name-json.ts';

const nameArb = fc.stringMatching(new RegExp(NAME_PATTERN));

test('a page of names is the array of one-field objects, empty included', () => {
  fc.assert(
    fc.property(fc.constantFrom('name', 'user', 'role'), fc.array(nameArb, { maxLength: 30 }), (field, names) => {
      const json = nameItemsJson(field, names);
      assert.equal(json, JSON.stringify(names.map((n) => ({ [field]: n }))));
    }),
  );
});

test('check results: every check in order with its answer, and all/any over them', () => {
  const checkArb = fc.record({ user: nameArb, permission: nameArb, allowed: fc.boolean() });
  fc.assert(
    fc.property(fc.array(checkArb, { minLength: 1, maxLength: 30 }), (checks) => {
      const answers = new Map(checks.map((c) => [`${c.user} ${c.permission}`, c.allowed]));
      const asked: string[] = [];
      const json = checkResultsJson(checks, (user, permission) => {
        asked.push(`${user} ${permission}`);
        return answers.get(`${user} ${permission}`) as boolean;
      });
      const results = checks.map((c) => ({ user: c.user, permission: c.permission, has_permission: answers.get(`${c.user} ${c.permission}`) }));
      assert.equal(json, JSON.stringify({ results, all: results.every((r) => r.has_permission), any: results.some((r) => r.has_permission) }));
      assert.deepEqual(
        asked,
        checks.map((c) => `${c.user} ${c.permission}`),
        'each check decided once, in order',
      );
    }),
  );
});
