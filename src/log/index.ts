import { hostname } from 'node:os';
import { eventOf, type LogMessage } from './events.ts';
import { errorFields } from './errors.ts';

export { LOG_EVENTS, UNCATALOGUED_EVENT, type LogEvent, type LogMessage } from './events.ts';
export { errorFields, type ErrorFields } from './errors.ts';

/** Structured JSON logs, one object a line on stdout. Levels below the configured one cost a compare. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/**
 * A line's `level`: pino's numbers, which pino-pretty, pino-elasticsearch and the other tools of
 * pino's ecosystem read (10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal).
 */
export const LEVEL_NUMBERS = { debug: 20, info: 30, warn: 40, error: 50 } as const;

const RANK: Record<LogLevel, number> = { ...LEVEL_NUMBERS, silent: Number.POSITIVE_INFINITY };

/**
 * Where the service logs. `msg` is a catalogued message (events.ts): the line carries it and
 * its stable `event`, so a line cannot be logged without one. An error goes in the field `err`
 * (an Error, or what was thrown): it is written as `{type, message, stack}` (errors.ts).
 */
export interface Logger {
  debug(msg: LogMessage, fields?: Record<string, unknown>): void;
  info(msg: LogMessage, fields?: Record<string, unknown>): void;
  warn(msg: LogMessage, fields?: Record<string, unknown>): void;
  error(msg: LogMessage, fields?: Record<string, unknown>): void;
  /** Whether lines of `level` are written (so that a caller can skip building them). */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
}

/** The ids of the span a line is written in (W3C trace context, lower-case hex). */
export interface SpanIds {
  readonly traceId: string;
  readonly spanId: string;
}

/** Reads the active span's ids; unset while traces are off, so that a line then costs nothing more. */
let activeSpanIds: (() => SpanIds | undefined) | undefined;

/**
 * Lines written from now on carry `trace_id` and `span_id` when `ids` finds a span active (the
 * traces' side sets it once they start; src/trace/).
 */
export function logSpanIdsFrom(ids: (() => SpanIds | undefined) | undefined): void {
  activeSpanIds = ids;
}

let stdoutGuarded = false;

/**
 * A closed stdout (the log collector went away) must not take the service down: a write to it
 * fails with EPIPE, which unheard would be an uncaught 'error' event. Such lines are lost.
 */
function guardStdout(): void {
  if (stdoutGuarded) return;
  stdoutGuarded = true;
  process.stdout.on('error', () => undefined);
}

/** The fields no caller overrides: what pino writes first, then the catalogue's event and message. */
interface Head {
  level: number;
  time: number;
  pid: number;
  hostname: string;
  event: string;
  msg: string;
}

/** The line of `head`, `base` and `fields` (`err` serialised); a line that says so when they cannot be serialised. */
function lineOf(head: Head, base: Record<string, unknown>, fields: Record<string, unknown> | undefined): string {
  const ids = activeSpanIds?.();
  const traced = ids === undefined ? undefined : { trace_id: ids.traceId, span_id: ids.spanId };
  try {
    const entry: Record<string, unknown> = { ...head, ...base, ...traced, ...fields };
    if (fields !== undefined && fields.err !== undefined) entry.err = errorFields(fields.err);
    return JSON.stringify(Object.assign(entry, head));
  } catch (err) {
    return JSON.stringify({ ...head, ...base, ...traced, log_error: `fields not serialisable: ${err instanceof Error ? err.message : String(err)}` });
  }
}

/**
 * A logger writing `{"level","time","pid","hostname","event","msg",…base,…fields}` lines, the
 * shape of pino's (docs/operations.md §8): `level` a number, `time` epoch milliseconds. The head
 * cannot be overridden by `base` or fields; fields that cannot be serialised (a cycle, a bigint)
 * leave a line that says so instead of throwing into the caller.
 */
export function createLogger(level: LogLevel, base: Record<string, unknown> = {}): Logger {
  const min = RANK[level];
  if (min < RANK.silent) guardStdout();
  const host = hostname();
  const write = (lvl: Exclude<LogLevel, 'silent'>, msg: LogMessage, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] < min) return;
    const head: Head = { level: LEVEL_NUMBERS[lvl], time: Date.now(), pid: process.pid, hostname: host, event: eventOf(msg), msg };
    process.stdout.write(`${lineOf(head, base, fields)}\n`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    enabled: (lvl) => RANK[lvl] >= min,
  };
}
