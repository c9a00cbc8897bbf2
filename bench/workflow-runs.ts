/**
 * Step 1 of `npm run bench:workflows` on one gateway: how long a run of the schedule takes.
 *
 * - First run: the schedule is created (interval 1 s, webhook to the bench's receiver) and
 *   `GET /api/workflow/runs/{workflow}?limit=1` is polled every 25 ms until it lists the run:
 *   the time from the 201 to that listing, to the run's `run_at` (when the scheduler started it),
 *   to the arrival of its delivery (and the body's size), and its duration from the primary's
 *   `rbac_workflow_run_duration_seconds` (sum and count before and after: exactly one run).
 * - Steady runs, which list no change: first at an unchanged revision (the store then skips
 *   reading the holders), then with the ticker on (workflow-ticker.ts: the revision moves twice a
 *   second, nobody's answer changes, so every run reads all the holders again); then change runs:
 *   right after a run is seen, a batch of membership changes goes out over HTTP (removals and
 *   additions, 16 in flight), so that it lands between two runs, and the bench waits for a run
 *   that started after the last write was acknowledged. Meanwhile `GET /api/workflow/schedules`
 *   is polled every 50 ms (a small answer, unlike a run listing 100,000 users); each time
 *   `last_run_at` moves, the metric is scraped, so each run gets its own duration (the delta of
 *   sum over the delta of count: one run in all but rare cases).
 * - Then every run of the schedule is listed and checked against the model, and the deliveries
 *   against their runs (workflow-check.ts); `run_at` gaps are taken from that listing.
 */
import type { RbacClient, WorkflowRun } from '../src/client/index.ts';
import { sleep } from './procs.ts';
import { checkLeftover, checkRuns, matchDeliveries } from './workflow-check.ts';
import { allRuns, epochMs, latestRun, schedule, scrapeScheduler, type SchedulerMetrics } from './workflow-gateway.ts';
import type { MembershipWrite, WorkflowModel } from './workflow-model.ts';
import type { Delivery, Receiver } from './workflow-receiver.ts';
import { startTicker } from './workflow-ticker.ts';

const FIRST_POLL_MS = 25;
const WATCH_POLL_MS = 50;
const BATCH_IN_FLIGHT = 16;
/** Steady runs awaited after each batch's covering run. */
const AFTER_BATCH = 2;

export interface StepContext {
  client: RbacClient;
  metricsUrl: string;
  receiver: Receiver;
  model: WorkflowModel;
  failures: string[];
  audit: RunsAudit;
  /** Steady runs to time at an unchanged revision, then again with the ticker on. */
  steadyRuns: number;
  /** The ticker's period (workflow-ticker.ts); 0: none. */
  tickMs: number;
  batches: number;
  /** Removals and additions per batch (each). */
  batchSize: number;
}

/** Lists and checks the schedule's runs (each once), and matches every delivery with its run. */
export class RunsAudit {
  runs = 0;
  retried = 0;
  deliveries = 0;
  matched = 0;
  readonly #pending: Delivery[] = [];
  readonly #checked = new Set<string>();
  #taken = 0;
  readonly #c: Pick<StepContext, 'client' | 'receiver' | 'model' | 'failures'>;

  constructor(c: Pick<StepContext, 'client' | 'receiver' | 'model' | 'failures'>) {
    this.#c = c;
    // The receiver outlives one gateway: deliveries before this one's are not its own.
    this.#taken = c.receiver.deliveries().length;
  }

