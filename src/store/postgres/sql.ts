/**
 * The PostgreSQL adapter's statements. Each has a name, so pg prepares it once per connection.
 * `"user"` is quoted (a reserved word); descriptions are bytea holding UTF-8.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const s = (name: string, text: string): Statement => ({ name: `rbac_${name}`, text });

export const SQL = {
  /** Locks the tenant's row for the rest of the transaction: writers of one tenant queue here. */
  lockTenantRow: s('lock_tenant_row', 'SELECT id, revision FROM clients WHERE hash = $1 FOR UPDATE'),
  insertTenant: s('insert_tenant', 'INSERT INTO clients (hash) VALUES ($1) ON CONFLICT (hash) DO NOTHING'),
  revision: s('revision', 'SELECT revision FROM clients WHERE hash = $1 FOR UPDATE'),
  revisions: s('revisions', 'SELECT hash, revision FROM clients WHERE hash = ANY($1::text[])'),
  /**
   * Clients created by transactions from `$1` on, and where to go on from next: the oldest
   * transaction still running in this statement's snapshot. Every creating transaction older
   * than that has ended, so its row (if it committed) is in this answer or an earlier one.
   */
  tenantsSince: s(
    'tenants_since',
    `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS next,
            coalesce((SELECT array_agg(hash) FROM clients WHERE created_xid >= $1::xid8), '{}') AS hashes`,
  ),
  roleExists: s('role_exists', 'SELECT 1 FROM roles WHERE client_id = $1 AND role = $2'),
  insertRole: s('insert_role', 'INSERT INTO roles (client_id, role, description) VALUES ($1, $2, $3::bytea)'),
  /** Removes a role with its grants and memberships; counts what went with it. */
  deleteRole: s(
    'delete_role',
    `WITH g AS (DELETE FROM grants WHERE client_id = $1 AND role = $2 RETURNING 1),
          m AS (DELETE FROM memberships WHERE client_id = $1 AND role = $2 RETURNING 1),
          r AS (DELETE FROM roles WHERE client_id = $1 AND role = $2 RETURNING 1)
     SELECT (SELECT count(*) FROM g)::int AS grants, (SELECT count(*) FROM m)::int AS members, (SELECT count(*) FROM r)::int AS roles`,
  ),
  insertGrant: s('insert_grant', 'INSERT INTO grants (client_id, role, permission) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING'),
  deleteGrant: s('delete_grant', 'DELETE FROM grants WHERE client_id = $1 AND role = $2 AND permission = $3'),
  insertMember: s('insert_member', 'INSERT INTO memberships (client_id, role, "user") VALUES ($1, $2, $3) ON CONFLICT DO NOTHING'),
  deleteMember: s('delete_member', 'DELETE FROM memberships WHERE client_id = $1 AND role = $2 AND "user" = $3'),
  /** The tenant's revision + 1 and the changelog row, in one statement. */
  commitChange: s(
    'commit_change',
    `WITH bumped AS (UPDATE clients SET revision = revision + 1 WHERE id = $1 RETURNING id, revision)
     INSERT INTO changelog (client_id, revision, op, role, permission, "user", description, at)
     SELECT id, revision, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::text FROM bumped
     RETURNING revision`,
  ),
  /** {@link SQL.commitChange} and the request's audit row ($8…$13), still one round trip. */
  commitChangeAudited: s(
    'commit_change_audited',
    `WITH bumped AS (UPDATE clients SET revision = revision + 1 WHERE id = $1 RETURNING id, hash, revision),
          logged AS (INSERT INTO changelog (client_id, revision, op, role, permission, "user", description, at)
                     SELECT id, revision, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::text FROM bumped)
     INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
     SELECT hash, $7::text, $8::text, $9::text, $10::int, revision, $11::text, $12::text, $13::text FROM bumped
     RETURNING revision`,
  ),
  /**
   * A whole tenant in one statement, so one snapshot: no transaction needed for a consistent
   * read. Rows come in primary-key order, as from SQLite.
   */
  load: s(
    'load',
    `SELECT c.revision,
       (SELECT json_agg(json_build_array(r.role, encode(r.description, 'hex')) ORDER BY r.role)
          FROM roles r WHERE r.client_id = c.id) AS roles,
       (SELECT json_agg(json_build_array(g.role, g.permission) ORDER BY g.role, g.permission)
          FROM grants g WHERE g.client_id = c.id) AS grants,
       (SELECT json_agg(json_build_array(m."user", m.role) ORDER BY m.role, m."user")
          FROM memberships m WHERE m.client_id = c.id) AS memberships
     FROM clients c WHERE c.hash = $1`,
  ),
  changes: s(
    'changes',
    `SELECT l.revision, l.op, l.role, l.permission, l."user", l.description, l.at
     FROM changelog l JOIN clients c ON c.id = l.client_id
     WHERE c.hash = $1 AND l.revision > $2 ORDER BY l.revision LIMIT $3`,
  ),
  /** Many rows in one statement: parallel arrays, one per column. */
  insertAudits: s(
    'insert_audits',
    `INSERT INTO audit (client_hash, at, action, resource, status, revision, credential, request_id, ip)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[], $8::text[], $9::text[])`,
  ),
  auditPage: s(
    'audit_page',
    `SELECT id, client_hash, at, action, resource, status, revision, credential, request_id, ip FROM audit
     WHERE client_hash = $1 AND (at, id) < ($2, $3) ORDER BY at DESC, id DESC LIMIT $4`,
  ),
  pruneAudit: s('prune_audit', 'DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY at LIMIT $2)'),
  /** Records the mark unless one is there; a database with clients and no mark is plaintext. */
  claimEncryption: s(
    'claim_encryption',
    `INSERT INTO meta (key, value)
     SELECT 'encryption', CASE WHEN EXISTS (SELECT 1 FROM clients) THEN $2 ELSE $1 END
     ON CONFLICT (key) DO NOTHING`,
  ),
  encryptionMark: s('encryption_mark', `SELECT value FROM meta WHERE key = 'encryption'`),
  cursorSecret: s('cursor_secret', `SELECT value FROM meta WHERE key = 'cursor_secret'`),
} as const;

/** Any 64-bit key, the same in every process: serialises migrations across processes. */
export const MIGRATION_LOCK = 0x72626163; // "rbac"
