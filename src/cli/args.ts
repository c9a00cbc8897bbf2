import { UsageError } from './io.ts';

/** The options a command takes: `--name value` (string) or `--name` (flag). */
export type OptionSpec = Readonly<Record<string, 'string' | 'flag'>>;

export interface Parsed {
  readonly strings: ReadonlyMap<string, string>;
  readonly flags: ReadonlySet<string>;
}

/**
 * Parses `--name value`, `--name=value` and `--name` against `spec`; anything else (an unknown
 * option, a positional argument, a value missing) is a {@link UsageError}. No option takes a
 * secret: settings that are secrets come from the environment only.
 */
export function parseOptions(args: readonly string[], spec: OptionSpec): Parsed {
  const strings = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const m = /^--([a-z][a-z-]*)(?:=(.*))?$/s.exec(arg);
    if (m === null) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const name = m[1] as string;
    const kind = spec[name];
    if (kind === undefined) throw new UsageError(`unknown option --${name}`);
    if (kind === 'flag') {
      if (m[2] !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.add(name);
      continue;
    }
    const value = m[2] ?? args[++i];
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    strings.set(name, value);
  }
  return { strings, flags };
}

/** The value of a string option that must be given. */
export function required(parsed: Parsed, name: string): string {
  const value = parsed.strings.get(name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}
