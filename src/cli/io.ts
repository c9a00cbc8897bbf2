import cliProgress from 'cli-progress';
import type { Progress } from '../store/index.ts';

/** Exit codes of every command (docs/operations.md §10): success, a failure, bad usage or settings. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Bad usage: an unknown command or option, a missing or conflicting one (exit code 2). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Where a command writes: its result lines on stdout, its progress and messages on stderr. */
export interface Io {
  /** One result, as one line of JSON on stdout. */
  result(value: unknown): void;
  /** A line for the operator on stderr. */
  note(text: string): void;
  /** A progress bar on stderr when stderr is a terminal; nothing otherwise. */
  progress(label: string): Progress;
  /** Plain text on stdout (help). */
  text(text: string): void;
  /**
   * Standard output, for a command whose data goes there (`export --out -`): from then on result
   * lines, errors included, go to stderr so that stdout holds the data alone.
   */
  claimStdout(): NodeJS.WritableStream;
  /** A transfer's progress bar on stderr when it is a terminal: bytes and lines, the rate, time left when the size is known. */
  transfer(label: string, totalBytes: number | undefined): TransferProgress;
}

/** How far a transfer got: running totals. */
export interface TransferProgress {
  update(bytes: number, lines: number): void;
  end(): void;
}

export function processIo(): Io {
  let results: NodeJS.WritableStream = process.stdout;
  const tty = (): boolean => process.stderr.isTTY === true;
  return {
    result: (value) => void results.write(`${JSON.stringify(value)}\n`),
    note: (text) => void process.stderr.write(`${text}\n`),
    progress: (label) => (tty() ? terminalProgress(label) : NOPROGRESS),
    text: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    claimStdout() {
      results = process.stderr;
      return process.stdout;
    },
    transfer: (label, totalBytes) => (tty() ? terminalTransfer(label, totalBytes) : NO_TRANSFER),
  };
}

const NOPROGRESS: Progress = { begin: () => undefined, update: () => undefined, end: () => undefined };

/** Counts, rate and time left, redrawn at most 10 times a second; one bar per phase. */
function terminalProgress(label: string): Progress {
  let bar: cliProgress.SingleBar | undefined;
  let started = 0;
  const stop = (): void => {
    bar?.stop();
    bar = undefined;
  };
  return {
    begin(total, unit) {
      stop();
      started = performance.now();
      bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {rate} ${unit}/s | {eta_formatted} left`,
          fps: 10,
          etaBuffer: 50,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(total, 0, { rate: 0 });
    },
    update(done) {
      const seconds = (performance.now() - started) / 1000;
      bar?.update(done, { rate: seconds > 0 ? Math.round(done / seconds) : 0 });
    },
    end: stop,
  };
}

const NO_TRANSFER: TransferProgress = { update: () => undefined, end: () => undefined };

/** 1536 → "1.5 KiB": sizes as an operator reads them. */
export function byteSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let [value, unit] = [bytes, 0];
  while (value >= 1024 && unit < units.length - 1) [value, unit] = [value / 1024, unit + 1];
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit] as string}`;
}

/**
 * Bytes drive the bar (its percentage and time left need a known size); lines and the rate ride
 * along as payload. Without a size (an export, stdin) there is no bar: counts, rate and time spent.
 */
function terminalTransfer(label: string, totalBytes: number | undefined): TransferProgress {
  const known = totalBytes !== undefined && totalBytes > 0;
  const format = known
    ? `${label} [{bar}] {percentage}% | {size} of {total_size} | {lines} lines | {rate}/s | {eta_formatted} left`
    : `${label} | {size} | {lines} lines | {rate}/s | {duration_formatted}`;
  const bar = new cliProgress.SingleBar({ stream: process.stderr, format, fps: 10, etaBuffer: 50, hideCursor: true }, cliProgress.Presets.shades_classic);
  const started = performance.now();
  const payload = (bytes: number, lines: number): Record<string, string | number> => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? byteSize(Math.round(bytes / seconds)) : byteSize(0);
    return { size: byteSize(bytes), total_size: byteSize(totalBytes ?? 0), lines, rate };
  };
  bar.start(known ? totalBytes : 0, 0, payload(0, 0));
  let stopped = false;
  return {
    update: (bytes, lines) => bar.update(bytes, payload(bytes, lines)),
    end() {
      if (!stopped) bar.stop();
      stopped = true;
    },
  };
}
