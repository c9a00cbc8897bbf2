/**
 * An error as a log line writes it, in the `err` field: the shape of pino's standard error
 * serialiser, which pino-pretty and log stores know. `code` is the catalogued code
 * (ERR_<AREA>_<WHAT>) or a system one (ECONNREFUSED); `cause` the error it wraps, written the same way.
 */
export interface ErrorFields {
  readonly type: string;
  readonly message: string;
  readonly stack?: string;
  readonly code?: string;
  readonly cause?: ErrorFields;
}

/** How deep a chain of causes is followed: a cycle or a long chain must not make a line huge. */
const MAX_CAUSES = 3;

/**
 * What was thrown, as the `err` field of a line. An Error keeps its type, message, stack and code;
 * a string (an error's message that crossed a process as text) is a message; anything else is
 * its text.
 */
export function errorFields(thrown: unknown, depth = 0): ErrorFields {
  if (!(thrown instanceof Error)) return { type: typeof thrown === 'string' ? 'Error' : typeof thrown, message: String(thrown) };
  const code = (thrown as { code?: unknown }).code;
  const cause = depth < MAX_CAUSES && thrown.cause !== undefined ? errorFields(thrown.cause, depth + 1) : undefined;
  return {
    type: thrown.name === 'Error' ? thrown.constructor.name : thrown.name,
    message: thrown.message,
    ...(thrown.stack === undefined ? {} : { stack: thrown.stack }),
    ...(typeof code === 'string' ? { code } : {}),
    ...(cause === undefined ? {} : { cause }),
  };
}
