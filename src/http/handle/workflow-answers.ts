import type { TenantId } from '../../authz/tenant.ts';
import { appError } from '../../errors/index.ts';
import { pageAfter } from '../../authz/page.ts';
import type { RunEntry, ScheduleEntry } from '../../workflow/records.ts';
import type { Backend } from '../backend.ts';
import type { Cursors } from '../input/cursor.ts';
import type { Query } from '../input/query.ts';
import type { WorkflowRoute } from '../api/route-types.ts';
import type { TenantTarget } from '../reply/reply.ts';

/** The workflow calls of the backend: schedule changes (writes) and the reads of schedules and runs. */
export type WorkflowBackend = Pick<Backend, 'putSchedule' | 'deleteSchedule' | 'schedules' | 'runs'>;

/** Without `limit`, runs are answered in pages of this size (with next_cursor): a run may list many users. */
const MAX_RUNS = 100;
const MAX_INTERVAL_SECONDS = 86_400;

/** What decides a schedule's webhook: the allowed hosts, and where secrets come from. */
export interface WebhookRules {
  /** The URL to store, or why it is refused (a 400's detail). */
  check(url: string): { readonly ok: true; readonly url: string } | { readonly ok: false; readonly reason: string };
  newSecret(): string;
}

/** Serialises a route's data into its success envelope, with `next_cursor` when a page was cut. */
export type EnvelopeWriter = (route: WorkflowRoute, data: unknown, next?: string) => string;

/**
 * The workflow routes kept in the database (docs/api.md §6, §16): create or replace a schedule
 * (its audit row commits with it), delete one, list schedules and a schedule's runs. Answers the
 * body text, or throws the AppError of a 4xx.
 */
export class WorkflowAnswers {
  readonly #backend: WorkflowBackend;
  readonly #cursors: Cursors;
  readonly #envelope: EnvelopeWriter;
  readonly #webhooks: WebhookRules;
  readonly #minInterval: number;

  constructor(backend: WorkflowBackend, cursors: Cursors, envelope: EnvelopeWriter, webhooks: WebhookRules, minIntervalSeconds: number) {
    this.#backend = backend;
    this.#cursors = cursors;
    this.#envelope = envelope;
    this.#webhooks = webhooks;
    this.#minInterval = minIntervalSeconds;
  }

  async answer(t: TenantTarget, route: WorkflowRoute, p: readonly string[], query: Query, body: unknown): Promise<string> {
    switch (route.op) {
      case 'schedule':
        return this.#schedule(t, route, p[0] as string, body);
      case 'unschedule':
        return this.#unschedule(t, route, p[0] as string);
      case 'schedules':
        return this.#schedules(t.tenant, route, query);
      case 'runs':
        return this.#runs(t.tenant, route, p[0] as string, query);
    }
  }

  async #schedule(t: TenantTarget, route: WorkflowRoute, workflow: string, body: unknown): Promise<string> {
    const asked = (body ?? {}) as { interval_seconds?: number; webhook_url?: string | null };
    const interval = asked.interval_seconds;
    if (interval === undefined) throw appError('ERR_VALIDATION_BODY', "body must have the key 'interval_seconds'");
    if (interval < this.#minInterval || interval > MAX_INTERVAL_SECONDS) {
      throw appError('ERR_VALIDATION_BODY', `interval_seconds must be an integer from ${this.#minInterval} to ${MAX_INTERVAL_SECONDS}`);
    }
    let webhookUrl: string | null = null;
    if (asked.webhook_url !== undefined && asked.webhook_url !== null) {
      const checked = this.#webhooks.check(asked.webhook_url);
      if (!checked.ok) throw appError('ERR_WORKFLOW_WEBHOOK_REFUSED', checked.reason);
      webhookUrl = checked.url;
    }
    const webhookSecret = this.#webhooks.newSecret();
    const schedule = { tenant: t.tenant, workflow, intervalSeconds: interval, webhookUrl, webhookSecret };
    await this.#backend.putSchedule(schedule, Date.now(), auditRow(t, route.status));
    return this.#envelope(route, { workflow, interval_seconds: interval, webhook_url: webhookUrl, webhook_secret: webhookSecret });
  }

  async #unschedule(t: TenantTarget, route: WorkflowRoute, workflow: string): Promise<string> {
    if (!(await this.#backend.deleteSchedule(t.tenant, workflow, auditRow(t, route.status)))) {
      throw appError('ERR_WORKFLOW_SCHEDULE_NOT_FOUND', { workflow });
    }
    return this.#envelope(route, { workflow });
  }

  /** Few per client: read whole, sorted here (stored names may be encrypted), paged by name. */
  async #schedules(tenant: TenantId, route: WorkflowRoute, query: Query): Promise<string> {
    const all = await this.#backend.schedules(tenant);
    const byName = new Map<string, ScheduleEntry>(all.map((s) => [s.workflow, s]));
    const names = [...byName.keys()].sort(codePointOrder);
    const after = query.cursor === undefined ? undefined : this.#cursors.open(tenant, route.id, [], query.cursor);
    const page = pageAfter(names, after, query.limit);
    const items = page.items.map((name) => {
      const s = byName.get(name) as ScheduleEntry;
      return { workflow: s.workflow, interval_seconds: s.intervalSeconds, webhook_url: s.webhookUrl, last_run_at: s.lastRunAt };
    });
    const next = page.after === undefined ? undefined : this.#cursors.sign(tenant, route.id, [], page.after);
    return this.#envelope(route, items, next);
  }

  /** Newest first; the cursor holds the id of the last run shown. */
  async #runs(tenant: TenantId, route: WorkflowRoute, workflow: string, query: Query): Promise<string> {
    const bound = [workflow];
    const before = query.cursor === undefined ? undefined : Number(this.#cursors.open(tenant, route.id, bound, query.cursor));
    const want = query.limit ?? MAX_RUNS;
    const runs = await this.#backend.runs(tenant, workflow, before, want + 1);
    if (runs === undefined) throw appError('ERR_WORKFLOW_SCHEDULE_NOT_FOUND', { workflow });
    const cut = runs.length > want;
    const page = cut ? runs.slice(0, want) : runs;
    const last = page[page.length - 1];
    const next = cut && last !== undefined ? this.#cursors.sign(tenant, route.id, bound, String(last.id)) : undefined;
    return this.#envelope(route, page.map(runItem), next);
  }
}

const codePointOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The row a schedule change commits with (the request is audited: it is a POST or DELETE). */
function auditRow(t: TenantTarget, status: number) {
  if (t.audit === undefined) throw new Error('a workflow schedule change is always audited');
  return t.audit.row(status);
}

function runItem(r: RunEntry): object {
  return {
    run_at: r.runAt,
    revision: r.revision,
    users_count: r.usersCount,
    added: r.added,
    removed: r.removed,
    delivery: { status: r.delivery.status, attempts: r.delivery.attempts, last_status: r.delivery.lastStatus },
  };
}
