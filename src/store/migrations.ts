/**
 * Versioned schema migrations, shared by the adapters. Each runs once, in order, recorded in
 * `schema_migrations`; adapters apply them under a lock so that processes starting together do
 * not race. Append new versions; never edit an applied one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** Statements for SQLite. */
  readonly sqlite: readonly string[];
  /**
   * The same schema for PostgreSQL. Names are `COLLATE "C"` so that keys compare and sort by
   * code point as in SQLite; descriptions are `bytea` (UTF-8) because PostgreSQL text cannot hold
   * U+0000, which a description may contain.
   */
  readonly postgresql: readonly string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tenants, roles, grants, memberships, changelog',
    // The SQL keeps the wire's word: table `clients` holds one row per tenant (`hash` is its
    // TenantId), and `client_id` is that row's id in the other tables.
    sqlite: [
      `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
      `INSERT INTO meta (key, value) VALUES ('cursor_secret', lower(hex(randomblob(32))))`,
      `CREATE TABLE clients (
         id INTEGER PRIMARY KEY,
         hash TEXT NOT NULL UNIQUE,
         revision INTEGER NOT NULL DEFAULT 0
       )`,
      `CREATE TABLE roles (
         client_id INTEGER NOT NULL,
         role TEXT NOT NULL,
         description TEXT NOT NULL DEFAULT '',
         PRIMARY KEY (client_id, role)
       ) WITHOUT ROWID`,
      `CREATE TABLE grants (
         client_id INTEGER NOT NULL,
         role TEXT NOT NULL,
         permission TEXT NOT NULL,
         PRIMARY KEY (client_id, role, permission)
       ) WITHOUT ROWID`,
      `CREATE INDEX grants_by_permission ON grants (client_id, permission, role)`,
      `CREATE TABLE memberships (
         client_id INTEGER NOT NULL,
         role TEXT NOT NULL,
         user TEXT NOT NULL,
         PRIMARY KEY (client_id, role, user)
       ) WITHOUT ROWID`,
      `CREATE INDEX memberships_by_user ON memberships (client_id, user, role)`,
      `CREATE TABLE changelog (
         client_id INTEGER NOT NULL,
         revision INTEGER NOT NULL,
         op TEXT NOT NULL,
         role TEXT NOT NULL,
         permission TEXT,
         user TEXT,
         description TEXT,
         at TEXT NOT NULL,
         PRIMARY KEY (client_id, revision)
       ) WITHOUT ROWID`,
    ],
    postgresql: [
      `CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL)`,
      // 244 random bits from two v4 UUIDs (a CSPRNG in PostgreSQL 13+), without pgcrypto.
      `INSERT INTO meta (key, value)
       VALUES ('cursor_secret', encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'))`,
      `CREATE TABLE clients (
         id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         hash TEXT COLLATE "C" NOT NULL UNIQUE,
         revision BIGINT NOT NULL DEFAULT 0
       )`,
      `CREATE TABLE roles (
         client_id BIGINT NOT NULL,
         role TEXT COLLATE "C" NOT NULL,
         description BYTEA NOT NULL DEFAULT '\\x',
         PRIMARY KEY (client_id, role)
       )`,
      `CREATE TABLE grants (
         client_id BIGINT NOT NULL,
         role TEXT COLLATE "C" NOT NULL,
         permission TEXT COLLATE "C" NOT NULL,
         PRIMARY KEY (client_id, role, permission)
       )`,
      `CREATE INDEX grants_by_permission ON grants (client_id, permission, role)`,
      `CREATE TABLE memberships (
         client_id BIGINT NOT NULL,
         role TEXT COLLATE "C" NOT NULL,
         "user" TEXT COLLATE "C" NOT NULL,
         PRIMARY KEY (client_id, role, "user")
       )`,
      `CREATE INDEX memberships_by_user ON memberships (client_id, "user", role)`,
      `CREATE TABLE changelog (
         client_id BIGINT NOT NULL,
         revision BIGINT NOT NULL,
         op TEXT NOT NULL,
         role TEXT COLLATE "C" NOT NULL,
         permission TEXT COLLATE "C",
         "user" TEXT COLLATE "C",
         description BYTEA,
         at TEXT NOT NULL,
         PRIMARY KEY (client_id, revision)
       )`,
    ],
  },
  {
    version: 2,
    name: 'audit trail',
    // Rows name their client by hash: failed requests of a client that never wrote are audited
    // too, without creating a client row for them. `resource` is encrypted like a name when
    // field encryption is on.
    sqlite: [
      `CREATE TABLE audit (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         client_hash TEXT NOT NULL,
         at TEXT NOT NULL,
         action TEXT NOT NULL,
         resource TEXT NOT NULL,
         status INTEGER NOT NULL,
         revision INTEGER,
         credential TEXT NOT NULL,
         request_id TEXT NOT NULL,
         ip TEXT NOT NULL
       )`,
      `CREATE INDEX audit_by_client ON audit (client_hash, id)`,
      `CREATE INDEX audit_by_time ON audit (at)`,
    ],
    postgresql: [
      `CREATE TABLE audit (
         id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         client_hash TEXT COLLATE "C" NOT NULL,
         at TEXT COLLATE "C" NOT NULL,
         action TEXT NOT NULL,
         resource TEXT NOT NULL,
         status INTEGER NOT NULL,
         revision BIGINT,
         credential TEXT NOT NULL,
         request_id TEXT NOT NULL,
         ip TEXT NOT NULL
       )`,
      `CREATE INDEX audit_by_client ON audit (client_hash, id)`,
      `CREATE INDEX audit_by_time ON audit (at)`,
    ],
  },
  {
    version: 3,
    name: 'workflow schedules, runs, holders and the scheduler lease',
    // Keyed by client hash like the audit trail: a client that never wrote may schedule a check.
    // `workflow_holders` keeps the users of a schedule's last run, so a run stores only its diff.
    // Times the scheduler compares are epoch ms; `last_run_at` and `run_at` are wire timestamps.
    // `added` and `removed` are JSON arrays of names. `holders_revision` is the client revision
    // `workflow_holders` was computed at (null before the first run): a run at that same revision
    // has the same holders, so it is recorded without reading them again.
    sqlite: [
      `CREATE TABLE workflow_schedules (
         client_hash TEXT NOT NULL,
         workflow TEXT NOT NULL,
         interval_seconds INTEGER NOT NULL,
         webhook_url TEXT,
         webhook_secret TEXT NOT NULL,
         next_run_at INTEGER NOT NULL,
         last_run_at TEXT,
         holders_revision INTEGER,
         holders_count INTEGER NOT NULL DEFAULT 0,
         PRIMARY KEY (client_hash, workflow)
       ) WITHOUT ROWID`,
      `CREATE INDEX workflow_schedules_due ON workflow_schedules (next_run_at)`,
      `CREATE TABLE workflow_runs (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         client_hash TEXT NOT NULL,
         workflow TEXT NOT NULL,
         run_at TEXT NOT NULL,
         revision INTEGER NOT NULL,
         users_count INTEGER NOT NULL,
         added TEXT NOT NULL,
         removed TEXT NOT NULL,
         delivery_status TEXT NOT NULL,
         attempts INTEGER NOT NULL DEFAULT 0,
         last_status INTEGER,
         webhook_id TEXT,
         next_attempt_at INTEGER
       )`,
      `CREATE INDEX workflow_runs_by_schedule ON workflow_runs (client_hash, workflow, id)`,
      `CREATE INDEX workflow_runs_pending ON workflow_runs (next_attempt_at) WHERE delivery_status = 'pending'`,
      `CREATE TABLE workflow_holders (
         client_hash TEXT NOT NULL,
         workflow TEXT NOT NULL,
         user TEXT NOT NULL,
         PRIMARY KEY (client_hash, workflow, user)
       ) WITHOUT ROWID`,
      `CREATE TABLE workflow_lease (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
    ],
    postgresql: [
      `CREATE TABLE workflow_schedules (
         client_hash TEXT COLLATE "C" NOT NULL,
         workflow TEXT COLLATE "C" NOT NULL,
         interval_seconds INTEGER NOT NULL,
         webhook_url TEXT,
         webhook_secret TEXT NOT NULL,
         next_run_at BIGINT NOT NULL,
         last_run_at TEXT,
         holders_revision BIGINT,
         holders_count INTEGER NOT NULL DEFAULT 0,
         PRIMARY KEY (client_hash, workflow)
       )`,
      `CREATE INDEX workflow_schedules_due ON workflow_schedules (next_run_at)`,
      `CREATE TABLE workflow_runs (
         id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         client_hash TEXT COLLATE "C" NOT NULL,
         workflow TEXT COLLATE "C" NOT NULL,
         run_at TEXT NOT NULL,
         revision BIGINT NOT NULL,
         users_count INTEGER NOT NULL,
         added TEXT NOT NULL,
         removed TEXT NOT NULL,
         delivery_status TEXT NOT NULL,
         attempts INTEGER NOT NULL DEFAULT 0,
         last_status INTEGER,
         webhook_id TEXT,
         next_attempt_at BIGINT
       )`,
      `CREATE INDEX workflow_runs_by_schedule ON workflow_runs (client_hash, workflow, id)`,
      `CREATE INDEX workflow_runs_pending ON workflow_runs (next_attempt_at) WHERE delivery_status = 'pending'`,
      `CREATE TABLE workflow_holders (
         client_hash TEXT COLLATE "C" NOT NULL,
         workflow TEXT COLLATE "C" NOT NULL,
         "user" TEXT COLLATE "C" NOT NULL,
         PRIMARY KEY (client_hash, workflow, "user")
       )`,
      `CREATE TABLE workflow_lease (name TEXT COLLATE "C" PRIMARY KEY, owner TEXT NOT NULL, expires_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 4,
    name: 'clients in the order their creation became visible (the client index backstop)',
    // SQLite commits one writer at a time and numbers a new row past every committed one, so
    // `clients.id` already grows in the order creations become visible.
    sqlite: [],
    // Identity values are taken before commit (and burnt by ON CONFLICT), so a later id can be
    // visible before an earlier one. The creating transaction's id can be compared with the
    // oldest transaction still running (pg_snapshot_xmin): rows of older ones are all visible.
    // Rows from before this migration get 0 and are read whole at start.
    postgresql: [
      `ALTER TABLE clients ADD COLUMN created_xid xid8 NOT NULL DEFAULT '0'`,
      `ALTER TABLE clients ALTER COLUMN created_xid SET DEFAULT pg_current_xact_id()`,
      `CREATE INDEX clients_by_created_xid ON clients (created_xid)`,
    ],
  },
  {
    version: 5,
    name: 'the audit list by time, then id (keyset on both)',
    // A failed request's row is stored after its answer (batched), so ids are not time order.
    sqlite: [`CREATE INDEX audit_by_client_time ON audit (client_hash, at, id)`, `DROP INDEX audit_by_client`],
    postgresql: [`CREATE INDEX audit_by_client_time ON audit (client_hash, at, id)`, `DROP INDEX audit_by_client`],
  },
  {
    version: 6,
    name: 'clients in the order their revisions moved (the revalidation backstop)',
    // The backstop asks which clients moved since its last look, in one indexed query whatever
    // the number of graphs cached. SQLite: every revision bump takes the next number of one
    // sequence (writers commit one at a time, so the order is the commit order). PostgreSQL: the
    // bumping transaction's id, read with the same snapshot rule as `created_xid`. Rows from
    // before this migration carry 0 and are read at start like everything.
    sqlite: [`ALTER TABLE clients ADD COLUMN changed_seq INTEGER NOT NULL DEFAULT 0`, `CREATE INDEX clients_by_changed_seq ON clients (changed_seq)`],
    postgresql: [
      `ALTER TABLE clients ADD COLUMN changed_xid xid8 NOT NULL DEFAULT '0'`,
      `ALTER TABLE clients ALTER COLUMN changed_xid SET DEFAULT pg_current_xact_id()`,
      `CREATE INDEX clients_by_changed_xid ON clients (changed_xid)`,
    ],
  },
  {
    version: 7,
    name: 'windows on grants and memberships; several changelog rows per revision',
    // Bounds are microseconds since the epoch, NULL when open. Few edges have one: partial indexes
    // read a tenant's windowed edges at hydration (`…_windowed`), and the due boundaries of every
    // tenant in time order (`…_by_not_before`, `…_by_expires_at`); queries repeat their conditions
    // word for word, as SQLite needs to use a partial index. A write request of many changes is
    // one revision with one changelog row per change, numbered by `seq` from 0: the key becomes
    // (client, revision, seq), rows written before this migration keep `seq` 0. SQLite cannot
    // change a key in place: its changelog is copied into a new table.
    sqlite: [
      ...windowColumns('INTEGER'),
      ...windowIndexes(),
      `CREATE TABLE changelog_v7 (
         client_id INTEGER NOT NULL,
         revision INTEGER NOT NULL,
         seq INTEGER NOT NULL,
         op TEXT NOT NULL,
         role TEXT NOT NULL,
         permission TEXT,
         user TEXT,
         description TEXT,
         not_before INTEGER,
         expires_at INTEGER,
         at TEXT NOT NULL,
         PRIMARY KEY (client_id, revision, seq)
       ) WITHOUT ROWID`,
      `INSERT INTO changelog_v7 (client_id, revision, seq, op, role, permission, user, description, at)
       SELECT client_id, revision, 0, op, role, permission, user, description, at FROM changelog`,
      `DROP TABLE changelog`,
      `ALTER TABLE changelog_v7 RENAME TO changelog`,
    ],
    postgresql: [
      ...windowColumns('BIGINT'),
      ...windowIndexes(),
      `ALTER TABLE changelog ADD COLUMN seq INTEGER NOT NULL DEFAULT 0, ADD COLUMN not_before BIGINT, ADD COLUMN expires_at BIGINT`,
      `ALTER TABLE changelog ALTER COLUMN seq DROP DEFAULT`,
      `ALTER TABLE changelog DROP CONSTRAINT changelog_pkey, ADD PRIMARY KEY (client_id, revision, seq)`,
    ],
  },
  {
    version: 8,
    name: 'issued tokens and their revocation',
    // One row per token issued (docs/api.md §3): its jti, its client's hash and its expiry (epoch
    // ms), and `revoked_at` (epoch ms) once revoked. Rows past their expiry are deleted: a token
    // is refused then anyway. The workers read the revoked tokens not yet expired at start and
    // periodically (a partial index keeps that read to the few revoked ones).
    sqlite: [
      `CREATE TABLE issued_tokens (
         jti TEXT PRIMARY KEY,
         client_hash TEXT NOT NULL,
         expires_at INTEGER NOT NULL,
         revoked_at INTEGER
       ) WITHOUT ROWID`,
      `CREATE INDEX issued_tokens_by_expiry ON issued_tokens (expires_at)`,
      `CREATE INDEX issued_tokens_revoked ON issued_tokens (expires_at) WHERE revoked_at IS NOT NULL`,
    ],
    postgresql: [
      `CREATE TABLE issued_tokens (
         jti TEXT COLLATE "C" PRIMARY KEY,
         client_hash TEXT COLLATE "C" NOT NULL,
         expires_at BIGINT NOT NULL,
         revoked_at BIGINT
       )`,
      `CREATE INDEX issued_tokens_by_expiry ON issued_tokens (expires_at)`,
      `CREATE INDEX issued_tokens_revoked ON issued_tokens (expires_at) WHERE revoked_at IS NOT NULL`,
    ],
  },
];

/** The two bounds on both kinds of edge, nullable (existing edges stay permanent). */
function windowColumns(type: string): string[] {
  return ['grants', 'memberships'].flatMap((table) => [
    `ALTER TABLE ${table} ADD COLUMN not_before ${type}`,
    `ALTER TABLE ${table} ADD COLUMN expires_at ${type}`,
  ]);
}

/** Per table: its windowed edges by tenant (hydration), and each bound in time order (boundaries due). */
function windowIndexes(): string[] {
  return ['grants', 'memberships'].flatMap((table) => [
    `CREATE INDEX ${table}_windowed ON ${table} (client_id) WHERE not_before IS NOT NULL OR expires_at IS NOT NULL`,
    `CREATE INDEX ${table}_by_not_before ON ${table} (not_before) WHERE not_before IS NOT NULL`,
    `CREATE INDEX ${table}_by_expires_at ON ${table} (expires_at) WHERE expires_at IS NOT NULL`,
  ]);
}
