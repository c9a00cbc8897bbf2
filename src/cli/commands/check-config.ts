import { redactedConfig } from '../../config/index.ts';
import { EXIT_CODES, settings, type Command } from '../command.ts';

/** `npm start -- --check-config`, from the command line: the same line, the same exit codes. */
export const checkConfig: Command = {
  name: 'check-config',
  summary: 'validate the settings and print the effective configuration, secrets redacted',
  options: {},
  help: `Usage: rbac-gateway check-config

Validates the settings (environment variables, and config/<NODE_ENV>.json) as the service does at
start-up, and prints the effective configuration as one line {"config":{…}}, every secret shown as
"[redacted]". Opens no database, socket or file of the service's. ${EXIT_CODES}`,
  async run(_parsed, io) {
    io.result({ config: redactedConfig(settings()) });
  },
};
