/**
 * The audit trail, the encryption mark and field encryption at the store port, on SQLite and
 * PostgreSQL alike (docs/api.md §11, docs/operations.md §7): a write's audit row commits with the write or
 * not at all; paging and pruning; the mark a database remembers; and an EncryptedStore over each
 * adapter leaving no name in plaintext in any table while answering plaintext.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AuditOfWrite, AuditPosition, AuditRecord } from '../../../../src/audit/record.ts';
import type { Change } from '../../../../src/authz/changes.ts';
import type { TenantId } from '../../../../src/authz/tenant.ts';
import { DecryptionError, FieldCipher } from '../../../../src/crypto/field-cipher.ts';
import { EncryptedStore } from '../../../../src/store/wrappers/encrypted.ts';
import { encryptedMark, PLAINTEXT_MARK } from '../../../../src/store/encryption-mark.ts';
import { TIMESTAMP_RE } from '../../../helpers/contract.ts';
import { rawCells, writeOne } from '../../../helpers/store-backends.ts';
import type { StoreTopic } from '../../../helpers/store-suite.ts';
import { randomTenant as tenant } from '../../../helpers/tenants.ts';

const KEY = 'test-encryption-password';
/** docs/operations.md §7: the stored texts of these names under {@link KEY}. */
const VECTORS: ReadonlyArray<readonly [string, string]> = [
  ['alice', 'INCKN6LjRf9yFtqDdMjIYNcuVYo4'],
  ['read', 'SxZObua4nogpuK/3UVSX1+nbQis='],
  ['Administrators', '+pqDtMe+7mGL9y9aDLasAc0e8VNREmtF1+faR5KY'],
  ['alice@example.com', 'kYgStcTbc5lByvyhpryvr6KGmerBq9RYCJXz9ii/DDfi'],
];
/** PBKDF2 runs once for the file, not per case. */
const cipher = new FieldCipher(KEY);

/** The audit part of a write, as the HTTP layer hands it to the store. */
function auditOf(change: Change, resource: string, status = 201): AuditOfWrite {
  return {
    action: change.op,
    resource,
    status,
    credential: `key:${randomBytes(6).toString('hex')}`,
    requestId: randomBytes(8).toString('hex'),
    ip: '127.0.0.1',
  };
}

/** A row recorded apart from a write (a failed request, a read). */
function row(t: TenantId, at: string, resource: string, status = 404): AuditRecord {
  return { tenant: t, at, action: 'role.delete', resource, status, credential: 'key:0123456789ab', requestId: randomBytes(8).toString('hex'), ip: '::1' };
}

