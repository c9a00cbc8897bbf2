import { BUILD } from '../../config/build.ts';
import { chooseEngine } from '../../http/engine/index.ts';
import { EXIT_CODES, settings, type Command } from '../command.ts';

/** GET /version's body, as a service started with these settings would answer it. */
export const version: Command = {
  name: 'version',
  summary: "print the service's name, version, Node.js and HTTP engine (GET /version's body)",
  options: {},
  help: `Usage: rbac-gateway version

Prints one line {"name","version","node","engine"}: what GET /version answers on a service
started here with these settings (the engine is the one AUTH_HTTP_ENGINE picks on this machine).
${EXIT_CODES}`,
  async run(_parsed, io) {
    const engine = chooseEngine(settings().AUTH_HTTP_ENGINE).name;
    io.result({ name: BUILD.name, version: BUILD.version, node: process.version, engine });
  },
};
