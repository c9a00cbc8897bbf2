import { eventOf, type LogMessage } from './events.ts';

export { LOG_EVENTS, UNCATALOGUED_EVENT, type LogEvent, type LogMessage } from './events.ts';

/** Structured JSON logs, one object a line on stdout. Levels below the configured one cost a compare. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/**
 * Where the service logs. `msg` is a catalogued message (events.ts): the line carries it and
 * its stable `event`, so a line cannot be logged without one.
 */
export interface Logger {
  debug(msg: LogMessage, fields?: Record<string, unknown>): void;
  info(msg: LogMessage, fields?: Record<string, unknown>): void;
  warn(msg: LogMessage, fields?: Record<string, unknown>): void;
  error(msg: LogMessage, fields?: Record<string, unknown>): void;
  /** Whether lines of `level` are written (so that a caller can skip building them). */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
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

/**
 * A logger writing `{"level","time","event","msg",…base,…fields}` lines. `level`, `time`, `event`
 * and `msg` cannot be overridden by fields; fields that cannot be serialised (a cycle, a bigint)
 * leave a line that says so instead of throwing into the caller.
 */
export function createLogger(level: LogLevel, base: Record<string, unknown> = {}): Logger {
  const min = RANK[level];
  if (min < RANK.silent) guardStdout();
  const write = (lvl: Exclude<LogLevel, 'silent'>, msg: LogMessage, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] < min) return;
    const time = new Date().toISOString();
    const event = eventOf(msg);
    let line: string;
    try {
      const entry: Record<string, unknown> = { level: lvl, time, event, msg, ...base, ...fields };
      entry.level = lvl;
      entry.time = time;
      entry.event = event;
      entry.msg = msg;
      line = JSON.stringify(entry);
    } catch (err) {
      line = JSON.stringify({
        level: lvl,
        time,
        event,
        msg,
        ...base,
        log_error: `fields not serialisable: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
    process.stdout.write(`${line}\n`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    enabled: (lvl) => RANK[lvl] >= min,
  };
}