  /** Every run of the current schedule, oldest first; those not checked before are checked now. */
  async check(label: string): Promise<WorkflowRun[]> {
    const runs = await allRuns(this.#c.client);
    const t = checkRuns(runs, (r) => !this.#checked.has(r.run_at), this.#c.model, this.#c.failures, label);
    for (const r of runs) this.#checked.add(r.run_at);
    this.runs += t.runs;
    this.retried += t.retried;
    const fresh = this.#c.receiver.deliveries().slice(this.#taken);
    this.#taken += fresh.length;
    this.deliveries += fresh.length;
    this.#pending.push(...fresh);
    this.matched += matchDeliveries(this.#pending, runs, this.#c.failures);
    return runs;
  }

  /** Deliveries never matched: their run was deleted before it was listed. */
  finish(): number {
    checkLeftover(this.#pending, this.#c.model, this.#c.failures);
    return this.#pending.length;
  }
}

/** A run as the watcher saw it: when, and its duration from the metric. */
export interface SeenRun {
  runAt: string;
  seenAtMs: number;
  /** Runs the metric counted since the previous one seen (1 but in rare cases). */
  counted: number;
  /** Mean duration of those runs, ms. */
  runMs: number;
}

/**
 * The metric once it counts a run more than `m`: the run's commit (which `last_run_at` shows) comes
 * before the scheduler records its duration, after the hop back from its store thread. Gives up
 * after a second (then the run's duration is left to the next one's scrape).
 */
async function afterNextRun(url: string, m: SchedulerMetrics): Promise<SchedulerMetrics> {
  const deadline = Date.now() + 1_000;
  for (;;) {
    const m1 = await scrapeScheduler(url);
    if (m1.durationCount > m.durationCount || Date.now() > deadline) return m1;
    await sleep(10);
  }
}

/** Polls the schedule's `last_run_at`; on each new run, scrapes the metric. */
class RunWatcher {
  readonly seen: SeenRun[] = [];
  #stopped = false;
  #loop: Promise<void> = Promise.resolve();

  async start(c: StepContext): Promise<void> {
    let last = (await c.client.schedules()).data?.[0]?.last_run_at ?? null;
    let m = await scrapeScheduler(c.metricsUrl);
    this.#loop = (async () => {
      while (!this.#stopped) {
        await sleep(WATCH_POLL_MS);
        const now = (await c.client.schedules()).data?.[0]?.last_run_at ?? null;
        if (now === null || now === last) continue;
        const m1 = await afterNextRun(c.metricsUrl, m);
        const counted = m1.durationCount - m.durationCount;
        this.seen.push({ runAt: now, seenAtMs: Date.now(), counted, runMs: counted > 0 ? (1000 * (m1.durationSum - m.durationSum)) / counted : NaN });
        [last, m] = [now, m1];
      }
    })();
  }

  /** Waits until `n` runs were seen in all; throws after `timeoutMs`. */
  async count(n: number, timeoutMs: number): Promise<void> {
    await this.#until(() => this.seen.length >= n, timeoutMs);
  }

  /** Waits for a run that started after `epochMs`, and returns it. */
  async startedAfter(epoch: number, timeoutMs: number): Promise<SeenRun> {
    const hit = (): SeenRun | undefined => this.seen.find((s) => epochMs(s.runAt) > epoch);
    await this.#until(() => hit() !== undefined, timeoutMs);
    return hit() as SeenRun;
  }

  async #until(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`the expected workflow run did not come within ${timeoutMs} ms (runs seen: ${this.seen.length})`);
      await sleep(10);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
  }
}

export interface FirstRun {
  /** From the 201 to the first listing of the run. */
  listedAfterMs: number;
  /** From the 201 to the run's `run_at` (the scheduler's tick). */
  startedAfterMs: number;
  /** The run's duration from the metric. */
  runMs: number;
  /** From the 201 to the delivery's arrival, and its body. */
  deliveredAfterMs: number;
  deliveryBytes: number;
  usersCount: number;
  added: number;
}

export interface Batch {
  writes: number;
  /** From the first write sent to the last acknowledged. */
  seconds: number;
  fromRevision: number;
  toRevision: number;
  /** Runs whose revision range holds some of the batch's writes (1: it landed between two runs). */
  spreadOver: number;
}

/**
 * What a run had to do, from the listing: `unchanged`: the revision had not moved since the run
 * before (the store skips reading the holders); `recomputed`: it had (the ticker), and the
 * holders were read again, with no change to list; `change`: it lists some.
 */
export type RunKind = 'unchanged' | 'recomputed' | 'change';

export interface RunTimes {
  first: FirstRun;
  /** Every run the watcher saw after the first, with its kind. */
  seen: Array<SeenRun & { kind: RunKind }>;
  batches: Batch[];
  /** Seconds between consecutive `run_at` of the schedule's listing (after the first run). */
  gapsS: number[];
}

/**
 * Creates the schedule and times its first run: its listing, and (polled alongside, every 50 ms,
 * since the next run may be made before the 100,000-name listing has arrived) the metric's first
 * count above the one before. Throws when either does not come within 60 s.
 */
async function firstRun(c: StepContext): Promise<FirstRun> {
  const m0 = await scrapeScheduler(c.metricsUrl);
  const delivered0 = c.receiver.deliveries().length;
  const secret = await schedule(c.client, 1, c.receiver.url);
  const createdAt = Date.now();
  c.receiver.trust(secret);
  const deadline = createdAt + 60_000;
  const listing = (async (): Promise<[WorkflowRun, number]> => {
    for (let run = await latestRun(c.client); ; run = await latestRun(c.client)) {
      if (run !== undefined) return [run, Date.now()];
      if (Date.now() > deadline) throw new Error('no first run listed within 60 s of creating the schedule');
      await sleep(FIRST_POLL_MS);
    }
  })();
  const metric = (async (): Promise<SchedulerMetrics> => {
    for (let m = await scrapeScheduler(c.metricsUrl); ; m = await scrapeScheduler(c.metricsUrl)) {
      if (m.durationCount > m0.durationCount) return m;
      if (Date.now() > deadline) throw new Error('the metric counted no run within 60 s of creating the schedule');
      await sleep(WATCH_POLL_MS);
    }
  })();
  const [[run, listedAt], m1] = await Promise.all([listing, metric]);
  if (m1.durationCount - m0.durationCount !== 1) c.failures.push(`first run: the metric counted ${m1.durationCount - m0.durationCount} runs at once, expected 1`);
  const delivery = await waitDelivery(c.receiver, delivered0, run.run_at, 30_000);
  return {
    listedAfterMs: listedAt - createdAt,
    startedAfterMs: epochMs(run.run_at) - createdAt,
    runMs: (1000 * (m1.durationSum - m0.durationSum)) / (m1.durationCount - m0.durationCount),
    deliveredAfterMs: delivery.at - createdAt,
    deliveryBytes: delivery.bytes,
    usersCount: run.users_count,
    added: run.added.length,
  };
}

/** The delivery of the run at `runAt`: a 100,000-name body may arrive after the next run's small one. */
async function waitDelivery(receiver: Receiver, from: number, runAt: string, timeoutMs: number): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = receiver.deliveries().slice(from).find((x) => x.runAt === runAt);
    if (d !== undefined) return d;
    if (Date.now() > deadline) throw new Error(`no webhook delivery of the run at ${runAt} within ${timeoutMs} ms (${receiver.problems()[0] ?? 'no problem reported'})`);
    await sleep(10);
  }
}

