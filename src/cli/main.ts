#!/usr/bin/env node
// The operator's command line, `npx rbac-gateway <command>` (the package's bin; docs/operations.md
// §10). One file per command under commands/; this file only dispatches and maps failures to
// exit codes: 0 done, 1 failed, 2 bad usage or settings.
import { ConfigError } from '../config/index.ts';
import { EngineUnavailable } from '../http/engine/index.ts';
import { parseOptions } from './args.ts';
import type { Command } from './command.ts';
import { backup } from './commands/backup.ts';
import { checkConfig } from './commands/check-config.ts';
import { exportCommand } from './commands/export.ts';
import { importCommand } from './commands/import.ts';
import { restore } from './commands/restore.ts';
import { rotateEncryptionKey } from './commands/rotate-encryption-key.ts';
import { version } from './commands/version.ts';
import { EXIT, processIo, UsageError, type Io } from './io.ts';
import { RemoteError } from './remote.ts';

/**
 * Every command, in the order `--help` lists them: `export` and `import` are clients of a running
 * service's HTTP API (docs/api.md §17); `backup`, `restore` and `rotate-encryption-key` work on
 * the database itself.
 */
const COMMANDS: readonly Command[] = [checkConfig, version, exportCommand, importCommand, backup, restore, rotateEncryptionKey];

const USAGE = `Usage: rbac-gateway <command> [options]
       rbac-gateway <command> --help

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(24)}${c.summary}`).join('\n')}

Settings come from the environment, as the service's (docs/operations.md §1); secrets are never
taken from arguments. Each result is one line of JSON on stdout (on stderr when stdout carries
the data, as export's does by default); a progress bar is drawn on stderr when it is a terminal. Exit codes: 0 done, 1 failed, 2 bad usage or settings.`;

const wantsHelp = (args: readonly string[]): boolean => args.includes('--help') || args.includes('-h');

/** Runs one command line; resolves with its exit code. */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.text(USAGE);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  try {
    if (command === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
    if (wantsHelp(args)) {
      io.text(command.help);
      return EXIT.ok;
    }
    await command.run(parseOptions(args, command.options), io);
    return EXIT.ok;
  } catch (err) {
    const code = exitCodeOf(err);
    const message = err instanceof Error ? err.message : String(err);
    const hint = err instanceof UsageError ? ` (see rbac-gateway ${command === undefined ? '' : `${command.name} `}--help)` : '';
    io.note(`rbac-gateway ${command?.name ?? name}: ${message}${hint}`);
    const status = err instanceof RemoteError ? { status: err.status } : {};
    io.result({ error: { command: command?.name ?? name, message, exit_code: code, ...status } });
    return code;
  }
}

/** Bad usage or settings: 2. Anything else, a refusal (MaintenanceError) or a failure on the way: 1. */
function exitCodeOf(err: unknown): number {
  return err instanceof UsageError || err instanceof ConfigError || err instanceof EngineUnavailable ? EXIT.usage : EXIT.failure;
}

process.exitCode = await runCli(process.argv.slice(2), processIo());
