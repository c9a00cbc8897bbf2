import cluster from 'node:cluster';
import { ConfigError, loadConfig, redactedConfig, type Config } from './config/index.ts';
import { createLogger } from './log/index.ts';
import { runPrimary } from './primary/index.ts';
import { runWorkerProcess } from './worker/index.ts';

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  if (cluster.isPrimary) process.stderr.write(`rbac-gateway: configuration error: ${err.message}\n`);
  process.exit(2);
}

if (cluster.isPrimary && process.argv.includes('--check-config')) {
  // Validated above without opening a database, a socket or a file of the service's own.
  process.stdout.write(`${JSON.stringify({ config: redactedConfig(config) })}\n`);
  process.exit(0);
}

if (cluster.isPrimary) {
  const log = createLogger(config.AUTH_LOG_LEVEL, { pid: process.pid, role: 'primary' });
  process.exit(await runPrimary(config, log));
} else {
  const log = createLogger(config.AUTH_LOG_LEVEL, { pid: process.pid, role: 'worker', worker: cluster.worker?.id });
  await runWorkerProcess(config, log);
}
