import { performance } from 'node:perf_hooks';

/** Event-loop utilisation above which a worker counts as busy. */
const BUSY_UTILISATION = 0.5;
/** Reads per write from which a busy worker's load counts as checks. */
const READS_PER_WRITE = 10;

/** What a worker did over one sampling period. */
export interface LoadSample {
  /** The share of the period its event loop spent working (0..1). */
  readonly utilisation: number;
  readonly reads: number;
  readonly writes: number;
}

/**
 * Whether checks are what keeps the worker busy: its loop worked more than half the period, and
 * reads outnumbered writes ten to one. Only then is holding writes back worth their latency; a
 * loop kept busy by writes themselves would only lose write throughput by it.
 */
export function checksBusy(s: LoadSample): boolean {
  return s.utilisation > BUSY_UTILISATION && s.reads >= READS_PER_WRITE * s.writes;
}

/** Cumulative counts of the requests a worker served. */
export interface RequestCounters {
  reads(): number;
  writes(): number;
}

/** Judges {@link checksBusy} every `periodMs` in the background, from the loop's utilisation and the counters. */
export function loadGauge(counters: RequestCounters, periodMs: number): { readonly checksBusy: boolean; stop(): void } {
  let last = performance.eventLoopUtilization();
  let reads = counters.reads();
  let writes = counters.writes();
  let busy = false;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const r = counters.reads();
    const w = counters.writes();
    busy = checksBusy({ utilisation: performance.eventLoopUtilization(now, last).utilization, reads: r - reads, writes: w - writes });
    last = now;
    reads = r;
    writes = w;
  }, periodMs);
  timer.unref();
  return {
    get checksBusy() {
      return busy;
    },
    stop: () => clearInterval(timer),
  };
}
