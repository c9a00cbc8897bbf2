import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Change } from '../../../src/authz/changes.ts';
import { edgeFacts, refusal, refusalError, refused, roleNotFound, type WriteFacts } from '../../../src/authz/write-rules.ts';

const create: Change = { op: 'role.create', role: 'admin', description: '' };
const del: Change = { op: 'role.delete', role: 'admin' };
const grant: Change = { op: 'permission.grant', role: 'admin', permission: 'read' };
const revoke: Change = { op: 'permission.revoke', role: 'admin', permission: 'read' };
const add: Change = { op: 'membership.add', user: 'alice', role: 'admin' };
const remove: Change = { op: 'membership.remove', user: 'alice', role: 'admin' };

/** [change, facts, expected code or undefined, expected text] */
const CASES: Array<[Change, WriteFacts, string | undefined, string?]> = [
  [create, { roleExists: false }, undefined],
  [create, { roleExists: true }, 'ERR_AUTHZ_ROLE_EXISTS', "Role 'admin' already exists"],
  [del, { roleExists: true }, undefined],
  [del, { roleExists: false }, 'ERR_AUTHZ_ROLE_NOT_FOUND', "Role 'admin' does not exist"],
  [grant, { roleExists: false, grantExists: false }, 'ERR_AUTHZ_ROLE_NOT_FOUND', "Role 'admin' does not exist"],
  [grant, { roleExists: true }, undefined],
  [grant, { roleExists: true, grantExists: false }, undefined],
  [grant, { roleExists: true, grantExists: true }, 'ERR_AUTHZ_GRANT_EXISTS', "Permission 'read' is already granted to role 'admin'"],
  [revoke, { roleExists: false }, 'ERR_AUTHZ_ROLE_NOT_FOUND', "Role 'admin' does not exist"],
  [revoke, { roleExists: true, grantExists: true }, undefined],
  [revoke, { roleExists: true, grantExists: false }, 'ERR_AUTHZ_GRANT_NOT_FOUND', "Permission 'read' is not granted to role 'admin'"],
  [add, { roleExists: false }, 'ERR_AUTHZ_ROLE_NOT_FOUND', "Role 'admin' does not exist"],
  [add, { roleExists: true, memberExists: false }, undefined],
  [add, { roleExists: true, memberExists: true }, 'ERR_AUTHZ_MEMBERSHIP_EXISTS', "User 'alice' is already a member of role 'admin'"],
  [remove, { roleExists: true, memberExists: true }, undefined],
  [remove, { roleExists: true, memberExists: false }, 'ERR_AUTHZ_MEMBERSHIP_NOT_FOUND', "User 'alice' is not a member of role 'admin'"],
  [remove, { roleExists: true }, undefined],
];

test('refusal: the role first, then the grant or membership, with the texts on the wire', () => {
  for (const [change, facts, code, message] of CASES) {
    const why = refusal(change, facts);
    const label = `${change.op} ${JSON.stringify(facts)}`;
    if (code === undefined) assert.equal(why, undefined, label);
    else assert.deepEqual(why, { code, message }, label);
  }
});

test('edgeFacts: a no-op insert found the edge, a no-op delete found it absent', () => {
  assert.deepEqual(edgeFacts(grant, 0), { grantExists: true });
  assert.deepEqual(edgeFacts(grant, 1), { grantExists: false });
  assert.deepEqual(edgeFacts(revoke, 0), { grantExists: false });
  assert.deepEqual(edgeFacts(revoke, 1), { grantExists: true });
  assert.deepEqual(edgeFacts(add, 0), { memberExists: true });
  assert.deepEqual(edgeFacts(add, 1), { memberExists: false });
  assert.deepEqual(edgeFacts(remove, 0), { memberExists: false });
  assert.deepEqual(edgeFacts(remove, 1), { memberExists: true });
  assert.deepEqual(edgeFacts(create, 1), {});
  assert.deepEqual(edgeFacts(del, 1), {});
});

test('after the role check, a no-op insert or delete is a refusal and a real one is not', () => {
  // What each adapter does: `refusal` with the role fact first, then with what its statement changed.
  assert.equal(refusal(create, { roleExists: false, ...edgeFacts(create, 1) }), undefined, 'a created role is not judged again');
  assert.equal(refusal(del, { roleExists: true, ...edgeFacts(del, 1) }), undefined);
  for (const change of [grant, revoke, add, remove]) {
    for (const rowsChanged of [0, 1]) {
      const after = refusal(change, { roleExists: true, ...edgeFacts(change, rowsChanged) });
      assert.equal(after !== undefined, rowsChanged === 0, `${change.op}, ${rowsChanged} row(s) changed`);
    }
  }
});

test('refused and refusalError carry the refusal to the store answer and to a thrown 404', () => {
  const why = roleNotFound('ghost');
  assert.deepEqual(refused(why, 7), { ok: false, error: { code: 'ERR_AUTHZ_ROLE_NOT_FOUND', message: "Role 'ghost' does not exist" }, revision: 7 });
  const err = refusalError(why);
  assert.deepEqual([err.code, err.status, err.message], ['ERR_AUTHZ_ROLE_NOT_FOUND', 404, "Role 'ghost' does not exist"]);
});
