/**
 * A scenario is data (bench/scenarios/<name>.json): what load to send, to which gateway, over
 * which data set. This file reads one, checks it against the schema (a typo is an error naming the
 * field, never a silent default), and resolves its quick form and its variants into the list of
 * runs the runner measures.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { ROOT } from '../../support/launcher.ts';

/** The scenario files: bench/scenarios/, or a folder of one's own (BENCH_SCENARIOS). */
export const SCENARIOS = process.env.BENCH_SCENARIOS ?? join(ROOT, 'bench', 'scenarios');

export type Route =
  | 'has_permission'
  | 'check'
  | 'dry_run'
  | 'which_users_can'
  | 'user_permissions'
  | 'write'
  | 'authzen_evaluation'
  | 'authzen_evaluations'
  | 'authzen_search_subject';
export const ROUTES: readonly Route[] = [
  'has_permission',
  'check',
  'dry_run',
  'which_users_can',
  'user_permissions',
  'write',
  'authzen_evaluation',
  'authzen_evaluations',
  'authzen_search_subject',
];

export interface DataShape {
  users: number;
  roles: number;
  permissions: number;
  rolesPerUser: number;
  grantsPerRole: [number, number];
  /** Client keys holding this same data set (a real service has many small clients). */
  clients: number;
  /** Users of one extra role holding one extra permission: the which_users_can target. */
  hotHolders: number;
  /** Shape of the bounded Pareto law that picks users, permissions and clients (larger: more skewed). */
  pareto: number;
  seed: number;
  /** Share of the roles' grants and of the users' memberships that carry a window (docs/api.md §12.1); absent: none. */
  windowed?: number;
  /** Share of those windows that are pending (they open hours after the run starts): their edges answer false. */
  pending?: number;
  /**
   * When the windows are laid out from, microseconds since the epoch: set once per run by
   * `generate` (never in a file), so the load generator's processes build the same data set.
   */
  windowsFromUs?: number;
}

export interface GatewaySettings {
  engine: 'uws' | 'node';
  store: 'sqlite' | 'postgresql';
  workers: number;
  /** Gateways over one PostgreSQL database, kept coherent over Redis; the load is spread over all. */
  instances: number;
  /** Serve GET /metrics (on a free port); on for the scenarios that read it. */
  metrics: boolean;
  /** More AUTH_* settings (AUTH_CACHE_MAX_MB, encryption, ...). */
  env: Record<string, string>;
}

export interface RunSettings {
  kind: 'load' | 'hydration' | 'flood' | 'clients' | 'transfer';
  data: DataShape;
  gateway: GatewaySettings;
  /** Relative weights of the routes in the request mix. */
  routes: Partial<Record<Route, number>>;
  /** Share of has_permission probes whose answer is false. */
  denials: number;
  /** Items of one POST /api/check, /access/v1/evaluations or /api/dry-run. */
  checkBatch: number;
  /** `limit` of the which_users_can pages. */
  pageSize: number;
  connections: number;
  durationS: number;
  warmupS: number;
  rounds: number;
  /** Measure the two uWebSockets.js ceilings (minimal and bare) in the same rounds (has_permission only). */
  ceiling: boolean;
  /** After the rounds, a run at 80% of the measured maximum, latency corrected for coordinated omission. */
  fixedRate: boolean;
  /**
   * Requests per second of every round (0: as fast as answered). A steady offered load takes away
   * the confound of batching (a server answering more requests per wake-up spends less per
   * request), so CPU per request compares best between two builds at the same rate.
   */
  rate: number;
  /** Check one response in this many against the model. */
  verifyEvery: number;
  /**
   * The load generator of the flat-out rounds: autocannon (in processes of its own), or wrk where
   * autocannon cannot keep the server busy (`--client wrk`; mixes without writes, one instance).
   * Fixed-rate runs always use autocannon.
   */
  client: 'autocannon' | 'wrk';
  /**
   * Workflow schedules running beside the load, every second, each on one of the data set's
   * permissions (without a webhook): what the scheduler's runs cost the checks.
   */
  schedules: number;
  /** `clients` kind: seconds of the idle CPU measurement after every client is cached (0: none)... */
  idleS: number;
  /** ...taken after this many seconds of quiet. */
  settleS: number;
  /**
   * `clients` kind: rounds of has_permission naming a random cached client on each request
   * against the same load naming one client, interleaved (`rounds` of `durationS`).
   */
  randomClient: boolean;
  /**
   * `transfer` kind: memberships of the client imported then exported (roles a hundredth of them,
   * a few permissions each); the data set (`data`) is the other client, checked at `rate` meanwhile.
   */
  transferMemberships: number;
}

