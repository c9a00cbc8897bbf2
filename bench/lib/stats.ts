/** Latency percentiles, medians across rounds, and the printed table. */

/** Milliseconds. */
export interface Latency {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** Every latency of a run (ms), kept whole so percentiles are exact. */
export class Samples {
  #data = new Float64Array(1 << 20);
  #n = 0;

  add(ms: number): void {
    if (this.#n === this.#data.length) {
      const bigger = new Float64Array(this.#data.length * 2);
      bigger.set(this.#data);
      this.#data = bigger;
    }
    this.#data[this.#n++] = ms;
  }

  latency(): Latency {
    const sorted = this.#data.slice(0, this.#n).sort();
    const at = (q: number): number => (sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN));
    return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: at(1) };
  }
}

export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export interface Summary {
  rps: number;
  latency: Latency;
  /** CPU used by the server's process tree, in cores (1 = one core busy all the time). */
  serverCores: number;
  /** CPU used by the load generator, in cores. */
  loadCores: number;
  /**
   * Busy CPU of the machine beyond those two, in cores: the kernel's share of loopback TCP, and
   * other work on the machine (a high figure means a noisy measurement).
   */
  otherCores: number;
}

export function summarise(runs: Summary[]): Summary {
  const m = (f: (s: Summary) => number): number => median(runs.map(f));
  return {
    rps: m((s) => s.rps),
    latency: { p50: m((s) => s.latency.p50), p99: m((s) => s.latency.p99), p999: m((s) => s.latency.p999), max: m((s) => s.latency.max) },
    serverCores: m((s) => s.serverCores),
    loadCores: m((s) => s.loadCores),
    otherCores: m((s) => s.otherCores),
  };
}

export const fmtMs = (ms: number): string => (Number.isFinite(ms) ? (ms < 10 ? ms.toFixed(2) : ms.toFixed(1)) : '-');

/** A plain text table; the first row is the header. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row, r) => {
      const line = row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
      return r === 0 ? `${line}\n${'-'.repeat(line.length)}` : line;
    })
    .join('\n');
}

export function summaryRow(tool: string, target: string, s: Summary): string[] {
  return [
    `${tool} ${target}`,
    Math.round(s.rps).toLocaleString('en-US'),
    fmtMs(s.latency.p50),
    fmtMs(s.latency.p99),
    fmtMs(s.latency.p999),
    s.serverCores.toFixed(2),
    s.loadCores.toFixed(2),
    s.otherCores.toFixed(2),
  ];
}

export const SUMMARY_HEADER = ['run (median)', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'server cpu', 'load cpu', 'other cpu'];
