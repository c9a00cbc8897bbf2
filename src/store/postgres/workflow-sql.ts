import type { Statement } from './sql.ts';

/**
 * The PostgreSQL statements of workflow schedules and runs, named like those of sql.ts (pg
 * prepares each once per connection). Epoch-ms parameters are bigint.
 */
const s = (name: string, text: string): Statement => ({ name: `rbac_workflow_${name}`, text });

/** The run's columns as `runOf` (store/workflow-rows.ts) reads them. */
const RUN_COLUMNS = 'r.id, r.workflow, r.run_at, r.revision, r.users_count, r.added, r.removed, r.delivery_status, r.attempts, r.last_status';

/** The names of column `name` of the diff's rows where `when`, as the JSON array a run stores, sorted by code point (COLLATE "C"). */
const jsonNames = (name: string, when: string): string =>
  `coalesce((SELECT array_to_json(array_agg(${name} ORDER BY ${name})) FROM diff WHERE ${when})::text, '[]')`;

export const WORKFLOW_SQL = {
  /** Creates or replaces the schedule, due at $6; a replaced one keeps `last_run_at` (its runs and holders stay too). */
  upsertSchedule: s(
    'upsert_schedule',
    `INSERT INTO workflow_schedules (client_hash, workflow, interval_seconds, webhook_url, webhook_secret, next_run_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (client_hash, workflow) DO UPDATE SET interval_seconds = excluded.interval_seconds,
       webhook_url = excluded.webhook_url, webhook_secret = excluded.webhook_secret, next_run_at = excluded.next_run_at`,
  ),
  deleteSchedule: s('delete_schedule', 'DELETE FROM workflow_schedules WHERE client_hash = $1 AND workflow = $2'),
  deleteRunsAndHolders: s(
    'delete_runs_and_holders',
    `WITH runs AS (DELETE FROM workflow_runs WHERE client_hash = $1 AND workflow = $2)
     DELETE FROM workflow_holders WHERE client_hash = $1 AND workflow = $2`,
  ),
  schedules: s('schedules', 'SELECT workflow, interval_seconds, webhook_url, last_run_at FROM workflow_schedules WHERE client_hash = $1'),
  /** No row: no such schedule; one row with a null id: a schedule without runs (in this page). */
  runs: s(
    'runs',
    `SELECT ${RUN_COLUMNS} FROM workflow_schedules sc
     LEFT JOIN LATERAL (SELECT * FROM workflow_runs x WHERE x.client_hash = sc.client_hash AND x.workflow = sc.workflow AND x.id < $3
                        ORDER BY x.id DESC LIMIT $4) r ON true
     WHERE sc.client_hash = $1 AND sc.workflow = $2 ORDER BY r.id DESC`,
  ),
  /** Answers a row only when $2 holds the lease afterwards (it was free, expired, or $2's). */
  takeLease: s(
    'take_lease',
    `INSERT INTO workflow_lease (name, owner, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE workflow_lease.owner = excluded.owner OR workflow_lease.expires_at < $4
     RETURNING owner`,
  ),
  releaseLease: s('release_lease', 'DELETE FROM workflow_lease WHERE name = $1 AND owner = $2'),
  due: s('due', 'SELECT client_hash, workflow FROM workflow_schedules WHERE next_run_at <= $1 ORDER BY next_run_at LIMIT $2'),
  /**
   * The first statement of a run's REPEATABLE READ transaction (so its snapshot is the run's):
   * the schedule, locked. NOWAIT: a schedule locked by another run, replacement or deletion is
   * not waited for (the waiter would only find it ran, or fail to serialize).
   */
  lockSchedule: s(
    'lock_schedule',
    `SELECT interval_seconds, webhook_url IS NOT NULL AS hooked, next_run_at, holders_revision, holders_count FROM workflow_schedules
     WHERE client_hash = $1 AND workflow = $2 FOR UPDATE NOWAIT`,
  ),
  /** The client's revision at the run's snapshot (no row: 0). */
  tenantRevision: s('tenant_revision', 'SELECT revision FROM clients WHERE hash = $1'),
  /**
   * A run at the revision `workflow_holders` was computed at ($8): nothing can have changed, so
   * the run is recorded with the count kept ($9) and empty lists, without reading the holders.
   */
  recordSteadyRun: s(
    'record_steady_run',
    `WITH advanced AS (UPDATE workflow_schedules SET last_run_at = $3, next_run_at = $7::bigint WHERE client_hash = $1 AND workflow = $2)
     INSERT INTO workflow_runs (client_hash, workflow, run_at, revision, users_count, added, removed, delivery_status, webhook_id, next_attempt_at)
     VALUES ($1, $2, $3::text, $8::bigint, $9::int, '[]', '[]', $4::text, $5::text, $6::bigint)
     RETURNING id, revision, users_count, added, removed`,
  ),
  /**
   * The whole run in one round trip, at the transaction's snapshot: who holds permission $2 now
   * (through any role, `grants_by_permission`), the diff against `workflow_holders`, which is
   * brought up to date by that diff alone, the run row, and the schedule's next time ($7).
   * Data-modifying CTEs all see the snapshot, so the insert and the delete touch disjoint users.
   *
   * Written so that no plan can be quadratic, whatever the estimates (`workflow_holders` filled
   * by the previous run may not be analyzed yet, and a CTE has no statistics or index): the diff
   * is a FULL JOIN, which PostgreSQL runs only as a hash or merge join, never a nested loop; the
   * delete finds its rows by their `ctid`s from that join, a TID scan.
   */
  recordRun: s(
    'record_run',
    `WITH tenant AS (SELECT id, revision FROM clients WHERE hash = $1),
          holders AS (SELECT DISTINCT m."user" FROM tenant t
                        JOIN grants g ON g.client_id = t.id AND g.permission = $2
                        JOIN memberships m ON m.client_id = g.client_id AND m.role = g.role),
          diff AS (SELECT now."user" AS gained, before."user" AS lost, before.ctid AS lost_at
                   FROM holders now
                   FULL JOIN (SELECT ctid, "user" FROM workflow_holders WHERE client_hash = $1 AND workflow = $2) before
                     ON before."user" = now."user"
                   WHERE now."user" IS NULL OR before."user" IS NULL),
          inserted AS (INSERT INTO workflow_holders (client_hash, workflow, "user") SELECT $1, $2, gained FROM diff WHERE lost IS NULL),
          deleted AS (DELETE FROM workflow_holders WHERE ctid = ANY (ARRAY(SELECT lost_at FROM diff WHERE gained IS NULL))),
          advanced AS (UPDATE workflow_schedules SET last_run_at = $3, next_run_at = $7::bigint,
                         holders_revision = coalesce((SELECT revision FROM tenant), 0), holders_count = (SELECT count(*) FROM holders)
                       WHERE client_hash = $1 AND workflow = $2)
     INSERT INTO workflow_runs (client_hash, workflow, run_at, revision, users_count, added, removed, delivery_status, webhook_id, next_attempt_at)
     SELECT $1, $2, $3::text, coalesce((SELECT revision FROM tenant), 0), (SELECT count(*) FROM holders),
            ${jsonNames('gained', 'lost IS NULL')}, ${jsonNames('lost', 'gained IS NULL')}, $4::text, $5::text, $6::bigint
     RETURNING id, revision, users_count, added, removed`,
  ),
  /**
   * Claims due deliveries: rows another caller is claiming are skipped, not waited for. A run
   * whose schedule has no webhook any more (replaced without one) is marked failed instead, or it
   * would come back at every claim.
   */
  claim: s(
    'claim',
    `WITH due AS (SELECT id FROM workflow_runs WHERE delivery_status = 'pending' AND next_attempt_at <= $1
                  ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED),
          orphaned AS (UPDATE workflow_runs o SET delivery_status = 'failed', next_attempt_at = NULL FROM due
                       WHERE o.id = due.id AND NOT EXISTS (SELECT 1 FROM workflow_schedules sc WHERE sc.client_hash = o.client_hash
                                                           AND sc.workflow = o.workflow AND sc.webhook_url IS NOT NULL))
     UPDATE workflow_runs r SET next_attempt_at = $2 FROM due, workflow_schedules sc
     WHERE r.id = due.id AND sc.client_hash = r.client_hash AND sc.workflow = r.workflow AND sc.webhook_url IS NOT NULL
     RETURNING ${RUN_COLUMNS}, r.client_hash, r.webhook_id, sc.webhook_url, sc.webhook_secret`,
  ),
  recordDelivery: s(
    'record_delivery',
    'UPDATE workflow_runs SET delivery_status = $2, attempts = $3, last_status = $4, next_attempt_at = $5 WHERE id = $1',
  ),
} as const;