export interface Variant extends Partial<Omit<RunSettings, 'data' | 'gateway'>> {
  label: string;
  data?: Partial<DataShape>;
  gateway?: Partial<GatewaySettings>;
}

export interface ScenarioFile extends Partial<Omit<RunSettings, 'data' | 'gateway'>> {
  title: string;
  /** What real use this models, for bench/README.md and the report. */
  models: string;
  data?: Partial<DataShape>;
  gateway?: Partial<GatewaySettings>;
  /** Runs only with `--full` (bench:full): too long for a default run. */
  fullOnly?: boolean;
  /** Part of `npm run bench -- --quick` without scenario names (the under-90-seconds run). */
  inQuickRun?: boolean;
  /** Read-only: may run against BENCH_TARGET. */
  target?: boolean;
  quick?: Partial<Omit<ScenarioFile, 'title' | 'models' | 'quick'>>;
  variants?: Variant[];
  /** Draw the variants as a scaling chart over this figure of theirs. */
  chart?: { x: 'memberships' | 'connections' };
}

export interface Run {
  scenario: string;
  label: string;
  settings: RunSettings;
}

const DEFAULTS: RunSettings = {
  kind: 'load',
  data: { users: 10_000, roles: 100, permissions: 1_000, rolesPerUser: 3, grantsPerRole: [10, 50], clients: 1, hotHolders: 0, pareto: 1.2, seed: 42 },
  gateway: { engine: 'uws', store: 'sqlite', workers: 1, instances: 1, metrics: false, env: {} },
  routes: { has_permission: 1 },
  denials: 0.2,
  checkBatch: 100,
  pageSize: 1_000,
  connections: 64,
  durationS: 6,
  warmupS: 2,
  rounds: 3,
  ceiling: false,
  fixedRate: false,
  rate: 0,
  verifyEvery: 16,
  client: 'autocannon',
  schedules: 0,
  idleS: 0,
  settleS: 5,
  randomClient: false,
  transferMemberships: 1_000_000,
};

