/**
 * The two aggregated forms the stores send memberships in for a hydration (one row per user with
 * its roles joined; one text of such lines) visit exactly the memberships they were made from,
 * for any names the rule allows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { groupedMemberships, joinedMemberships, type Memberships } from '../../../src/authz/snapshot-build.ts';

const nameArb = fc.stringMatching(/^[A-Za-z0-9_.:@+|-]{1,12}$/);

/** Users, each with one or more roles. */
const usersArb = fc.uniqueArray(fc.tuple(nameArb, fc.uniqueArray(nameArb, { minLength: 1, maxLength: 5 })), { selector: ([user]) => user, maxLength: 40 });

function visited(memberships: Memberships): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  memberships((user, role) => out.push([user, role]));
  return out;
}

test('a row per user with its roles joined, and a text of such lines, visit every membership once, in order', () => {
  fc.assert(
    fc.property(usersArb, (users) => {
      const expected = users.flatMap(([user, roles]) => roles.map((role): [string, string] => [user, role]));
      assert.deepEqual(
        visited(
          groupedMemberships(
            users.map(([user, roles]) => [user, roles.join(',')]),
            ',',
          ),
        ),
        expected,
      );
      assert.deepEqual(visited(joinedMemberships(users.map(([user, roles]) => [user, ...roles].join(',')).join(' '), ' ', ',')), expected);
    }),
    { seed: 77, numRuns: 300 },
  );
});
