/**
 * The `transfer` kind (docs/api.md §17): one client's data leaving and coming back, at size.
 *
 * Once per runner and size, a file in the export's format with `transferMemberships` memberships
 * (bench/lib/transfer-file.ts) is written to a temporary directory. Then, `rounds` times, on a
 * fresh gateway holding the data set (`data`) under another client:
 * 1. that client's has_permission at `rate` on `connections`, at rest: its p99;
 * 2. the file POSTed to /api/import, streamed from disk, into a fresh client key, beside the same
 *    load: seconds, lines per second, the server's CPU seconds and the growth of its processes'
 *    summed resident memory (peak minus before, sampled from /proc), the load's p99;
 * 3. GET /api/export of that client, streamed and counted (lines, bytes, a digest of its lines
 *    against the file's): seconds, lines per second, the growth of the worker's resident memory
 *    (peak minus before), the load's p99.
 * The import's answer and the export are checked (counts, revision, the same lines); the goals of
 * the contract (§13.1: a million memberships imported in under 30 s, exported in under 10 s, memory
 * not growing with the client) are reported met or not met; they do not fail the run.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { RbacClient } from '../../src/client/index.ts';
import type { CpuSplit } from './cpus.ts';
import { generate, type Dataset } from './dataset.ts';
import { startGateways, type Target } from './gateway.ts';
import { runLoad, type RunFigures } from './load.ts';
import { goalText, print, splitOf, summarise, type Goal, type RunResult } from './measure.ts';
import { rssBytes, workersOf } from './one-process.ts';
import { sleep } from './procs.ts';
import { buildMix, type Mix } from './requests.ts';
import type { Run } from './scenario.ts';
import { emptyResult } from './special.ts';
import { median } from './stats.ts';
import { dataLines, LineDigest, transferShape, writeTransferFile, type Digest, type TransferShape } from './transfer-file.ts';
import { merge, record } from './verify.ts';

/** The load runs this long before a transfer starts: its connections are open and sending. */
const LEAD_MS = 500;
/** The cap of a load beside a transfer (it stops when the transfer ends; the time limit ends a stuck run). */
const LOAD_CAP_S = 3_600;
const SAMPLE_MS = 50;
const MiB = 1024 * 1024;
/** The contract's goals (§13.1), for a million memberships. */
const GOAL_MEMBERSHIPS = 1_000_000;
const IMPORT_GOAL_S = 30;
const EXPORT_GOAL_S = 10;
const EXPORT_RSS_GOAL_MIB = 64;

interface File {
  path: string;
  shape: TransferShape;
  digest: Digest;
}

const files = new Map<number, File>();