const count = { type: 'integer', minimum: 0 };
const positive = { type: 'integer', minimum: 1 };
const dataSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    users: positive,
    roles: positive,
    permissions: positive,
    rolesPerUser: positive,
    clients: positive,
    hotHolders: count,
    seed: count,
    grantsPerRole: { type: 'array', items: positive, minItems: 2, maxItems: 2 },
    pareto: { type: 'number', exclusiveMinimum: 0 },
    windowed: { type: 'number', minimum: 0, maximum: 1 },
    pending: { type: 'number', minimum: 0, maximum: 1 },
  },
};
const gatewaySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    engine: { enum: ['uws', 'node'] },
    store: { enum: ['sqlite', 'postgresql'] },
    workers: positive,
    instances: positive,
    metrics: { type: 'boolean' },
    env: { type: 'object', additionalProperties: { type: 'string' } },
  },
};
const runProperties = {
  kind: { enum: ['load', 'hydration', 'flood', 'clients', 'transfer'] },
  data: dataSchema,
  gateway: gatewaySchema,
  routes: { type: 'object', additionalProperties: false, properties: Object.fromEntries(ROUTES.map((r) => [r, count])) },
  denials: { type: 'number', minimum: 0, maximum: 0.9 },
  checkBatch: { type: 'integer', minimum: 1, maximum: 1000 },
  pageSize: { type: 'integer', minimum: 1, maximum: 10000 },
  connections: positive,
  durationS: positive,
  warmupS: count,
  rounds: positive,
  verifyEvery: positive,
  client: { enum: ['autocannon', 'wrk'] },
  ceiling: { type: 'boolean' },
  fixedRate: { type: 'boolean' },
  rate: count,
  schedules: { type: 'integer', minimum: 0, maximum: 100 },
  idleS: count,
  settleS: count,
  randomClient: { type: 'boolean' },
  transferMemberships: positive,
};
const variantSchema = { type: 'object', additionalProperties: false, required: ['label'], properties: { label: { type: 'string' }, ...runProperties } };
const fileProperties = {
  ...runProperties,
  fullOnly: { type: 'boolean' },
  inQuickRun: { type: 'boolean' },
  target: { type: 'boolean' },
  variants: { type: 'array', items: variantSchema, minItems: 1 },
  chart: { type: 'object', additionalProperties: false, required: ['x'], properties: { x: { enum: ['memberships', 'connections'] } } },
};
const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'models'],
  properties: {
    title: { type: 'string' },
    models: { type: 'string' },
    ...fileProperties,
    quick: { type: 'object', additionalProperties: false, properties: fileProperties },
  },
};
const validate = new Ajv({ allErrors: true }).compile<ScenarioFile>(schema);

export function scenarioNames(): string[] {
  return readdirSync(SCENARIOS)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5))
    .sort();
}

export function readScenario(name: string): ScenarioFile {
  let text: string;
  try {
    text = readFileSync(join(SCENARIOS, `${name}.json`), 'utf8');
  } catch {
    throw new Error(`no scenario ${name} in ${SCENARIOS} (known: ${scenarioNames().join(', ')})`);
  }
  return parseScenario(name, text);
}

/** A scenario file's text, parsed and checked against the schema; the error names every bad field. */
export function parseScenario(name: string, text: string): ScenarioFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`scenario ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!validate(parsed)) {
    const problems = (validate.errors ?? []).map(
      (e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
    );
    throw new Error(`scenario ${name}: ${problems.join('; ')}`);
  }
  return parsed;
}

type Layer = Partial<Omit<RunSettings, 'data' | 'gateway'>> & { data?: Partial<DataShape>; gateway?: Partial<GatewaySettings> };

function layer(base: RunSettings, over: Layer): RunSettings {
  const { data, gateway, ...rest } = over;
  const picked = Object.fromEntries(Object.entries(rest).filter(([k]) => k in DEFAULTS)) as Partial<RunSettings>;
  return {
    ...base,
    ...picked,
    data: { ...base.data, ...data },
    gateway: { ...base.gateway, ...gateway, env: { ...base.gateway.env, ...gateway?.env } },
  };
}

/** The runs of a scenario: its variants (or itself), the quick overrides applied when `quick`. */
export function resolve(name: string, file: ScenarioFile, quick: boolean): Run[] {
  const { quick: q, variants: fileVariants, ...own } = file;
  const top = quick && q !== undefined ? { ...own, ...q, data: { ...own.data, ...q.data }, gateway: { ...own.gateway, ...q.gateway } } : own;
  const variants = (quick ? q?.variants : undefined) ?? fileVariants;
  const base = layer(DEFAULTS, top);
  if (variants === undefined) return [{ scenario: name, label: name, settings: base }];
  return variants.map((v) => ({ scenario: name, label: v.label, settings: layer(base, v) }));
}

/** Memberships of the data set of one client (the scaling charts' x). */
export const memberships = (d: DataShape): number => d.users * Math.min(d.rolesPerUser, d.roles) + d.hotHolders;