export function auditCases(topic: StoreTopic): void {
  const { backend, it, open } = topic;

  it("a write's audit row commits with it, at its revision and commit time; audit() answers newest first", async () => {
    const t = tenant();
    const changes: Change[] = [
      { op: 'role.create', role: 'admin', description: 'd' },
      { op: 'permission.grant', role: 'admin', permission: 'p' },
      { op: 'membership.add', user: 'u', role: 'admin' },
    ];
    const audits = changes.map((c, i) => auditOf(c, `/api/path/${i}`, i === 0 ? 201 : 200));
    const settled = await topic.store.writeMany(changes.map((change, i) => ({ tenant: t, changes: [change], audit: audits[i] })));
    assert.deepEqual(
      settled.map((s) => s.ok && s.value.ok && s.value.revision),
      [1, 2, 3],
    );
    const log = await topic.store.changes(t, 0, 10);
    const entries = await topic.store.audit(t, undefined, 10);
    assert.equal(entries.length, 3);
    entries.forEach((e, i) => {
      const n = 2 - i;
      const { id, ...rest } = e;
      assert.ok(Number.isSafeInteger(id) && id > 0);
      assert.deepEqual(rest, { ...audits[n], tenant: t, at: log[n]?.at, revision: n + 1 }, `row of revision ${n + 1}`);
      assert.match(e.at, TIMESTAMP_RE);
    });
    assert.ok((entries[0]?.id ?? 0) > (entries[1]?.id ?? 0) && (entries[1]?.id ?? 0) > (entries[2]?.id ?? 0), 'newest first');
    assert.deepEqual(await topic.store.audit(tenant(), undefined, 10), [], 'another tenant sees none');
  });

  it('a refused write leaves no audit row; a write whose audit row cannot be stored does not commit', async () => {
    const t = tenant();
    const refusedChange: Change = { op: 'permission.grant', role: 'missing', permission: 'p' };
    const [refused] = await topic.store.writeMany([{ tenant: t, changes: [refusedChange], audit: auditOf(refusedChange, '/api/permission/missing/p') }]);
    assert.ok(refused?.ok && !refused.value.ok && refused.value.error.code === 'ERR_AUTHZ_ROLE_NOT_FOUND');
    assert.deepEqual(await topic.store.audit(t, undefined, 10), []);

    assert.equal((await writeOne(topic.store, t, { op: 'role.create', role: 'r', description: '' })).revision, 1);
    const dup: Change = { op: 'role.create', role: 'r', description: '' };
    const [exists] = await topic.store.writeMany([{ tenant: t, changes: [dup], audit: auditOf(dup, '/api/role/r') }]);
    assert.ok(exists?.ok && !exists.value.ok && exists.value.error.code === 'ERR_AUTHZ_ROLE_EXISTS');
    assert.deepEqual(await topic.store.audit(t, undefined, 10), [], 'neither refusal left a row');

    // The audit row violates NOT NULL: its insert fails, and the change must go with it.
    const grant: Change = { op: 'permission.grant', role: 'r', permission: 'p' };
    const broken = { ...auditOf(grant, '/api/permission/r/p'), credential: null } as unknown as AuditOfWrite;
    const [failed] = await topic.store.writeMany([{ tenant: t, changes: [grant], audit: broken }]);
    assert.ok(failed !== undefined && !failed.ok, `the write fails: ${JSON.stringify(failed)}`);
    assert.equal(await topic.store.revision(t), 1);
    assert.deepEqual(
      (await topic.store.changes(t, 0, 10)).map((c) => c.revision),
      [1],
    );
    assert.deepEqual((await topic.store.load(t)).grants, []);
    assert.deepEqual(await topic.store.audit(t, undefined, 10), []);
  });

  it('appendAudit stores rows apart from writes; audit(before, limit) pages newest first', async () => {
    const [t, other] = [tenant(), tenant()];
    const at = (i: number): string => `2030-01-01T00:00:00.${String(i).padStart(6, '0')}`;
    const rows = Array.from({ length: 5 }, (_, i) => row(t, at(i), `/api/role/r${i}`));
    await topic.store.appendAudit([...rows.slice(0, 3), row(other, at(9), '/api/role/x')]);
    await topic.store.appendAudit([]);
    await topic.store.appendAudit(rows.slice(3));
    const all = await topic.store.audit(t, undefined, 100);
    assert.deepEqual(
      all.map(({ id: _, ...r }) => r),
      [...rows].reverse(),
      'every field back, no revision, newest first',
    );
    for (const e of all) assert.equal('revision' in e, false, 'revision is absent, not null');
    const pages: string[][] = [];
    let cursor: AuditPosition | undefined;
    for (;;) {
      const page = await topic.store.audit(t, cursor, 2);
      const last = page.at(-1);
      if (last === undefined) break;
      pages.push(page.map((e) => e.resource));
      cursor = { at: last.at, id: last.id };
    }
    assert.deepEqual(pages, [['/api/role/r4', '/api/role/r3'], ['/api/role/r2', '/api/role/r1'], ['/api/role/r0']]);
    assert.deepEqual(
      (await topic.store.audit(other, undefined, 100)).map((e) => e.resource),
      ['/api/role/x'],
    );
    assert.equal(await topic.store.revision(t), 0, 'audit rows create no client');
  });

  it('audit lists by time, then id: a row stored late lists where its time puts it', async () => {
    const t = tenant();
    const [early, late] = ['2030-01-01T00:00:00.000001', '2030-01-01T00:00:00.000002'];
    // Stored in the order late, early, late: ids are not time order.
    await topic.store.appendAudit([row(t, late, '/api/role/a')]);
    await topic.store.appendAudit([row(t, early, '/api/role/b')]);
    await topic.store.appendAudit([row(t, late, '/api/role/c')]);
    const all = await topic.store.audit(t, undefined, 10);
    assert.deepEqual(
      all.map((e) => e.resource),
      ['/api/role/c', '/api/role/a', '/api/role/b'],
    );
    const first = all[0];
    assert.ok(first !== undefined);
    const rest = await topic.store.audit(t, { at: first.at, id: first.id }, 10);
    assert.deepEqual(
      rest.map((e) => e.resource),
      ['/api/role/a', '/api/role/b'],
      'the keyset goes on after (at, id)',
    );
  });

  it('pruneAudit deletes only rows older than the cut, at most `limit` per call', async () => {
    const t = tenant();
    const old = ['1999-12-31T23:59:59.999997', '1999-12-31T23:59:59.999998', '1999-12-31T23:59:59.999999'];
    const cut = '2000-01-01T00:00:00.000000';
    await topic.store.appendAudit([...old.map((at, i) => row(t, at, `/old/${i}`)), row(t, cut, '/at-the-cut'), row(t, '2000-01-01T00:00:00.000001', '/new')]);
    assert.equal(await topic.store.pruneAudit(cut, 2), 2);
    assert.deepEqual(
      (await topic.store.audit(t, undefined, 10)).map((e) => e.resource),
      ['/new', '/at-the-cut', '/old/2'],
      'the oldest went first',
    );
    assert.equal(await topic.store.pruneAudit(cut, 2), 1);
    assert.equal(await topic.store.pruneAudit(cut, 2), 0);
    assert.deepEqual(
      (await topic.store.audit(t, undefined, 10)).map((e) => e.resource),
      ['/new', '/at-the-cut'],
    );
  });

  it('claimEncryption: a new database takes the first mark and keeps it; one holding data and no mark is plaintext', async () => {
    const s = await backend.fresh();
    const fresh = open(s);
    const first = encryptedMark(cipher.fingerprint);
    assert.equal(await fresh.claimEncryption(first), first);
    assert.equal(await fresh.claimEncryption(encryptedMark('0'.repeat(64))), first);
    assert.equal(await fresh.claimEncryption(PLAINTEXT_MARK), first);
    await fresh.close();
    assert.equal(await open(s).claimEncryption(PLAINTEXT_MARK), first, 'remembered across openings');

    const older = open(await backend.fresh());
    assert.ok((await writeOne(older, tenant(), { op: 'role.create', role: 'r', description: '' })).ok);
    assert.equal(await older.claimEncryption(first), PLAINTEXT_MARK);
    assert.equal(await older.claimEncryption(first), PLAINTEXT_MARK);

    const plain = open(await backend.fresh());
    assert.equal(await plain.claimEncryption(PLAINTEXT_MARK), PLAINTEXT_MARK);
    assert.equal(await plain.claimEncryption(first), PLAINTEXT_MARK);
  });

  it('EncryptedStore: no name in plaintext in any table, the contract ciphertexts there; plaintext answers', async () => {
    const settings = await backend.fresh();
    const enc = new EncryptedStore(open(settings), cipher);
    const [t, empty] = [tenant(), tenant()];
    const tag = randomBytes(5).toString('hex');
    const mine = { role: `Role-${tag}`, doomed: `Doomed-${tag}`, perm: `perm-${tag}`, user: `user-${tag}`, desc: `Description ${tag}` };
    const script: Change[] = [
      { op: 'role.create', role: 'Administrators', description: mine.desc },
      { op: 'role.create', role: mine.role, description: 'Administrators of nothing' },
      { op: 'role.create', role: mine.doomed, description: '' },
      { op: 'permission.grant', role: 'Administrators', permission: 'read' },
      { op: 'permission.grant', role: mine.role, permission: mine.perm },
      { op: 'permission.grant', role: mine.doomed, permission: mine.perm },
      { op: 'permission.revoke', role: mine.role, permission: mine.perm },
      { op: 'membership.add', user: 'alice', role: 'Administrators' },
      { op: 'membership.add', user: 'alice@example.com', role: 'Administrators' },
      { op: 'membership.add', user: mine.user, role: mine.role },
      { op: 'membership.add', user: mine.user, role: mine.doomed },
      { op: 'membership.remove', user: mine.user, role: mine.role },
      { op: 'role.delete', role: mine.doomed },
    ];
    const resourceOf = (c: Change): string => `/api/${c.op}/${c.role}/${'permission' in c ? c.permission : 'user' in c ? c.user : ''}`;
    const settled = await enc.writeMany(script.map((change) => ({ tenant: t, changes: [change], audit: auditOf(change, resourceOf(change)) })));
    settled.forEach((s, i) => {
      assert.ok(s.ok && s.value.ok, `write ${i} commits`);
      assert.deepEqual(s.value.changes[0], script[i], 'the outcome names the change in plaintext');
    });
    await enc.appendAudit([row(t, '2030-01-01T00:00:00.000000', `/api/role/${mine.role}/Administrators`)]);
    const refusals = await enc.writeMany([
      { tenant: empty, changes: [{ op: 'permission.grant', role: 'Administrators', permission: 'read' }] },
      { tenant: t, changes: [{ op: 'role.create', role: 'Administrators', description: '' }] },
      { tenant: t, changes: [{ op: 'permission.grant', role: 'Administrators', permission: 'read' }] },
      { tenant: t, changes: [{ op: 'membership.remove', user: mine.user, role: 'Administrators' }] },
    ]);
    assert.deepEqual(
      refusals.map((s) => (s.ok && !s.value.ok ? s.value.error.message : s)),
      [
        "Role 'Administrators' does not exist",
        "Role 'Administrators' already exists",
        "Permission 'read' is already granted to role 'Administrators'",
        `User '${mine.user}' is not a member of role 'Administrators'`,
      ],
    );

    const snap = await enc.load(t);
    const sorted = <T extends readonly string[]>(xs: readonly T[]): T[] => [...xs].sort((a, b) => (a.join('\0') < b.join('\0') ? -1 : 1));
    assert.equal(snap.revision, script.length);
    assert.deepEqual(
      sorted(snap.roles),
      sorted([
        ['Administrators', mine.desc],
        [mine.role, 'Administrators of nothing'],
      ]),
    );
    assert.deepEqual(sorted(snap.grants), [['Administrators', 'read']]);
    assert.deepEqual(
      sorted(snap.memberships),
      sorted([
        ['alice', 'Administrators'],
        ['alice@example.com', 'Administrators'],
      ]),
    );
    assert.deepEqual(
      (await enc.changes(t, 0, 100)).map((r) => r.change),
      script,
    );
    const trail = await enc.audit(t, undefined, 100);
    assert.deepEqual(
      trail.map((e) => e.resource),
      [`/api/role/${mine.role}/Administrators`, ...script.map(resourceOf).reverse()],
    );

    const cells = await rawCells(backend, settings);
    for (const table of ['roles', 'grants', 'memberships', 'changelog', 'audit']) assert.ok((cells.get(table)?.length ?? 0) > 0, `${table} holds rows`);
    const plaintext = ['Administrators', 'alice', 'read', tag];
    for (const [table, values] of cells) {
      for (const name of plaintext) {
        const hit = values.find((v) => v.includes(name));
        assert.equal(hit, undefined, `table ${table} holds '${name}' in plaintext: ${hit}`);
      }
    }
    const where = (stored: string): string[] =>
      [...cells]
        .filter(([, values]) => values.includes(stored))
        .map(([table]) => table)
        .sort();
    assert.deepEqual(where(VECTORS[0]?.[1] ?? ''), ['changelog', 'memberships'], 'alice');
    assert.deepEqual(where(VECTORS[1]?.[1] ?? ''), ['changelog', 'grants'], 'read');
    assert.deepEqual(where(VECTORS[2]?.[1] ?? ''), ['changelog', 'grants', 'memberships', 'roles'], 'Administrators');
    assert.deepEqual(where(VECTORS[3]?.[1] ?? ''), ['changelog', 'memberships'], 'alice@example.com');
    assert.ok(cells.get('audit')?.includes(cipher.encrypt(resourceOf(script[0] as Change))), 'the audit resource is the ciphertext of the path');

    // Another key over the same data fails closed: it never answers garbage.
    const wrong = new EncryptedStore(open(settings), new FieldCipher('another-password'));
    await assert.rejects(wrong.load(t), DecryptionError);
    await assert.rejects(wrong.changes(t, 0, 10), DecryptionError);
    await assert.rejects(wrong.audit(t, undefined, 10), DecryptionError);
  });
}
