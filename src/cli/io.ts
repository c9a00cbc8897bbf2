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
}

export function processIo(): Io {
  return {
    result: (value) => void process.stdout.write(`${JSON.stringify(value)}\n`),
    note: (text) => void process.stderr.write(`${text}\n`),
    progress: (label) => (process.stderr.isTTY === true ? terminalProgress(label) : NOPROGRESS),
    text: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
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
