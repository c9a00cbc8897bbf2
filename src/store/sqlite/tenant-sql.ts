import type Database from 'better-sqlite3';
import { prepared } from './prepared.ts';

/** Joins a user's roles in one row of a hydration: no name may hold it (docs/api.md §4). */
export const ROLE_SEPARATOR = ',';

/** The windowed edges' condition, word for word as in the `…_windowed` partial indexes (SQLite uses them only so). */
const WINDOWED = 'not_before IS NOT NULL OR expires_at IS NOT NULL';

/**
 * The due bounds of one kind from one table, oldest first, through its partial index (the
 * condition repeated word for word): `?` is now, then the limit.
 */
const dueOf = (table: 'grants' | 'memberships', bound: 'not_before' | 'expires_at'): string =>
  `SELECT * FROM (SELECT '${table === 'grants' ? 'permission' : 'membership'}' AS kind, '${bound === 'not_before' ? 'activate' : 'expire'}' AS which,
     client_id, role, ${table === 'grants' ? 'permission' : 'user'} AS other, ${bound} AS bound
   FROM ${table} WHERE ${bound} IS NOT NULL AND ${bound} <= ? ORDER BY ${bound} LIMIT ?)`;

const CHANGE_COLUMNS = 'c.revision, c.seq, c.op, c.role, c.permission, c.user, c.description, c.not_before, c.expires_at, c.at';

/** The tenants' statements, prepared once (see prepared.ts). */
export function prepareTenants(db: Database.Database) {
  const p = (sql: string): Database.Statement => prepared(db, sql);
  return {
    tenantRow: p('SELECT id, revision FROM clients WHERE hash = ?'),
    tenantById: p('SELECT hash FROM clients WHERE id = ?'),
    revisions: p('SELECT hash, revision FROM clients WHERE hash IN (SELECT value FROM json_each(?))'),
    // One writer at a time, each new row numbered past every committed one: ids grow in commit order.
    tenantsSince: p('SELECT changed_seq, hash, revision FROM clients WHERE changed_seq > ? ORDER BY changed_seq'),
    insertTenant: p('INSERT INTO clients (hash, revision) VALUES (?, 0) RETURNING id'),
    bumpRevision: p(
      'UPDATE clients SET revision = revision + 1, changed_seq = (SELECT coalesce(max(changed_seq), 0) + 1 FROM clients) WHERE id = ? RETURNING revision',
    ),
    roles: p('SELECT role, description FROM roles WHERE client_id = ?'),
    grants: p('SELECT role, permission FROM grants WHERE client_id = ?'),
    // A user's roles in one row, read in user order from the covering index: a fifth of the rows
    // and strings a million memberships would take one row each.
    rolesOfUsers: p(
      `SELECT user, group_concat(role, '${ROLE_SEPARATOR}') FROM memberships INDEXED BY memberships_by_user WHERE client_id = ? GROUP BY user ORDER BY user`,
    ),
    windowedGrants: p(`SELECT role, permission, not_before, expires_at FROM grants WHERE client_id = ? AND (${WINDOWED}) ORDER BY role, permission`),
    windowedMembers: p(`SELECT user, role, not_before, expires_at FROM memberships WHERE client_id = ? AND (${WINDOWED}) ORDER BY user, role`),
    roleExists: p('SELECT 1 FROM roles WHERE client_id = ? AND role = ?'),
    insertRole: p('INSERT INTO roles (client_id, role, description) VALUES (?, ?, ?)'),
    deleteRole: p('DELETE FROM roles WHERE client_id = ? AND role = ?'),
    deleteGrantsOfRole: p('DELETE FROM grants WHERE client_id = ? AND role = ?'),
    deleteMembersOfRole: p('DELETE FROM memberships WHERE client_id = ? AND role = ?'),
    insertGrant: p('INSERT OR IGNORE INTO grants (client_id, role, permission, not_before, expires_at) VALUES (?, ?, ?, ?, ?)'),
    setGrantWindow: p('UPDATE grants SET not_before = ?, expires_at = ? WHERE client_id = ? AND role = ? AND permission = ?'),
    deleteGrant: p('DELETE FROM grants WHERE client_id = ? AND role = ? AND permission = ?'),
    insertMember: p('INSERT OR IGNORE INTO memberships (client_id, role, user, not_before, expires_at) VALUES (?, ?, ?, ?, ?)'),
    setMemberWindow: p('UPDATE memberships SET not_before = ?, expires_at = ? WHERE client_id = ? AND role = ? AND user = ?'),
    deleteMember: p('DELETE FROM memberships WHERE client_id = ? AND role = ? AND user = ?'),
    // A boundary applies only while the edge still has that very bound (a replaced window is left alone).
    activateGrant: p('UPDATE grants SET not_before = NULL WHERE client_id = ? AND role = ? AND permission = ? AND not_before = ?'),
    expireGrant: p('DELETE FROM grants WHERE client_id = ? AND role = ? AND permission = ? AND expires_at = ?'),
    activateMember: p('UPDATE memberships SET not_before = NULL WHERE client_id = ? AND role = ? AND user = ? AND not_before = ?'),
    expireMember: p('DELETE FROM memberships WHERE client_id = ? AND role = ? AND user = ? AND expires_at = ?'),
    // Each kind oldest first through its index, at most `limit` each; then the oldest `limit` of those.
    dueBoundaries: p(
      `SELECT * FROM (${dueOf('grants', 'not_before')} UNION ALL ${dueOf('grants', 'expires_at')}
                      UNION ALL ${dueOf('memberships', 'not_before')} UNION ALL ${dueOf('memberships', 'expires_at')})
       ORDER BY bound, client_id, kind, role, other, which LIMIT ?`,
    ),
    changes: p(
      `SELECT ${CHANGE_COLUMNS} FROM changelog c
       JOIN clients t ON t.id = c.client_id WHERE t.hash = ? AND c.revision > ? ORDER BY c.revision, c.seq LIMIT ?`,
    ),
    /** The rest of a revision a page of {@link changes} cut: a page ends at the end of a revision. */
    restOfRevision: p(
      `SELECT ${CHANGE_COLUMNS} FROM changelog c
       JOIN clients t ON t.id = c.client_id WHERE t.hash = ? AND c.revision = ? AND c.seq > ? ORDER BY c.seq`,
    ),
    insertChange: p(
      `INSERT INTO changelog (client_id, revision, seq, op, role, permission, user, description, not_before, expires_at, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

export type TenantStatements = ReturnType<typeof prepareTenants>;