/** One write of a batch over HTTP; its revision, or throws on anything but the contract's answer. */
async function send(client: RbacClient, w: MembershipWrite): Promise<number> {
  const res = w.op === 'add' ? await client.addMember(w.user, w.role) : await client.removeMember(w.user, w.role);
  const want = w.op === 'add' ? 201 : 200;
  if (res.status !== want || res.data === undefined) throw new Error(`${w.op} ${w.user} in ${w.role}: ${res.status} ${res.error ?? ''}`);
  return res.data.revision;
}

/** Sends the writes, BATCH_IN_FLIGHT at a time, and records each in the model as acknowledged. */
async function sendBatch(c: StepContext, writes: MembershipWrite[]): Promise<Batch> {
  const started = performance.now();
  const revisions: number[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let w = writes[next++]; w !== undefined; w = writes[next++]) {
      const revision = await send(c.client, w);
      c.model.commit(w, revision);
      revisions.push(revision);
    }
  };
  await Promise.all(Array.from({ length: BATCH_IN_FLIGHT }, lane));
  return { writes: writes.length, seconds: (performance.now() - started) / 1000, fromRevision: Math.min(...revisions), toRevision: Math.max(...revisions), spreadOver: 0 };
}

/** Runs whose diff covers part of the batch's revisions: a run at revision r covers (previous run's revision, r]. */
function spreadOver(b: Batch, runs: readonly WorkflowRun[]): number {
  let n = 0;
  for (let i = 1; i < runs.length; i++) {
    const [lo, hi] = [(runs[i - 1] as WorkflowRun).revision, (runs[i] as WorkflowRun).revision];
    if (hi >= b.fromRevision && lo < b.toRevision) n++;
  }
  return n;
}