/** The file of `memberships` memberships: written once per size and runner, removed on exit. */
function fileOf(memberships: number): File {
  let file = files.get(memberships);
  if (file !== undefined) return file;
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-transfer-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'client.ndjson');
  const shape = transferShape(memberships);
  const started = performance.now();
  file = { path, shape, digest: writeTransferFile(path, shape) };
  console.log(
    `  wrote the file to import: ${memberships.toLocaleString('en-US')} memberships, ${shape.roles.toLocaleString('en-US')} roles, ` +
      `${(shape.roles * shape.grantsPerRole).toLocaleString('en-US')} grants; ${(file.digest.bytes / MiB).toFixed(1)} MiB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  files.set(memberships, file);
  return file;
}

/** MiB of resident memory grown. */
interface Growth {
  sumMiB: number;
  largestMiB: number;
}

/** Resident bytes of some processes, read every SAMPLE_MS from the first reading until `stop`. */
class RssSampler {
  readonly #pids: number[];
  readonly #first: number[];
  readonly #peak: number[];
  #peakSum: number;
  readonly #timer: NodeJS.Timeout;

  constructor(pids: number[]) {
    this.#pids = pids;
    this.#first = pids.map(read);
    this.#peak = [...this.#first];
    this.#peakSum = sum(this.#first);
    this.#timer = setInterval(() => this.#sample(), SAMPLE_MS);
  }

  #sample(): void {
    const now = this.#pids.map(read);
    now.forEach((b, i) => (this.#peak[i] = Math.max(this.#peak[i] ?? 0, b)));
    this.#peakSum = Math.max(this.#peakSum, sum(now));
  }

  /** The growth of the processes' sum (peak minus first), and the largest growth of one of them. */
  stop(): Growth {
    this.#sample();
    clearInterval(this.#timer);
    const growths = this.#peak.map((p, i) => p - (this.#first[i] ?? 0));
    return { sumMiB: (this.#peakSum - sum(this.#first)) / MiB, largestMiB: Math.max(...growths) / MiB };
  }
}

const sum = (xs: number[]): number => xs.reduce((n, x) => n + x, 0);
const read = (pid: number): number => {
  try {
    return rssBytes(pid);
  } catch {
    return 0; // gone
  }
};

interface Answer {
  status: number;
  body: string;
  seconds: number;
}

/** POST /api/import of the file, streamed from disk with its length. */
async function importFile(baseUrl: string, key: string, file: File): Promise<Answer> {
  const started = performance.now();
  const req = request(`${baseUrl}/api/import?mode=merge`, {
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson', 'content-length': statSync(file.path).size },
  });
  const answered = new Promise<Answer>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), seconds: (performance.now() - started) / 1000 }),
      );
    });
  });
  // A server that answers before the end (413, 415) closes the upload: its answer says why.
  await Promise.all([pipeline(createReadStream(file.path), req).catch(() => undefined), answered]);
  return answered;
}

interface Exported {
  status: number;
  contentType: string;
  header: string;
  digest: Digest;
  /** The body ended as HTTP says a whole body ends (a cut transfer does not). */
  complete: boolean;
  seconds: number;
}

/** GET /api/export, streamed: nothing kept but its header line and the digest of the rest. */
function exportOf(baseUrl: string, key: string): Promise<Exported> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/api/export`, { agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      const digest = new LineDigest();
      let header = '';
      res.on('data', (c: Buffer) => {
        if (!header.includes('\n') && header.length < 4096) header += c.subarray(0, 4096).toString('utf8');
        digest.feed(c);
      });
      // A cut transfer: 'close' follows, without a complete body.
      res.on('error', () => undefined);
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          header: header.split('\n', 1)[0] ?? '',
          digest: digest.digest(),
          complete: res.complete,
          seconds: (performance.now() - started) / 1000,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

interface Ctx {
  run: Run;
  ds: Dataset;
  split: CpuSplit;
  file: File;
  result: RunResult;
  /** Numbers the load runs. */
  runs: number;
}

/** `transfer` while the other client's load runs at the scenario's rate: its value and the load's figures. */
async function besideLoad<T>(c: Ctx, target: Target, mix: Mix, what: string, transfer: () => Promise<T>): Promise<[T, RunFigures]> {
  const s = c.run.settings;
  let release = (): void => undefined;
  const until = new Promise<void>((resolve) => (release = resolve));
  const load = runLoad({ target, mix, connections: s.connections, durationS: LOAD_CAP_S, rate: s.rate, run: c.runs++, split: c.split, until });
  load.catch(() => undefined);
  const outcome = await sleep(LEAD_MS)
    .then(transfer)
    .then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  release();
  const figures = await load;
  if ('error' in outcome) throw outcome.error;
  // The server's CPU went to the transfer too: no per-request figure of the load's own.
  print(`${c.run.label} load`, what, { ...figures, cpuPerOpUs: null }, c.result.failures);
  return [outcome.value, figures];
}

interface Round {
  rest: RunFigures;
  duringImport: RunFigures;
  duringExport: RunFigures;
  importS: number;
  importCpuS: number;
  importRssMiB: number;
  exportS: number;
  exportCpuS: number;
  exportBytes: number;
  exportWorkerRssMiB: number;
}

/** What is wrong with an import's answer, if anything: 200 and the file's counts. */
function importProblem(a: Answer, shape: TransferShape): { problem?: string; revision: number } {
  let data: Record<string, unknown> = {};
  try {
    data = (JSON.parse(a.body) as { data?: Record<string, unknown> }).data ?? {};
  } catch {
    // judged below
  }
  const want = { roles: shape.roles, permissions: shape.roles * shape.grantsPerRole, memberships: shape.memberships, added: dataLines(shape), removed: 0 };
  const got = Object.fromEntries(Object.keys(want).map((k) => [k, data[k]]));
  const ok = a.status === 200 && JSON.stringify(got) === JSON.stringify(want) && typeof data.revision === 'number';
  return { ...(ok ? {} : { problem: `import: HTTP ${a.status} ${a.body.slice(0, 200)}, expected ${JSON.stringify(want)}` }), revision: Number(data.revision) };
}

/** What is wrong with an export of the imported client, if anything: whole, at the import's revision, the file's lines. */
function exportProblem(e: Exported, revision: number, file: File): string | undefined {
  let header: Record<string, unknown> = {};
  try {
    header = JSON.parse(e.header) as Record<string, unknown>;
  } catch {
    // judged below
  }
  const problems = [
    e.status === 200 ? '' : `HTTP ${e.status}`,
    e.complete ? '' : 'cut before its end',
    /^application\/x-ndjson\b/.test(e.contentType) ? '' : `Content-Type ${e.contentType}`,
    header.format === 'rbac-gateway.export' && header.version === 1 && header.revision === revision
      ? ''
      : `header ${e.header.slice(0, 160)}, revision ${revision} expected`,
    e.digest.lines === file.digest.lines ? '' : `${e.digest.lines} lines, the file has ${file.digest.lines}`,
    e.digest.sums.join() === file.digest.sums.join() ? '' : 'not the lines of the file',
  ].filter((p) => p !== '');
  return problems.length === 0 ? undefined : `export: ${problems.join('; ')}`;
}

/** The gateway's processes: each primary and its workers. */
function serverPids(target: Target): { all: number[]; workers: number[] } {
  const primaries = target.primaries ?? [];
  const workers = primaries.flatMap(workersOf);
  return { all: [...primaries, ...workers], workers };
}

/** `go`, with the server's CPU seconds and the resident memory of `processes` (sampled) around it. */
async function framed<T>(target: Target, processes: number[], go: () => Promise<T>): Promise<{ value: T; cpuS: number; rss: Growth }> {
  const cpu0 = target.cpuSeconds() ?? NaN;
  const sampler = new RssSampler(processes);
  let rss: Growth | undefined;
  try {
    const value = await go();
    rss = sampler.stop();
    return { value, cpuS: (target.cpuSeconds() ?? NaN) - cpu0, rss };
  } finally {
    if (rss === undefined) sampler.stop();
  }
}

/** One round on a fresh gateway: the load at rest, the import beside it, the export beside it. */
async function round(c: Ctx, n: number): Promise<Round> {
  const s = c.run.settings;
  const target = await startGateways(c.run.label, s.gateway, c.ds, c.split.server);
  try {
    const other = new RbacClient({ baseUrl: target.baseUrls[0] ?? '', key: target.keys[0] ?? '' });
    const first = await other.hasPermission(c.ds.users[0] ?? '', c.ds.permissions[0] ?? '');
    if (first.status !== 200) throw new Error(`first has_permission: HTTP ${first.status} ${first.error ?? ''}`);
    const mix = buildMix({
      ds: c.ds,
      settings: { ...s, routes: { has_permission: 1 } },
      keys: target.keys,
      pages: [],
      expectation: { strict: true, revision: target.revision, revisionAtLeast: false },
    });
    const base = { target, mix, connections: s.connections, rate: s.rate, split: c.split };
    if (s.warmupS > 0) await runLoad({ ...base, durationS: s.warmupS, run: c.runs++ });
    const rest = await runLoad({ ...base, durationS: s.durationS, run: c.runs++ });
    print(`${c.run.label} load`, 'at rest', rest, c.result.failures);
    const pids = serverPids(target);
    const key = randomUUID();
    const url = target.baseUrls[0] ?? '';
    const [imp, duringImport] = await besideLoad(c, target, mix, 'import', () => framed(target, pids.all, () => importFile(url, key, c.file)));
    const judged = importProblem(imp.value, c.file.shape);
    record(c.result.correctness, judged.problem);
    const [exp, duringExport] = await besideLoad(c, target, mix, 'export', () => framed(target, pids.workers, () => exportOf(url, key)));
    record(c.result.correctness, exportProblem(exp.value, judged.revision, c.file));
    merge(c.result.correctness, mix.tally);
    const lines = dataLines(c.file.shape);
    console.log(
      `    round ${n}: import ${imp.value.seconds.toFixed(2)} s (${Math.round(lines / imp.value.seconds).toLocaleString('en-US')} lines/s, ` +
        `server ${imp.cpuS.toFixed(1)} CPU s, +${imp.rss.sumMiB.toFixed(1)} MiB resident); export ${exp.value.seconds.toFixed(2)} s ` +
        `(${Math.round(exp.value.digest.lines / exp.value.seconds).toLocaleString('en-US')} lines/s, ${(exp.value.digest.bytes / MiB).toFixed(1)} MiB, ` +
        `worker +${exp.rss.largestMiB.toFixed(1)} MiB resident); load p99 ${rest.latency.p99.toFixed(2)} ms at rest, ` +
        `${duringImport.latency.p99.toFixed(2)} ms during the import, ${duringExport.latency.p99.toFixed(2)} ms during the export`,
    );
    return {
      rest,
      duringImport,
      duringExport,
      importS: imp.value.seconds,
      importCpuS: imp.cpuS,
      importRssMiB: imp.rss.sumMiB,
      exportS: exp.value.seconds,
      exportCpuS: exp.cpuS,
      exportBytes: exp.value.digest.bytes,
      exportWorkerRssMiB: exp.rss.largestMiB,
    };
  } finally {
    await target.stop();
  }
}

/** The contract's goals, scaled to the run's size for the times (they are rates); the memory goal is not. */
function goals(memberships: number, importS: number, exportS: number, rssMiB: number): Goal[] {
  const scale = memberships / GOAL_MEMBERSHIPS;
  const scaled = (goalS: number): string => (scale === 1 ? '' : ` (${goalS} s per million, scaled)`);
  const size = memberships.toLocaleString('en-US');
  return [
    { what: `import of ${size} memberships${scaled(IMPORT_GOAL_S)}`, value: importS, unit: 's', limit: IMPORT_GOAL_S * scale },
    { what: `export of ${size} memberships${scaled(EXPORT_GOAL_S)}`, value: exportS, unit: 's', limit: EXPORT_GOAL_S * scale },
    { what: "growth of the worker's resident memory during the export", value: rssMiB, unit: 'MiB', limit: EXPORT_RSS_GOAL_MIB },
  ].map((g) => ({ ...g, met: g.value < g.limit }));
}

export async function measureTransfer(run: Run): Promise<RunResult> {
  const s = run.settings;
  if (!(s.rate > 0)) throw new Error(`${run.label}: the transfer kind needs a rate for the load beside the transfers`);
  const result = emptyResult(run);
  const c: Ctx = { run, ds: generate(s.data), split: splitOf(s), file: fileOf(s.transferMemberships), result, runs: 0 };
  const rounds: Round[] = [];
  for (let n = 1; n <= s.rounds; n++) rounds.push(await round(c, n));
  const m = (f: (r: Round) => number): number => median(rounds.map(f));
  const lines = dataLines(c.file.shape);
  result.rounds = rounds.map((r) => r.rest);
  result.figures = summarise(result.rounds);
  result.extra = {
    transferMemberships: s.transferMemberships,
    transferLines: lines,
    exportMiB: m((r) => r.exportBytes) / MiB,
    importSeconds: m((r) => r.importS),
    importLinesPerS: m((r) => lines / r.importS),
    importServerCpuS: m((r) => r.importCpuS),
    importServerRssGrowthMiB: m((r) => r.importRssMiB),
    exportSeconds: m((r) => r.exportS),
    exportLinesPerS: m((r) => lines / r.exportS),
    exportServerCpuS: m((r) => r.exportCpuS),
    exportWorkerRssGrowthMiB: m((r) => r.exportWorkerRssMiB),
    loadP99AtRestMs: m((r) => r.rest.latency.p99),
    loadP99DuringImportMs: m((r) => r.duringImport.latency.p99),
    loadP99DuringExportMs: m((r) => r.duringExport.latency.p99),
  };
  result.goals = goals(
    s.transferMemberships,
    result.extra.importSeconds ?? NaN,
    result.extra.exportSeconds ?? NaN,
    result.extra.exportWorkerRssGrowthMiB ?? NaN,
  );
  for (const g of result.goals) console.log(`    goal: ${goalText(g)}`);
  if (result.correctness.wrong > 0)
    result.failures.push(
      `${run.label}: ${result.correctness.wrong} wrong answers of ${result.correctness.checked} checked (${result.correctness.examples.slice(0, 3).join('; ')})`,
    );
  return result;
}
