/**
 * wrk as the load generator of a flat-out run (`--client wrk`): a C load generator that keeps a
 * server core busy where autocannon, on the same cores, cannot. It sends the same request lists
 * as autocannon would (written to a file, cycled per thread by bench/lib/wrk-cycle.lua) and
 * reports requests, non-2xx answers, socket errors and latency percentiles (its own histogram,
 * µs). It checks no answer itself: bench/lib/load.ts checks a sample of the same requests through
 * the usual verifier before and after each wrk run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../support/launcher.ts';
import type { Drive, LoadSpec } from './load.ts';
import { reapedChildrenSeconds, spawnChild } from './procs.ts';

interface WrkResult {
  requests: number;
  durationUs: number;
  non2xx: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** The request lists of every connection, one request a line, as wrk-cycle.lua reads them. */
function requestFile(spec: LoadSpec, file: string): void {
  const lines: string[] = [];
  for (let conn = 0; conn < spec.connections; conn++) {
    for (const r of spec.mix.requests(conn, spec.run)) {
      const headers = Object.entries(r.headers ?? {}).flatMap(([k, v]) => [k, String(v)]);
      const body = typeof r.body === 'string' ? r.body : '';
      const fields = [String(conn), r.method ?? 'GET', r.path ?? '/', body, ...headers];
      if (fields.some((f) => /[\t\n]/.test(f))) throw new Error(`wrk: a request holds a tab or a newline: ${fields.join(' ').slice(0, 120)}`);
      lines.push(fields.join('\t'));
    }
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
}

/** One flat-out run of wrk against the target's (single) instance. */
export async function driveWrk(spec: LoadSpec): Promise<Drive> {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-bench-wrk-'));
  const threads = Math.max(1, Math.min(spec.split.clientProcs, spec.connections));
  try {
    const file = join(dir, 'requests.tsv');
    requestFile(spec, file);
    const args = ['-t', String(threads), '-c', String(spec.connections), '-d', `${spec.durationS}s`, '--timeout', '10s'];
    args.push('-s', join(ROOT, 'bench', 'lib', 'wrk-cycle.lua'), spec.target.baseUrls[0] ?? '', '--', file, String(threads));
    const cpu0 = reapedChildrenSeconds();
    const child = spawnChild('wrk', 'wrk', args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, cpus: spec.split.client });
    const code = await child.exited;
    const clientSeconds = reapedChildrenSeconds() - cpu0;
    const line = /WRK_RESULT (\{.*\})/.exec(child.output())?.[1];
    if (code !== 0 || line === undefined) throw new Error(`wrk exited with code ${code} without its result:\n${child.output().slice(-2000)}`);
    const r = JSON.parse(line) as WrkResult;
    const errors = r.connect + r.read + r.write + r.timeout;
    const kinds = Object.entries({ connect: r.connect, read: r.read, write: r.write, timeout: r.timeout }).filter(([, v]) => v > 0);
    return {
      requests: r.requests,
      durationS: r.durationUs / 1e6,
      latency: { p50: r.p50 / 1000, p99: r.p99 / 1000, p999: r.p999 / 1000, max: r.max / 1000 },
      non2xx: r.non2xx,
      errors,
      errorKinds: Object.fromEntries(kinds.map(([k, v]) => [`wrk ${k} errors`, v])),
      clientSeconds,
      generator: 'wrk',
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