function kindOf(runs: readonly WorkflowRun[], i: number): RunKind {
  const [run, prev] = [runs[i], runs[i - 1]];
  if (run !== undefined && run.added.length + run.removed.length > 0) return 'change';
  return run !== undefined && prev !== undefined && run.revision !== prev.revision ? 'recomputed' : 'unchanged';
}

/** Step 1 on one gateway (see the header). The schedule keeps running afterwards. */
export async function measureRunTimes(c: StepContext): Promise<RunTimes> {
  const first = await firstRun(c);
  console.log(
    `  first run: listed ${first.listedAfterMs} ms after the 201 (started after ${first.startedAfterMs} ms, ran ${first.runMs.toFixed(0)} ms by the metric), ` +
      `${first.usersCount} users, ${first.added} added; delivery arrived after ${first.deliveredAfterMs} ms, ${(first.deliveryBytes / 1e6).toFixed(2)} MB`,
  );
  const watcher = new RunWatcher();
  await watcher.start(c);
  const batches: Batch[] = [];
  try {
    await watcher.count(c.steadyRuns, (c.steadyRuns + 10) * 1000);
    const ticker = startTicker(c.client, c.model, c.tickMs, c.failures);
    try {
      await watcher.count(watcher.seen.length + (c.tickMs > 0 ? c.steadyRuns : 0), (c.steadyRuns + 10) * 1000);
    } finally {
      await ticker.stop();
    }
    for (let b = 0; b < c.batches; b++) {
      // Right after a run: the batch then has most of an interval to land in.
      await watcher.count(watcher.seen.length + 1, 10_000);
      const batch = await sendBatch(c, c.model.batch(c.batchSize));
      batches.push(batch);
      // The first run that started after the last acknowledgement holds the whole batch; then steady runs again.
      const covering = await watcher.startedAfter(Date.now(), 15_000);
      await watcher.count(watcher.seen.indexOf(covering) + 1 + AFTER_BATCH, 10_000 + AFTER_BATCH * 1000);
      console.log(`  batch ${b + 1}: ${batch.writes} writes in ${batch.seconds.toFixed(2)} s (revisions ${batch.fromRevision}..${batch.toRevision}), run ${covering.runAt} took ${Number.isFinite(covering.runMs) ? covering.runMs.toFixed(0) : '-'} ms`);
    }
  } finally {
    await watcher.stop();
  }
  await sleep(1_500); // the last runs' deliveries
  const runs = await c.audit.check('step 1');
  for (const b of batches) b.spreadOver = spreadOver(b, runs);
  const index = new Map(runs.map((r, i) => [r.run_at, i]));
  const seen = watcher.seen.map((s) => ({ ...s, kind: kindOf(runs, index.get(s.runAt) ?? -1) }));
  const gapsS = runs.slice(2).map((r, i) => (epochMs(r.run_at) - epochMs((runs[i + 1] as WorkflowRun).run_at)) / 1000);
  return { first, seen, batches, gapsS };
}

