import { loadConfig, type Config } from '../config/index.ts';
import type { OptionSpec, Parsed } from './args.ts';
import type { Io } from './io.ts';

/** One command of the command line: its help, its options, and what it does. */
export interface Command {
  readonly name: string;
  /** One line, for the list of commands. */
  readonly summary: string;
  /** The whole `--help` text: usage, options, settings read, exit codes when they say more. */
  readonly help: string;
  readonly options: OptionSpec;
  /** Throws UsageError or ConfigError (exit 2), MaintenanceError or anything else (exit 1). */
  run(parsed: Parsed, io: Io): Promise<void>;
}

/** The service's settings (docs/operations.md §1), from the environment and config/<NODE_ENV>.json. */
export const settings = (): Config => loadConfig();

/** What every command's help ends with. */
export const EXIT_CODES = 'Exit codes: 0 done, 1 failed (the reason on stderr and in the JSON line), 2 bad usage or settings.';
