/**
 * The data of `npm run bench:workflows` and the model that says what every workflow run must
 * list. One workflow (a permission) held by `users` users through `roles` roles: every role is
 * granted the workflow and a few other permissions, every user is in exactly one role (users
 * spread evenly). Because each user holds the workflow through one membership, every membership
 * write flips one user's answer, so the model only has to remember which user flipped at which
 * revision to give the holders, their count and the diff between any two revisions exactly.
 */
import type { Change } from '../src/authz/changes.ts';
import { prng, probes, type Dataset, type Probe } from './dataset.ts';

/** The workflow of the bench: a permission name that no role of dataset.ts is granted. */
export const WORKFLOW = 'bench.workflow';
/** Granted beside the workflow to every workflow role: a role is more than the workflow. */
const OTHER_PERMISSIONS = ['bench.report:read', 'bench.report:export', 'bench.ledger:read'];
/**
 * A role without members whose grant of TICK_PERMISSION the bench flips back and forth: each flip
 * moves the tenant's revision and changes nobody's answer, so the next run must read every holder
 * again (a run at an unchanged revision need not) and still lists no change.
 */
export const TICK_ROLE = 'wf-tick-role';
export const TICK_PERMISSION = 'bench.tick';
/** Strides through the holders when picking users to remove, so that removals spread over every role. */
const REMOVAL_STRIDE = 7919;

export interface WorkflowShape {
  users: number;
  roles: number;
}

/** One membership write of a batch of changes. */
export interface MembershipWrite {
  op: 'add' | 'remove';
  user: string;
  role: string;
}

/** A diff as a run lists it: users sorted by code point (the names are ASCII: JavaScript's order). */
export interface Diff {
  added: string[];
  removed: string[];
}

const pad = (i: number, width: number): string => String(i).padStart(width, '0');

export class WorkflowModel {
  readonly shape: WorkflowShape;
  readonly roles: string[];
  /** The holders once seeded, in index order (which is their sorted order). */
  readonly initial: string[];
  /** Revision of the tenant once seeded (the probe data set's writes and the workflow's). */
  baseRevision = 0;
  readonly #roleOf = new Map<string, string>();
  /** user → the revisions at which its answer flipped, ascending. */
  readonly #flips = new Map<string, number[]>();
  #lastRevision = 0;
  #removals = 0;
  /** Whether TICK_ROLE holds TICK_PERMISSION now. */
  tickGranted = false;
  #batches = 0;

  constructor(shape: WorkflowShape) {
    this.shape = shape;
    this.roles = Array.from({ length: shape.roles }, (_, i) => `wf-role-${pad(i, 4)}`);
    this.initial = Array.from({ length: shape.users }, (_, i) => `wf-user-${pad(i, 6)}@example.com`);
    // Round-robin: the same number of users per role, and the roles interleaved in sorted order.
    this.initial.forEach((user, i) => this.#roleOf.set(user, this.roles[i % shape.roles] as string));
  }

  /** The writes that build the workflow's data: roles, their grants, then the memberships. */
  changes(): Change[] {
    const out: Change[] = this.roles.map((role) => ({ op: 'role.create', role, description: `Workflow role ${role}` }));
    out.push({ op: 'role.create', role: TICK_ROLE, description: 'Flipped by the bench to move the revision' });
    for (const role of this.roles) {
      for (const permission of [WORKFLOW, ...OTHER_PERMISSIONS]) out.push({ op: 'permission.grant', role, permission });
    }
    for (const user of this.initial) out.push({ op: 'membership.add', user, role: this.#roleOf.get(user) as string });
    return out;
  }

  /** The tenant's revision as far as the model knows (the last committed write). */
  get revision(): number {
    return Math.max(this.baseRevision, this.#lastRevision);
  }

  /** Whether `user` held the workflow at revision `rev`. */
  heldAt(user: string, rev: number): boolean {
    let held = rev >= this.baseRevision && this.#isInitial(user);
    for (const r of this.#flips.get(user) ?? []) if (r <= rev) held = !held;
    return held;
  }

  /** Every holder at `rev`, sorted: what the first run of a schedule lists as `added`. */
  holdersAt(rev: number): string[] {
    const out = this.initial.filter((u) => this.heldAt(u, rev));
    for (const user of this.#flips.keys()) if (!this.#isInitial(user) && this.heldAt(user, rev)) out.push(user);
    return out.sort();
  }

  /** How many users held the workflow at `rev`: a run's `users_count`. */
  countAt(rev: number): number {
    const seeded = rev >= this.baseRevision;
    let n = seeded ? this.initial.length : 0;
    for (const user of this.#flips.keys()) {
      const [first, now] = [seeded && this.#isInitial(user), this.heldAt(user, rev)];
      if (now !== first) n += now ? 1 : -1;
    }
    return n;
  }

  /** Who gained and who lost the workflow between two runs, at revisions `from` < `to`. */
  diff(from: number, to: number): Diff {
    const added: string[] = [];
    const removed: string[] = [];
    for (const [user, revs] of this.#flips) {
      if (!revs.some((r) => r > from && r <= to)) continue;
      const [was, is] = [this.heldAt(user, from), this.heldAt(user, to)];
      if (!was && is) added.push(user);
      if (was && !is) removed.push(user);
    }
    return { added: added.sort(), removed: removed.sort() };
  }

  /**
   * The next batch of changes: `n` holders removed from their role (they lose the workflow) and
   * `n` new users added to a role (they gain it). Nothing is recorded until {@link commit}.
   */
  batch(n: number): MembershipWrite[] {
    const b = ++this.#batches;
    const out: MembershipWrite[] = [];
    const picked = new Set<string>();
    for (let k = 0; k < n; k++) {
      const user = this.#nextRemoval(picked);
      picked.add(user);
      out.push({ op: 'remove', user, role: this.#roleOf.get(user) as string });
    }
    for (let k = 0; k < n; k++) {
      const user = `wf-new-${pad(b, 2)}-${pad(k, 4)}@example.com`;
      out.push({ op: 'add', user, role: this.roles[(k * 37 + b) % this.roles.length] as string });
    }
    return out;
  }

  /** Records a write the gateway committed at `revision`; throws when it would not flip the user's answer (a model error). */
  commit(w: MembershipWrite, revision: number): void {
    const held = this.heldAt(w.user, this.revision);
    if (held !== (w.op === 'remove')) throw new Error(`model: ${w.op} of ${w.user} would not change who holds ${WORKFLOW}`);
    const revs = this.#flips.get(w.user) ?? [];
    revs.push(revision);
    revs.sort((a, b) => a - b);
    this.#flips.set(w.user, revs);
    if (w.op === 'add') this.#roleOf.set(w.user, w.role);
    this.#lastRevision = Math.max(this.#lastRevision, revision);
  }

  /** A seeded holder neither removed yet nor in `picked`. */
  #nextRemoval(picked: ReadonlySet<string>): string {
    const n = this.initial.length;
    let i = (this.#removals++ * REMOVAL_STRIDE) % n;
    for (let tries = 0; tries < n; tries++, i = (i + 1) % n) {
      const user = this.initial[i] as string;
      if (!this.#flips.has(user) && !picked.has(user)) return user;
    }
    throw new Error('model: no holder left to remove');
  }

  /** Records a committed write that changes nobody's answer (a tick). */
  noteWrite(revision: number): void {
    this.#lastRevision = Math.max(this.#lastRevision, revision);
  }

  #isInitial(user: string): boolean {
    return user.startsWith('wf-user-');
  }

  /** Probes of the workflow's users at the model's revision: the workflow and the other permissions, held or not. */
  probes(count: number, seed: number): Probe[] {
    const rand = prng(seed);
    const rev = this.revision;
    const touched = [...this.#flips.keys()];
    const out: Probe[] = [];
    for (let i = 0; i < count; i++) {
      // One in four about a user whose answer changed during the run: the model's diff is then in the answers too.
      const pool = i % 4 === 3 && touched.length > 0 ? touched : this.initial;
      const user = pool[Math.floor(rand() * pool.length)] as string;
      const permission = i % 2 === 0 ? WORKFLOW : (OTHER_PERMISSIONS[i % OTHER_PERMISSIONS.length] as string);
      out.push({ user, permission, expected: this.heldAt(user, rev) });
    }
    return out;
  }
}

/** The probe data set (dataset.ts) as the writes that build it: roles, then grants, then memberships. */
export function datasetChanges(ds: Dataset): Change[] {
  const out: Change[] = ds.roles.map((role, i) => ({ op: 'role.create', role, description: `Role ${i} of the benchmark` }));
  ds.grants.forEach((perms, r) => perms.forEach((p) => out.push({ op: 'permission.grant', role: ds.roles[r] ?? '', permission: ds.permissions[p] ?? '' })));
  ds.memberships.forEach((roles, u) => roles.forEach((r) => out.push({ op: 'membership.add', user: ds.users[u] ?? '', role: ds.roles[r] ?? '' })));
  return out;
}

/**
 * `count` has_permission probes of one tenant: the probe data set's (dataset.ts, seven in eight)
 * and the workflow's users (one in eight), interleaved, each with the model's answer.
 */
export function mixedProbes(ds: Dataset, model: WorkflowModel, count: number, seed: number): Probe[] {
  const wf = model.probes(Math.ceil(count / 8), seed + 101);
  const base = probes(ds, count - wf.length, seed);
  const out: Probe[] = [];
  for (let i = 0, w = 0, b = 0; out.length < count; i++) {
    const next = i % 8 === 7 ? wf[w++] : base[b++];
    if (next !== undefined) out.push(next);
  }
  return out;
}
